"""Shortfall-price rules (spec section 10): what they compute, and how they are refused."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairshare import RoundProblem
from fairshare.errors import InvalidInputError
from fairshare.policies import get_policy
from fairshare.priority import JobHistory
from fairshare.shortfall_price import FinishTimePrice, NoPrice, price_rule, price_rule_from_options


def _round(n):
    return RoundProblem.from_dict({"gpus": {"A": 2}, "jobs": [
        {"id": f"j{i}", "scale": 1, "throughput": {"A": 1.0}} for i in range(n)]})


@given(st.lists(st.floats(1.0, 1e6), min_size=1, max_size=12), st.lists(st.floats(0.1, 10.0), min_size=12,
                                                                         max_size=12))
def test_unclipped_prices_have_geometric_mean_one_and_order_inverse_to_ideal_time(work, tfair):
    n = len(work)
    tf = np.array(tfair[:n])
    f = FinishTimePrice(clip=(1e-12, 1e12)).prices(_round(n), JobHistory(np.array(work)), tf)
    assert np.exp(np.log(f).mean()) == pytest.approx(1.0, rel=1e-9)
    ideal = np.array(work) / tf
    order = np.argsort(ideal, kind="stable")
    assert (np.diff(f[order]) <= 1e-9 * f[order][:-1]).all()  # longer fair time, lower price


@given(st.lists(st.floats(1.0, 1e6), min_size=1, max_size=12))
def test_prices_stay_in_the_clip(work):
    n = len(work)
    f = FinishTimePrice(clip=(0.5, 2.0)).prices(_round(n), JobHistory(np.array(work)), np.ones(n))
    assert ((f >= 0.5) & (f <= 2.0)).all()


def test_unknown_work_gets_one_and_remaining_basis_ignores_done_work():
    p = _round(3)
    state = JobHistory(np.array([100.0, np.inf, 400.0]), done_iterations=np.array([300.0, 0.0, 0.0]))
    total = FinishTimePrice().prices(p, state, np.ones(3))
    assert total.tolist() == pytest.approx([1.0, 1.0, 1.0])  # 400 s and 400 s of total work
    remaining = FinishTimePrice(basis="remaining").prices(p, state, np.ones(3))
    assert remaining.tolist() == pytest.approx([2.0, 1.0, 0.5])
    assert NoPrice().prices(p, state, np.ones(3)).tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"exponent": -1}, "shortfall_price_exponent"), ({"clip": (0, 2)}, "shortfall_price_clip"),
    ({"clip": (3, 2)}, "shortfall_price_clip"), ({"clip": "x"}, "shortfall_price_clip"),
    ({"basis": "done"}, "shortfall_price_basis")])
def test_bad_rule_options_are_refused(kwargs, field):
    with pytest.raises(InvalidInputError, match=f"`{field}`"):
        FinishTimePrice(**kwargs)


def test_rule_lookup():
    assert isinstance(price_rule(None), NoPrice)
    assert price_rule("finish-time", exponent=0.5).exponent == 0.5
    assert price_rule_from_options({"shortfall_price": "finish-time", "shortfall_price_clip": [0.1, 10]}).clip == (
        0.1, 10.0)
    with pytest.raises(InvalidInputError, match="unknown rule"):
        price_rule("fastest")
    with pytest.raises(InvalidInputError, match="takes no options"):
        price_rule("none", exponent=2)
    with pytest.raises(InvalidInputError, match="a shortfall-price rule must return finite values > 0"):
        price_rule(lambda p, s, t: np.zeros(p.num_jobs)).prices(_round(2), JobHistory(np.ones(2)), np.ones(2))


def test_policy_applies_the_rule_to_the_round():
    policy = get_policy("fairshare", shortfall_price="finish-time", priority="none", mode="exact")
    assert isinstance(policy._price_rule, FinishTimePrice)
    with pytest.raises(InvalidInputError, match="shortfall_price"):
        get_policy("fairshare", shortfall_price="bogus")
