"""Every reference round (fairshare.testing.reference) through every valid (mode, backend) combination.

The optimum of each reference round is first checked by brute force over all integer placements, computed
here from the round document alone (spec sections 2 and 3, without the library's parser, fair share or
model). Then: ``exact`` reaches it (1e-6 relative), ``fast`` never beats it, every ``lp`` relaxation is never
below it, and every answer passes the library's feasibility validator.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from fairshare import allocate
from fairshare.errors import InvalidInputError
from fairshare.testing.reference import REFERENCE_ROUNDS, ReferenceRound, reference_round
from fairshare.validators import allocation_violations

ROUND_NAMES = [r.name for r in REFERENCE_ROUNDS]

# (mode, options) of every valid solve path
SOLVE_PATHS: list[tuple[str, dict[str, Any]]] = [
    ("exact", {}),
    ("exact", {"backend": "pyomo"}),
    ("lp", {"relaxation": "section3"}),
    ("lp", {"relaxation": "tightened"}),
    ("lp", {"backend": "pyomo"}),
    ("fast", {}),
]
PATH_IDS = [mode + "".join(f"-{v}" for v in opts.values()) for mode, opts in SOLVE_PATHS]


def rel_tol(value: float) -> float:
    return 1e-6 * max(1.0, abs(value))


# ---------------------------------------------------------------- brute force from the document alone
def _jobs(doc: dict[str, Any]) -> list[tuple[str, int, float, float, dict[str, float]]]:
    return [(j["id"], int(j["scale"]), float(j.get("weight", 1.0)), float(j.get("deficit", 0.0)),
             {g: float(t) for g, t in j["throughput"].items()}) for j in doc["jobs"]]


def _runs(doc: dict[str, Any]) -> list[set[str]]:
    cap = doc["gpus"]
    return [{g for g, t in tp.items() if t > 0 and s <= cap.get(g, 0)} for _, s, _, _, tp in _jobs(doc)]


def fair_throughput(doc: dict[str, Any]) -> list[float]:
    """Spec section 2: weighted water-filling over the usable types, spread in proportion to capacity."""
    cap = {g: int(c) for g, c in doc["gpus"].items()}
    jobs, runs = _jobs(doc), _runs(doc)
    usable = [g for g in cap if any(g in r for r in runs)]
    c_use = sum(cap[g] for g in usable)
    target = min(c_use, sum(s for _, s, _, _, _ in jobs))
    # e_j = min(s_j, theta * w_j): jobs reach their cap in the order of s_j / w_j
    capped, free_w, theta = 0.0, sum(w for _, _, w, _, _ in jobs), math.inf
    for i in sorted(range(len(jobs)), key=lambda i: jobs[i][1] / jobs[i][2]):
        theta = (target - capped) / free_w
        if theta * jobs[i][2] < jobs[i][1]:
            break
        capped += jobs[i][1]
        free_w -= jobs[i][2]
    return [sum(tp[g] * (min(s, theta * w) / s) * (cap[g] / c_use) for g in usable if g in r)
            for (_, s, w, _, tp), r in zip(jobs, runs)]


def objective(doc: dict[str, Any], tau: list[float]) -> float:
    """Spec section 3: E - lambda * sum_j w_j max(0, (1 - epsilon) + D_j - tau_j / Tfair_j), weights mean 1."""
    jobs, runs, tfair = _jobs(doc), _runs(doc), fair_throughput(doc)
    eps, lam = float(doc.get("epsilon", 0.0)), float(doc.get("fairness_weight", 100.0))
    mean_w = sum(w for _, _, w, _, _ in jobs) / len(jobs)
    e = short = 0.0
    for (_, s, w, d, tp), r, t, f in zip(jobs, runs, tau, tfair):
        e += s * t / max(tp[g] for g in r)
        short += (w / mean_w) * max(0.0, 1 - eps + d - t / f)
    return e - lam * short


def brute_force(doc: dict[str, Any]) -> float:
    """The best objective over every integer placement (each job alone, in a listed pair, or not at all)."""
    cap = {g: int(c) for g, c in doc["gpus"].items()}
    jobs, runs = _jobs(doc), _runs(doc)
    idx = {jid: i for i, (jid, *_rest) in enumerate(jobs)}
    n = len(jobs)
    options: list[list[tuple[tuple[int, ...], str, tuple[float, ...]]]] = [
        [((i,), g, (jobs[i][4][g],)) for g in sorted(runs[i])] for i in range(n)]
    for p in doc.get("colocation", []):
        (a, b), (ta, tb) = [idx[j] for j in p["jobs"]], p["throughput"]
        if a > b:
            a, b, ta, tb = b, a, tb, ta
        options[a].append(((a, b), p["gpu"], (float(ta), float(tb))))
    tau, used, best = [0.0] * n, [False] * n, -math.inf

    def walk(i: int) -> None:
        nonlocal best
        if i == n:
            best = max(best, objective(doc, tau))
            return
        walk(i + 1)  # job i not placed (or placed already as the second member of a pair)
        if used[i]:
            return
        for members, g, ts in options[i]:
            if any(used[m] for m in members) or cap[g] < jobs[i][1]:
                continue
            cap[g] -= jobs[i][1]
            for m, t in zip(members, ts):
                used[m], tau[m] = True, t
            walk(i + 1)
            for m in members:
                used[m], tau[m] = False, 0.0
            cap[g] += jobs[i][1]

    walk(0)
    return best


# ---------------------------------------------------------------- the reference rounds themselves
@pytest.mark.parametrize("name", ROUND_NAMES)
def test_known_optimum_is_the_brute_force_optimum(name: str) -> None:
    r = reference_round(name)
    assert brute_force(r.document) == pytest.approx(r.optimum, rel=1e-9, abs=1e-9)


def test_brute_force_fair_share_matches_the_spec_example() -> None:
    # spec section 6 lists the fair throughputs of its example: an independent check of fair_throughput
    doc = {"gpus": {"V100": 2, "P100": 2, "K80": 2}, "jobs": [
        {"id": "resnet18-1", "scale": 1, "throughput": {"V100": 24.1, "P100": 22.3, "K80": 7.1}},
        {"id": "lm-2", "scale": 1, "throughput": {"V100": 64.7, "P100": 58.2, "K80": 17.1}},
        {"id": "transformer-3", "scale": 1, "deficit": 0.5, "throughput": {"V100": 8.6, "P100": 5.1, "K80": 1.8}},
        {"id": "resnet50-4", "scale": 2, "throughput": {"V100": 7.9, "P100": 4.7}}],
        "colocation": [{"jobs": ["resnet18-1", "lm-2"], "gpu": "V100", "throughput": [15.2, 41.0]}],
        "epsilon": 0.1}
    assert fair_throughput(doc) == pytest.approx([17.8333, 46.6667, 5.1667, 4.2], abs=1e-4)
    assert brute_force(doc) == pytest.approx(-3.4549, abs=1e-4)


def test_reference_rounds_are_distinct_valid_and_immutable() -> None:
    assert 5 <= len(REFERENCE_ROUNDS) <= 8
    assert len(set(ROUND_NAMES)) == len(ROUND_NAMES)
    for r in REFERENCE_ROUNDS:
        assert isinstance(r, ReferenceRound)
        assert r.problem.num_jobs == len(r.document["jobs"])
        doc = r.document
        doc["jobs"].clear()  # a fresh copy: the reference is unchanged
        assert r.document["jobs"]
    first: Any = REFERENCE_ROUNDS[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.optimum = 0.0


def test_unknown_reference_round() -> None:
    with pytest.raises(InvalidInputError, match=r"`name` = 'nope': no such reference round \(known: one-type"):
        reference_round("nope")


# ---------------------------------------------------------------- every solve path against the optimum
@pytest.fixture(scope="module")
def exact_objective() -> dict[str, float]:
    return {r.name: allocate(r.document, mode="exact").values.objective for r in REFERENCE_ROUNDS}


@pytest.mark.parametrize("mode, options", SOLVE_PATHS, ids=PATH_IDS)
@pytest.mark.parametrize("name", ROUND_NAMES)
def test_solve_path_against_the_known_optimum(name: str, mode: str, options: dict[str, Any],
                                              exact_objective: dict[str, float]) -> None:
    r = reference_round(name)
    alloc = allocate(r.document, mode=mode, **options)
    assert alloc.report.mode == mode
    assert allocation_violations(r.problem, alloc) == []
    exact = exact_objective[name]
    if mode == "exact":
        assert str(alloc.status) == "optimal"
        assert alloc.values.objective == pytest.approx(r.optimum, rel=1e-6, abs=1e-6)
    elif mode == "lp":
        assert str(alloc.status) == "optimal"
        assert alloc.values.objective >= exact - rel_tol(exact)  # a relaxation: never below the MILP optimum
        assert alloc.values.objective >= r.optimum - rel_tol(r.optimum)
    else:
        assert str(alloc.status) == "heuristic"
        assert alloc.values.objective <= exact + rel_tol(exact)  # a feasible placement: never better than exact
        assert alloc.values.objective <= r.optimum + rel_tol(r.optimum)
