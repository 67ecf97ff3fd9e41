"""The exception hierarchy: what each error is, and that errors survive a trip through a worker process."""

from __future__ import annotations

import pickle

import pytest

from fairshare.errors import FairshareError, InvalidInputError, PolicyError, SolverError


def test_hierarchy():
    assert issubclass(InvalidInputError, ValueError) and issubclass(InvalidInputError, FairshareError)
    assert issubclass(SolverError, RuntimeError) and issubclass(SolverError, FairshareError)
    assert issubclass(PolicyError, RuntimeError) and issubclass(PolicyError, FairshareError)
    assert not issubclass(PolicyError, ValueError)  # a policy bug is not bad input


def test_invalid_input_message_names_field_and_value():
    e = InvalidInputError("jobs[3].weight", -1.0, "must be finite and > 0")
    assert str(e) == "`jobs[3].weight` = -1.0: must be finite and > 0"
    assert (e.field, e.value, e.reason) == ("jobs[3].weight", -1.0, "must be finite and > 0")


@pytest.mark.parametrize("error", [InvalidInputError("gpus.V100", "x", "must be an integer"),
                                   SolverError("HiGHS failed"), PolicyError("policy 'x' placed a job twice")])
def test_errors_pickle_round_trip(error):
    # compare and sweeps run simulations in worker processes; their errors come back pickled
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error) and str(back) == str(error)
    if isinstance(error, InvalidInputError):
        assert (back.field, back.value, back.reason) == (error.field, error.value, error.reason)
