"""``exact`` without a time limit: which HiGHS options its MILP gets, and that they change no optimum."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import fairshare.methods.exact
from fairshare import allocate
from fairshare.formulation import build_model
from fairshare.methods.exact import DEADLINE_HIGHS_OPTIONS
from fairshare.problem import RoundProblem
from fairshare.solvers import solve_lp
from fairshare.testing.random_rounds import random_round
from fairshare.validators import allocation_violations


def _fractional(n: int, seed: int) -> RoundProblem:
    """``random_round(n, seed)`` with about 30 % of its one-GPU jobs asking for part of a GPU (no pairs)."""
    p = random_round(n, seed=seed)
    rng = np.random.default_rng(seed + 77)
    mask = (rng.random(n) < 0.3) & (p.scale == 1)
    share = rng.choice([0.1, 0.25, 0.3, 0.5, 0.7], n)
    keep = ~mask[p.pair_jobs].any(axis=1)
    return p.replace(scale=np.where(mask, share, p.scale).astype(np.float64), pair_jobs=p.pair_jobs[keep],
                     pair_gpu=p.pair_gpu[keep], pair_throughput=p.pair_throughput[keep])


def _milp_options(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Record the HiGHS options of every MILP ``exact`` solves (the solves themselves run)."""
    seen: list[Any] = []

    def spy(lp: Any, **kw: Any) -> Any:
        if kw.get("integer"):
            seen.append(kw.get("extra_options"))
        return solve_lp(lp, **kw)

    monkeypatch.setattr(fairshare.methods.exact, "solve_lp", spy)
    return seen


def test_integer_round_without_limit_gets_the_deadline_options(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _milp_options(monkeypatch)
    a = allocate(random_round(48, seed=1), mode="exact")
    assert seen == [DEADLINE_HIGHS_OPTIONS] and str(a.status) == "optimal"


def test_fractional_round_without_limit_gets_highs_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _milp_options(monkeypatch)
    p = _fractional(24, seed=2)
    assert p.has_fractional
    a = allocate(p, mode="exact")
    assert seen == [None] and str(a.status) == "optimal"
    assert allocation_violations(p, a) == []


@pytest.mark.parametrize("n, seed", [(32, 0), (64, 3), (128, 5)])
def test_options_change_no_optimum(n: int, seed: int) -> None:
    """The MILP of an integer round has the same optimum with HiGHS's defaults and with the deadline options."""
    p = random_round(n, seed=seed)
    model = build_model(p)
    lp = model.tightened_milp(model.tightened_lp())
    default = solve_lp(lp, integer=True, mip_rel_gap=1e-9)
    a = allocate(p, mode="exact", mip_rel_gap=1e-9)
    assert str(a.status) == "optimal"
    assert a.values.objective - model.obj_null == pytest.approx(default.objective, rel=1e-7, abs=1e-9)
