"""Tests of fairshare.validators: each violation is caught on a hand-built bad allocation."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given

from fairshare import allocate
from fairshare.allocation import Allocation, Placement
from fairshare.cli import example_round_text
from fairshare.formulation import build_model
from fairshare.problem import RoundProblem
from fairshare.testing.strategies import round_problems
from fairshare.validators import allocation_violations, placement_violations

SPEC_ROUND = json.loads(example_round_text())  # the round of spec section 6, bundled
PROBLEM = RoundProblem.from_dict(SPEC_ROUND)
GOOD = allocate(PROBLEM, mode="exact")


def with_placements(*placements: Placement, throughput: list[float] | None = None) -> Allocation:
    """The exact answer of the spec round with its placements replaced (and optionally its throughputs)."""
    changes: dict = {"placements": tuple(placements)}
    if throughput is not None:
        changes["jobs"] = with_jobs(throughput=np.array(throughput)).jobs
    return dataclasses.replace(GOOD, **changes)


def with_jobs(**changes: np.ndarray) -> Allocation:
    """The exact answer of the spec round with some of its per-job results replaced."""
    return dataclasses.replace(GOOD, jobs=dataclasses.replace(GOOD.jobs, **changes))


def test_valid_allocations_have_no_violation():
    for mode in ("exact", "lp", "fast"):
        assert allocation_violations(PROBLEM, allocate(PROBLEM, mode=mode)) == []


@given(round_problems())
def test_solver_output_is_always_valid(problem):
    for mode in ("exact", "lp", "fast"):
        assert allocation_violations(problem, allocate(problem, mode=mode)) == []


# (case id, bad placements, throughput each job then gets (so that only the intended check fires), message)
BAD = [
    ("over-capacity",
     [Placement(("resnet18-1",), "K80", 1), Placement(("lm-2",), "K80", 1), Placement(("transformer-3",), "K80", 1)],
     [7.1, 17.1, 1.8, 0.0], "type 'K80': 3 GPUs used of 2"),
    ("over-capacity-gang",
     [Placement(("resnet50-4",), "P100", 2), Placement(("lm-2",), "P100", 1)],
     [0.0, 58.2, 0.0, 4.7], "type 'P100': 3 GPUs used of 2"),
    ("job-twice",
     [Placement(("transformer-3",), "V100", 1), Placement(("transformer-3",), "K80", 1)],
     [0.0, 0.0, 10.4, 0.0], "job 'transformer-3' placed 2 times"),
    ("job-alone-and-in-pair",
     [Placement(("resnet18-1", "lm-2"), "V100", 1), Placement(("lm-2",), "P100", 1)],
     [15.2, 99.2, 0.0, 0.0], "job 'lm-2' placed 2 times"),
    ("gang-too-small",
     [Placement(("resnet50-4",), "P100", 1)], [0.0, 0.0, 0.0, 4.7], "gang of ('resnet50-4',) not whole: 1 GPUs"),
    ("gang-too-big",
     [Placement(("lm-2",), "P100", 2)], [0.0, 58.2, 0.0, 0.0], "gang of ('lm-2',) not whole: 2 GPUs for scale 1"),
    ("not-runnable-missing",
     [Placement(("resnet50-4",), "K80", 2)], [0.0, 0.0, 0.0, 0.0], "job 'resnet50-4' placed on 'K80' where it"),
    ("not-candidate-pair",
     [Placement(("resnet18-1", "transformer-3"), "V100", 1)], [0.0, 0.0, 0.0, 0.0],
     "('resnet18-1', 'transformer-3') co-located on 'V100' but not a listed candidate"),
    ("candidate-on-wrong-type",
     [Placement(("resnet18-1", "lm-2"), "P100", 1)], [0.0, 0.0, 0.0, 0.0],
     "('resnet18-1', 'lm-2') co-located on 'P100' but not a listed candidate"),
    ("three-jobs",
     [Placement(("resnet18-1", "lm-2", "transformer-3"), "V100", 1)], [0.0, 0.0, 0.0, 0.0], "placement of 3 jobs"),
    ("throughput-not-matching",
     [Placement(("lm-2",), "V100", 1)], [0.0, 58.2, 0.0, 0.0], "reported throughputs do not match the placements"),
]


@pytest.mark.parametrize(("placements", "tau", "message"), [pytest.param(p, t, m, id=i) for i, p, t, m in BAD])
def test_each_violation_is_caught(placements, tau, message):
    found = allocation_violations(PROBLEM, with_placements(*placements, throughput=tau))
    assert any(message in v for v in found), found


def test_only_the_intended_violation_fires():
    found = allocation_violations(PROBLEM, with_placements(Placement(("transformer-3",), "V100", 1),
                                                           Placement(("transformer-3",), "K80", 1),
                                                           throughput=[0.0, 0.0, 10.4, 0.0]))
    assert found == ["job 'transformer-3' placed 2 times"]


def test_lp_shares_may_add_up_to_one_but_not_more():
    ok = with_placements(Placement(("lm-2",), "V100", 1, 0.5), Placement(("lm-2",), "K80", 1, 0.5),
                         throughput=[0.0, 0.5 * 64.7 + 0.5 * 17.1, 0.0, 0.0])
    assert allocation_violations(PROBLEM, ok) == []
    bad = with_placements(Placement(("lm-2",), "V100", 1, 0.75), Placement(("lm-2",), "K80", 1, 0.5),
                          throughput=[0.0, 0.75 * 64.7 + 0.5 * 17.1, 0.0, 0.0])
    assert allocation_violations(PROBLEM, bad) == ["job 'lm-2' placed 1.25 times"]


def test_negative_deficit_or_shortfall_is_caught():
    nd = GOOD.jobs.next_deficit.copy()
    nd[0] = -0.1
    assert "negative deficit or shortfall" in allocation_violations(PROBLEM, with_jobs(next_deficit=nd))
    js = GOOD.jobs.job_shortfall.copy()
    js[1] = -1e-3
    bad = with_jobs(job_shortfall=js)
    assert "negative deficit or shortfall" in allocation_violations(PROBLEM, bad)


def test_inconsistent_next_deficit_is_caught():
    nd = GOOD.jobs.next_deficit.copy()
    nd[2] = 5.0  # transformer-3 got rho = 1.66 > need 1.4: its next deficit must be 0
    assert allocation_violations(PROBLEM, with_jobs(next_deficit=nd)) != []


def test_unknown_gpu_type_or_job_is_a_violation():
    bad_type = with_placements(Placement(("lm-2",), "A100", 1), throughput=[0.0, 0.0, 0.0, 0.0])
    bad_job = with_placements(Placement(("bert",), "V100", 1), throughput=[0.0, 0.0, 0.0, 0.0])
    assert allocation_violations(PROBLEM, bad_type) != []
    assert allocation_violations(PROBLEM, bad_job) != []


# ---------------------------------------------------------------- column-level checks
MODEL = build_model(PROBLEM)
C = MODEL.columns


def column(job: int, gpu: int, pair: bool = False) -> int:
    return int(np.flatnonzero((C.job_a == job) & (C.gpu == gpu) & (C.is_pair == pair))[0])


def test_placement_violations_on_columns():
    good = np.zeros(C.num)
    good[[column(2, 0), column(3, 1), column(0, 0, pair=True)]] = 1.0
    assert placement_violations(MODEL, good) == []

    twice = good.copy()
    twice[column(2, 2)] = 1.0
    assert placement_violations(MODEL, twice) == ["job 'transformer-3' is in 2 placements"]

    in_pair_and_alone = good.copy()
    in_pair_and_alone[column(1, 2)] = 1.0
    assert placement_violations(MODEL, in_pair_and_alone) == ["job 'lm-2' is in 2 placements"]

    over = np.zeros(C.num)
    over[[column(0, 2), column(1, 2), column(2, 2)]] = 1.0
    assert placement_violations(MODEL, over) == ["type 'K80': 3 GPUs used of 2"]

    frac = np.zeros(C.num)
    frac[column(1, 0)] = 0.5
    assert placement_violations(MODEL, frac) == ["column values not integral"]
    assert placement_violations(MODEL, frac, integral=False) == []

    out_of_range = np.zeros(C.num)
    out_of_range[column(1, 0)] = 1.5
    assert "column values outside [0, 1]" in placement_violations(MODEL, out_of_range, integral=False)

    assert placement_violations(MODEL, np.zeros(3)) == [f"expected {C.num} column values, got shape (3,)"]
