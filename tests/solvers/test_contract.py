"""The solver contract: backends as data (name, features), options and solve methods that ask the data, and the
incremental LP reached through the contract."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from fairshare import SolveOptions, allocate
from fairshare.errors import InvalidInputError
from fairshare.formulation import LinearProgram
from fairshare.solvers import BACKENDS, Backend, Feature, IncrementalLP, backend, solve_lp
from fairshare.testing.reference import REFERENCE_ROUNDS


def test_every_backend_is_an_option_value_and_an_unknown_one_is_refused():
    for name in BACKENDS:
        assert backend(name).name == name
        assert SolveOptions(backend=name).backend == name
    with pytest.raises(InvalidInputError) as err:
        SolveOptions(backend="gurobi")
    assert err.value.field == "backend" and "'highs', 'pyomo'" in str(err.value)


def test_highs_has_every_feature_and_pyomo_only_the_reference_model():
    assert BACKENDS["highs"].features == frozenset(Feature)
    assert not BACKENDS["pyomo"].supports(Feature.ARRAY_MODEL)
    assert not BACKENDS["pyomo"].supports("incremental")
    with pytest.raises(ValueError):
        BACKENDS["highs"].supports("telepathy")


@pytest.mark.parametrize(("option", "value", "feature"),
                         [("relaxation", "tightened", Feature.ARRAY_MODEL),
                          ("lp_algorithm", "ipm", Feature.LP_ALGORITHM)])
def test_options_refuse_what_the_backend_lacks_and_ask_the_table(monkeypatch, option, value, feature):
    opts = SolveOptions(backend="pyomo", **{option: value})
    with pytest.raises(InvalidInputError) as err:
        opts.for_mode("lp")
    assert err.value.field == option
    # the refusal comes from the feature table, not from the backend's name
    monkeypatch.setitem(BACKENDS, "pyomo", dataclasses.replace(BACKENDS["pyomo"],
                                                               features=BACKENDS["pyomo"].features | {feature}))
    assert opts.for_mode("lp") is opts


def test_a_backend_without_the_array_model_is_solved_through_the_reference_model(monkeypatch):
    doc = REFERENCE_ROUNDS[0].document
    ref = allocate(doc, mode="lp", options={"backend": "pyomo"})
    arrays = allocate(doc, mode="lp")
    assert ref.report.relaxation == "section3"
    assert ref.values.objective == pytest.approx(arrays.values.objective, abs=1e-6)
    # give HiGHS's entry the pyomo backend's features: the array path is no longer taken
    monkeypatch.setitem(BACKENDS, "highs", Backend("highs", "test", BACKENDS["pyomo"].features))
    assert allocate(doc, mode="lp").report.relaxation == "section3"


@settings(max_examples=15)
@given(st.integers(2, 12), st.integers(1, 6), st.integers(0, 2**31 - 1))
def test_incremental_lp_of_the_contract_equals_a_cold_solve_after_adding_columns(n, extra, seed):
    rng = np.random.default_rng(seed)
    rows = 3

    def lp(cols: int, cost: np.ndarray, a: np.ndarray) -> LinearProgram:
        return LinearProgram(cost, sp.csc_matrix(a), np.full(rows, -np.inf), np.ones(rows), np.zeros(cols),
                             np.ones(cols), cols)

    a = rng.uniform(0, 1, (rows, n + extra))
    cost = rng.uniform(0, 1, n + extra)
    inc = IncrementalLP(lp(n, cost[:n], a[:, :n]))
    first = inc.run()
    assert first.optimal and first.objective == pytest.approx(solve_lp(lp(n, cost[:n], a[:, :n])).objective)
    inc.add_columns(cost[n:], sp.csc_matrix(a[:, n:]))
    again = inc.run()
    cold = solve_lp(lp(n + extra, cost, a))
    assert again.optimal and again.objective == pytest.approx(cold.objective, abs=1e-9)
