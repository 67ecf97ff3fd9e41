"""The peers that bear Gavel's names reach the optima of Gavel's own policy classes (issue 8).

``tests/data/gavel_reference/rounds.json`` holds 12 rounds and, per round and Gavel policy, the optimal objective
value of Gavel's code (stanford-futuredata/gavel, commit c4fa400; see the README there). For each round and
peer, the test builds the round as a fairshare round document, asks the peer for its time-share plan
(``plan(state)``), maps every column to its job ids and GPU type by name, checks the plan against Gavel's
constraints and scores it with Gavel's definitions from the round's own numbers (never fairshare's
coefficients). The score must be within a relative 1e-4 of Gavel's optimum: a feasible plan cannot be better
by more than solver noise, so a larger gap either way is an error. Allocations are never compared (a max-min
program has many optimal plans).

The same checks run on rounds generated here, whose optima are computed independently with
``scipy.optimize.linprog`` on Gavel's programs written directly over (job, type) and (pair, type) variables,
FTF by bisection on the largest rho with one LP feasibility check per step; and on hypothesis rounds for the
max-min and throughput programs.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from scipy.optimize import linprog

from fairshare.formulation import RoundModel, build_model
from fairshare.policies import RoundState, TimeSharePlan, get_policy
from fairshare.policies.gavel_shares import isolated_throughput, proportional_throughput
from fairshare.problem import RoundProblem
from fairshare.testing.strategies import round_documents
from fairshare.validators import allocation_violations

DATA = Path(__file__).resolve().parents[1] / "data" / "gavel_reference" / "rounds.json"
REFERENCE: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
ROUNDS: list[dict[str, Any]] = REFERENCE["rounds"]
TOL: float = REFERENCE["tolerance"]["objective_rel"]
SLACK = 1e-6  # feasibility slack for solver tolerances
NOW = 1e6  # the time of every round state (later than any arrival)

# Gavel policy key -> the peer calls that must reproduce it, and whether pairs are allowed
PEERS: dict[str, tuple[list[tuple[str, dict[str, Any]]], bool]] = {
    "gavel": ([("gavel", {})], False),
    "gavel_space_sharing": ([("gavel-ss", {}), ("gavel", {"space_sharing": True})], True),
    "ftf": ([("ftf", {})], False),
    "max_throughput": ([("max-throughput", {"space_sharing": False})], False),
    "max_throughput_space_sharing": ([("max-throughput", {"space_sharing": True})], True),
    "las": ([("las", {})], False),
}
SENSE = {"gavel": "max", "gavel_space_sharing": "max", "ftf": "min", "max_throughput": "max",
         "max_throughput_space_sharing": "max", "las": "max"}


# ------------------------------------------------------------------------------------ the round, by name
@dataclass(frozen=True)
class Entry:
    """One column of a plan, by name: its jobs (one or two ids), its GPU type and its time fraction."""

    jobs: tuple[str, ...]
    gpu: str
    x: float


def round_document(rnd: dict[str, Any]) -> dict[str, Any]:
    """The round as a fairshare round document (the fields of the reference file)."""
    jobs = [{"id": j["id"], "scale": j["scale"], "weight": j.get("weight", 1.0), "throughput": j["throughput"]}
            for j in rnd["jobs"]]
    return {"gpus": rnd["cluster"], "jobs": jobs, "colocation": rnd.get("colocation", [])}


def round_state(rnd: dict[str, Any]) -> RoundState:
    """A state at time ``NOW`` with the round's history: ``arrival = NOW - elapsed``, steps done and left."""
    problem = RoundProblem.from_dict(round_document(rnd))
    model = build_model(problem)
    jobs = {j["id"]: j for j in rnd["jobs"]}
    col = {k: np.array([float(jobs[i].get(k, 0.0)) for i in problem.job_ids])
           for k in ("elapsed", "steps_done", "steps_remaining")}
    remaining = np.where(col["steps_remaining"] > 0, col["steps_remaining"], np.inf)  # no history: unknown
    n, g = problem.num_jobs, len(problem.gpu_types)
    return RoundState(model, NOW, 360.0, NOW - col["elapsed"], np.zeros(n), np.zeros((n, g)),
                      col["steps_done"], remaining)


def entries(model: RoundModel, x: np.ndarray) -> list[Entry]:
    """Every column with its job ids and GPU type by name."""
    c, p = model.columns, model.problem
    out = []
    for k in range(c.num):
        ids = (p.job_ids[c.job_a[k]],) if c.job_b[k] < 0 else (p.job_ids[c.job_a[k]], p.job_ids[c.job_b[k]])
        out.append(Entry(ids, p.gpu_types[c.gpu[k]], float(x[k])))
    return out


# ------------------------------------------------------------------------- Gavel's constraints and objectives
def pair_throughputs(rnd: dict[str, Any]) -> dict[tuple[frozenset[str], str], dict[str, float]]:
    """Each co-location entry of the round: (pair, type) -> each member's throughput."""
    return {(frozenset(e["jobs"]), e["gpu"]): dict(zip(e["jobs"], map(float, e["throughput"]), strict=True))
            for e in rnd.get("colocation", [])}


def feasibility_violations(rnd: dict[str, Any], plan: list[Entry], space_sharing: bool) -> list[str]:
    """Gavel's constraints: x >= 0, each job's time <= 1, GPUs per type <= C_g, pairs only when allowed."""
    jobs = {j["id"]: j for j in rnd["jobs"]}
    pairs = pair_throughputs(rnd)
    time = {i: 0.0 for i in jobs}
    gpus = {g: 0.0 for g in rnd["cluster"]}
    bad = []
    for e in plan:
        if e.x < -SLACK:
            bad.append(f"{e}: negative time")
        if len(e.jobs) == 2:
            if e.x > SLACK and not space_sharing:
                bad.append(f"{e}: a pair in a plan without space sharing")
            if (frozenset(e.jobs), e.gpu) not in pairs:
                bad.append(f"{e}: not a co-location entry of the round")
        elif float(jobs[e.jobs[0]]["throughput"].get(e.gpu, 0.0)) <= 0:
            bad.append(f"{e}: the job cannot run on this type")
        for i in e.jobs:
            time[i] += e.x
        gpus[e.gpu] += jobs[e.jobs[0]]["scale"] * e.x  # a pair holds its gang once
    bad += [f"job {i}: time {t} > 1" for i, t in time.items() if t > 1 + SLACK]
    bad += [f"type {g}: {u} GPUs > {rnd['cluster'][g]}" for g, u in gpus.items() if u > rnd["cluster"][g] + SLACK]
    return bad


def job_throughput(rnd: dict[str, Any], plan: list[Entry]) -> dict[str, float]:
    """``tau_j``: the sum of x times the job's steps/s in every placement that contains it."""
    jobs = {j["id"]: j for j in rnd["jobs"]}
    pairs = pair_throughputs(rnd)
    tau = {i: 0.0 for i in jobs}
    for e in plan:
        if len(e.jobs) == 1:
            tau[e.jobs[0]] += e.x * float(jobs[e.jobs[0]]["throughput"].get(e.gpu, 0.0))
        else:
            for i in e.jobs:
                tau[i] += e.x * pairs[(frozenset(e.jobs), e.gpu)][i]
    return tau


def gavel_objective(key: str, rnd: dict[str, Any], plan: list[Entry]) -> float:
    """Gavel's objective of policy ``key`` (reference README's table) from ``plan`` and the round's numbers."""
    jobs = {j["id"]: j for j in rnd["jobs"]}
    prop, iso = rnd["gavel_shares"]["proportional"], rnd["gavel_shares"]["isolated"]
    tau = job_throughput(rnd, plan)
    if key in ("gavel", "gavel_space_sharing"):
        return min(j["scale"] * tau[i] / (j.get("weight", 1.0) * prop[i]) for i, j in jobs.items())
    if key in ("max_throughput", "max_throughput_space_sharing"):
        return sum(tau.values())
    if key == "las":
        share = {i: 0.0 for i in jobs}
        for e in plan:
            for i in e.jobs:
                share[i] += e.x
        return min(j["scale"] * share[i] / j.get("weight", 1.0) for i, j in jobs.items())
    assert key == "ftf"
    worst = 0.0
    for i, j in jobs.items():
        t, done, rest = j.get("elapsed", 0.0), j.get("steps_done", 0.0), j.get("steps_remaining", 0.0)
        if rest > 0 or done > 0 or t > 0:
            rho = (t + rest / tau[i]) / (done / iso[i] + rest / iso[i]) if tau[i] > 0 else math.inf
        else:  # no history: rho_j = iso_j / tau_j
            rho = iso[i] / tau[i] if tau[i] > 0 else math.inf
        worst = max(worst, rho)
    return worst


def reference_plan(rnd: dict[str, Any], key: str) -> list[Entry]:
    """Gavel's own allocation of the round for ``key``, as entries."""
    alloc = rnd["gavel"][key]["allocation"]
    return ([Entry((j,), g, x) for j, g, x in alloc["alone"]]
            + [Entry((a, b), g, x) for a, b, g, x in alloc.get("pairs", [])])


def check_peer(rnd: dict[str, Any], key: str, optimum: float, state: RoundState | None = None) -> None:
    """Every peer call of ``key`` gives a feasible plan whose Gavel objective is within TOL of ``optimum``."""
    state = round_state(rnd) if state is None else state
    calls, space_sharing = PEERS[key]
    for name, options in calls:
        plan = get_policy(name, **options).plan(state)  # type: ignore[attr-defined]
        assert isinstance(plan, TimeSharePlan)
        assert plan.x.shape == (state.model.columns.num,)
        named = entries(state.model, plan.x)
        assert feasibility_violations(rnd, named, space_sharing) == [], (rnd["name"], name, options)
        value = gavel_objective(key, rnd, named)
        assert abs(value - optimum) <= TOL * abs(optimum), (rnd["name"], name, options, value, optimum)
        # the plan reports the same objective, in Gavel's units
        assert plan.objective == pytest.approx(value, rel=1e-9, abs=1e-12)


# ------------------------------------------------------------------------------------------ the reference
CASES = [(rnd["name"], key) for rnd in ROUNDS for key in rnd["gavel"]]


def test_reference_file_is_the_documented_one() -> None:
    assert REFERENCE["format"] == "gavel-reference/1"
    assert REFERENCE["gavel_commit"].startswith("c4fa400")
    assert len(ROUNDS) == 12 and TOL == 1e-4
    assert {key for rnd in ROUNDS for key in rnd["gavel"]} == set(PEERS)
    assert len(CASES) == 58  # the README's 58 solves


@pytest.mark.parametrize("name,key", CASES)
def test_scoring_reproduces_gavels_objective_on_gavels_own_allocation(name: str, key: str) -> None:
    # the scorer of this file, applied to Gavel's allocation, gives the file's objective: it reads the
    # definitions as Gavel's code does (to 1e-7: the file leaves out entries with x <= 1e-9)
    rnd = next(r for r in ROUNDS if r["name"] == name)
    plan = reference_plan(rnd, key)
    assert feasibility_violations(rnd, plan, PEERS[key][1]) == []
    ref = rnd["gavel"][key]
    assert gavel_objective(key, rnd, plan) == pytest.approx(ref["objective"], rel=1e-7)
    assert ref["independent_optimum"] == pytest.approx(ref["objective"], rel=2e-6)


@pytest.mark.parametrize("rnd", ROUNDS, ids=[r["name"] for r in ROUNDS])
def test_gavel_shares_match_the_reference(rnd: dict[str, Any]) -> None:
    state = round_state(rnd)
    ids = state.model.problem.job_ids
    for mine, theirs in ((proportional_throughput(state.model.problem), rnd["gavel_shares"]["proportional"]),
                         (isolated_throughput(state.model.problem), rnd["gavel_shares"]["isolated"])):
        np.testing.assert_allclose(mine, [theirs[i] for i in ids], rtol=1e-12)


@pytest.mark.parametrize("name,key", CASES)
def test_peer_reaches_gavels_optimum(name: str, key: str) -> None:
    rnd = next(r for r in ROUNDS if r["name"] == name)
    check_peer(rnd, key, rnd["gavel"][key]["objective"])


@pytest.mark.parametrize("rnd", ROUNDS[:6], ids=[r["name"] for r in ROUNDS[:6]])
def test_peer_placements_are_feasible_on_the_reference_rounds(rnd: dict[str, Any]) -> None:
    # the integer placement derived from each plan (priority rule and fill) is a valid allocation
    state = round_state(rnd)
    for key in rnd["gavel"]:
        for name, options in PEERS[key][0]:
            alloc = get_policy(name, **options).allocate(state)
            assert allocation_violations(state.model.problem, alloc) == [], (rnd["name"], name)


# ------------------------------------------------------------------------- rounds of our own, independent optima
TYPES = ("k80", "p100", "v100")


def generated_round(seed: int, *, num_jobs: int, gpus: tuple[int, int, int], multi_gpu: bool, weighted: bool,
                    pairs: bool, history: str) -> dict[str, Any]:
    """A round drawn like the reference rounds (README "How they were drawn"), in the reference file's format.

    Throughputs are synthetic (a base rate times per-type speed ratios); gangs 1/2/4/8 with probabilities
    0.70/0.10/0.15/0.05 when ``multi_gpu``, never above the smallest GPU count; weight 5 for about 20 % of the
    jobs when ``weighted``; co-location entries between jobs of equal gang size, two random partners per job,
    one entry per type (so that jobs of different gangs are co-located in the same round); histories
    ``none``, ``random`` or ``starved``.
    """
    rng = np.random.default_rng([seed, 8])
    cluster = dict(zip(TYPES, map(int, gpus), strict=True))
    gangs = np.array([1, 2, 4, 8])
    jobs: list[dict[str, Any]] = []
    for k in range(num_jobs):
        s = int(rng.choice(gangs, p=[0.70, 0.10, 0.15, 0.05])) if multi_gpu else 1
        s = min(s, min(gpus))
        base = float(np.exp(rng.normal(np.log(20.0), 1.0))) * s
        ratio = {"k80": rng.uniform(0.15, 0.45), "p100": rng.uniform(0.5, 0.95), "v100": 1.0}
        jobs.append({"id": f"job-{k:03d}", "scale": s, "weight": 5.0 if weighted and rng.random() < 0.2 else 1.0,
                     "throughput": {g: base * float(ratio[g]) for g in TYPES}})
    colocation = []
    if pairs:
        seen = set()
        for a in range(num_jobs):
            same = [b for b in range(num_jobs) if b != a and jobs[b]["scale"] == jobs[a]["scale"]]
            for b in rng.choice(same, size=min(2, len(same)), replace=False) if same else []:
                key = frozenset((a, int(b)))
                if key in seen:
                    continue
                seen.add(key)
                for g in TYPES:
                    slow = rng.uniform(0.35, 1.0, 2)
                    colocation.append({"jobs": [jobs[a]["id"], jobs[int(b)]["id"]], "gpu": g,
                                       "throughput": [jobs[a]["throughput"][g] * float(slow[0]),
                                                      jobs[int(b)]["throughput"][g] * float(slow[1])]})
    rnd = {"name": f"own-{seed}", "cluster": cluster, "jobs": jobs, "colocation": colocation}
    shares = gavel_shares(rnd)
    rnd["gavel_shares"] = shares
    for j in jobs:
        iso = shares["isolated"][j["id"]]
        total = j["throughput"]["v100"] * 60 * 10 ** rng.uniform(1.5, 3)
        if history == "none":
            j.update(elapsed=0.0, steps_done=0.0, steps_remaining=total)
            continue
        rest = total * rng.uniform(0.1, 1.0)
        if history == "starved" and rng.random() < 0.3:
            j.update(elapsed=rng.uniform(0.3, 1.0) * rest / iso, steps_done=0.0, steps_remaining=rest)
        else:
            t = rng.uniform(0.0, 1.0) * rest / iso
            j.update(elapsed=t, steps_done=rng.uniform(0.25, 1.5) * t * iso, steps_remaining=rest)
    return rnd


def gavel_shares(rnd: dict[str, Any]) -> dict[str, dict[str, float]]:
    """``prop_j`` and ``iso_j`` from their definitions (types where a job cannot run count 0)."""
    cap = rnd["cluster"]
    total = sum(cap.values())
    n = len(rnd["jobs"])
    prop, iso = {}, {}
    for j in rnd["jobs"]:
        runs = {g: float(j["throughput"].get(g, 0.0)) for g in cap if cap[g] >= j["scale"]}
        prop[j["id"]] = sum(cap[g] / total * t for g, t in runs.items())
        iso[j["id"]] = min(total / n, j["scale"]) / j["scale"] * prop[j["id"]]
    return {"proportional": prop, "isolated": iso}


@dataclass(frozen=True)
class GavelProgram:
    """Gavel's variables and constraints of a round, written directly: A_ub x <= b_ub over the placements."""

    places: list[tuple[tuple[str, ...], str]]
    a_ub: np.ndarray
    b_ub: np.ndarray
    tput: np.ndarray  # (jobs, places): each job's steps/s in each placement
    share: np.ndarray  # (jobs, places): 1 where the placement contains the job
    ids: list[str]


def gavel_program(rnd: dict[str, Any], space_sharing: bool) -> GavelProgram:
    jobs = {j["id"]: j for j in rnd["jobs"]}
    ids = list(jobs)
    cap = rnd["cluster"]
    places: list[tuple[tuple[str, ...], str]] = []
    for i, j in jobs.items():
        places += [((i,), g) for g in cap if float(j["throughput"].get(g, 0.0)) > 0 and cap[g] >= j["scale"]]
    pairs = pair_throughputs(rnd) if space_sharing else {}
    places += [(tuple(sorted(p)), g) for (p, g) in pairs]
    m = len(places)
    tput = np.zeros((len(ids), m))
    share = np.zeros((len(ids), m))
    gpu_rows = np.zeros((len(cap), m))
    types = list(cap)
    for k, (members, g) in enumerate(places):
        for i in members:
            r = ids.index(i)
            share[r, k] = 1.0
            tput[r, k] = (float(jobs[i]["throughput"][g]) if len(members) == 1
                          else pairs[(frozenset(members), g)][i])
        gpu_rows[types.index(g), k] = jobs[members[0]]["scale"]
    a_ub = np.vstack([share, gpu_rows])
    b_ub = np.concatenate([np.ones(len(ids)), [float(cap[g]) for g in types]])
    return GavelProgram(places, a_ub, b_ub, tput, share, ids)


def linprog_max_min(prog: GavelProgram, coef: np.ndarray) -> float:
    """max v s.t. coef_j . x >= v for every job, Gavel's rows, x >= 0 (variables x then v)."""
    n, m = coef.shape
    c = np.zeros(m + 1)
    c[-1] = -1.0
    a = np.vstack([np.hstack([prog.a_ub, np.zeros((len(prog.b_ub), 1))]), np.hstack([-coef, np.ones((n, 1))])])
    b = np.concatenate([prog.b_ub, np.zeros(n)])
    res = linprog(c, A_ub=a, b_ub=b, bounds=[(0, None)] * (m + 1), method="highs")
    assert res.status == 0, res.message
    return float(-res.fun)


def independent_optimum(key: str, rnd: dict[str, Any]) -> float:
    """Gavel's optimum of ``key`` on ``rnd`` with scipy's linprog (FTF by bisection on rho)."""
    space_sharing = PEERS[key][1]
    prog = gavel_program(rnd, space_sharing)
    jobs = {j["id"]: j for j in rnd["jobs"]}
    shares = rnd["gavel_shares"]
    scale = np.array([jobs[i]["scale"] for i in prog.ids], dtype=float)
    weight = np.array([jobs[i].get("weight", 1.0) for i in prog.ids], dtype=float)
    if key in ("gavel", "gavel_space_sharing"):
        prop = np.array([shares["proportional"][i] for i in prog.ids])
        return linprog_max_min(prog, prog.tput * (scale / (weight * prop))[:, None])
    if key == "las":
        return linprog_max_min(prog, prog.share * (scale / weight)[:, None])
    if key in ("max_throughput", "max_throughput_space_sharing"):
        res = linprog(-prog.tput.sum(axis=0), A_ub=prog.a_ub, b_ub=prog.b_ub, bounds=[(0, None)] * len(prog.places),
                      method="highs")
        assert res.status == 0, res.message
        return float(-res.fun)
    assert key == "ftf"
    iso = np.array([shares["isolated"][i] for i in prog.ids])
    t = np.array([jobs[i].get("elapsed", 0.0) for i in prog.ids])
    done = np.array([jobs[i].get("steps_done", 0.0) for i in prog.ids])
    rest = np.array([jobs[i].get("steps_remaining", 0.0) for i in prog.ids])
    if not (rest > 0).any():  # no history: rho_j = iso_j / tau_j, so min max rho = 1 / max-min of tau_j / iso_j
        return 1.0 / linprog_max_min(prog, prog.tput / iso[:, None])
    whole = (done + rest) / iso  # the isolated finish time

    def feasible(r: float) -> bool:
        if (r * whole <= t).any():
            return False
        need = rest / (r * whole - t)  # tau_j >= need_j
        res = linprog(np.zeros(len(prog.places)), A_ub=np.vstack([prog.a_ub, -prog.tput]),
                      b_ub=np.concatenate([prog.b_ub, -need]), bounds=[(0, None)] * len(prog.places),
                      method="highs")
        return bool(res.status == 0)

    lo = float((t / whole).max())
    hi = float(((t + rest / iso) / whole).max())  # Gavel's isolated plan (tau = iso) is feasible
    assert feasible(hi * (1 + 1e-9))
    while hi - lo > 1e-9 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if feasible(mid) else (mid, hi)
    return hi


OWN: list[dict[str, Any]] = [
    dict(seed=1, num_jobs=10, gpus=(3, 3, 2), multi_gpu=False, weighted=False, pairs=True, history="random"),
    dict(seed=2, num_jobs=14, gpus=(8, 8, 8), multi_gpu=True, weighted=False, pairs=False, history="none"),
    dict(seed=3, num_jobs=18, gpus=(8, 8, 8), multi_gpu=True, weighted=True, pairs=True, history="starved"),
    dict(seed=4, num_jobs=24, gpus=(6, 5, 5), multi_gpu=False, weighted=True, pairs=False, history="random"),
    dict(seed=5, num_jobs=20, gpus=(16, 16, 16), multi_gpu=True, weighted=True, pairs=True, history="random"),
    dict(seed=6, num_jobs=12, gpus=(4, 4, 4), multi_gpu=True, weighted=False, pairs=True, history="none"),
]
OWN_CASES = [(spec, key) for spec in OWN for key in PEERS if spec["pairs"] or not PEERS[key][1]]


@pytest.mark.parametrize("spec,key", OWN_CASES, ids=[f"own{s['seed']}-{k}" for s, k in OWN_CASES])
def test_peer_reaches_the_independent_optimum_on_our_rounds(spec: dict[str, Any], key: str) -> None:
    rnd = generated_round(**spec)
    check_peer(rnd, key, independent_optimum(key, rnd))


def test_our_rounds_cover_mixed_gangs_with_space_sharing() -> None:
    # the generator really produces what the cases above claim: co-located pairs of two gang sizes
    rnd = generated_round(**OWN[2])
    gangs = {j["id"]: j["scale"] for j in rnd["jobs"]}
    assert len({gangs[e["jobs"][0]] for e in rnd["colocation"]}) >= 2
    assert any(j["steps_done"] == 0 and j["elapsed"] > 0 for j in rnd["jobs"])  # starved jobs
    assert any(j["weight"] == 5.0 for j in rnd["jobs"])


def test_space_sharing_with_mixed_gang_sizes() -> None:
    # Gavel's MaxMinFairnessPolicyWithPacking fails on such a round (jobs in different numbers of
    # combinations); ours plans and places it, and reaches the optimum of Gavel's program
    rnd = {"name": "mixed", "cluster": {"k80": 2, "v100": 2}, "colocation": [
        {"jobs": ["a1", "b1"], "gpu": "v100", "throughput": [7.0, 3.8]},
        {"jobs": ["c1", "a1"], "gpu": "v100", "throughput": [8.0, 7.0]},
        {"jobs": ["g2", "h2"], "gpu": "v100", "throughput": [15.0, 13.0]},
        {"jobs": ["h2", "g2"], "gpu": "k80", "throughput": [4.8, 3.8]}],
        "jobs": [{"id": "a1", "scale": 1, "throughput": {"k80": 2.0, "v100": 8.0}},
                 {"id": "b1", "scale": 1, "throughput": {"k80": 1.0, "v100": 4.0}},
                 {"id": "c1", "scale": 1, "weight": 2.0, "throughput": {"k80": 3.0, "v100": 9.0}},
                 {"id": "g2", "scale": 2, "throughput": {"k80": 4.0, "v100": 16.0}},
                 {"id": "h2", "scale": 2, "throughput": {"k80": 5.0, "v100": 14.0}}]}
    rnd["gavel_shares"] = gavel_shares(rnd)
    state = round_state(rnd)
    for key in ("gavel_space_sharing", "max_throughput_space_sharing"):
        check_peer(rnd, key, independent_optimum(key, rnd), state)
    # space sharing helps here: Gavel's level with pairs beats the one without
    assert independent_optimum("gavel_space_sharing", rnd) > independent_optimum("gavel", rnd) * (1 + 1e-3)
    for name, options in (("gavel-ss", {}), ("max-throughput", {}), ("ftf", {"space_sharing": True})):
        alloc = get_policy(name, **options).allocate(state)
        assert allocation_violations(state.model.problem, alloc) == []


@settings(suppress_health_check=[HealthCheck.too_slow])  # examples and deadline: the profile (conftest)
@given(round_documents(max_jobs=8, deficits=False, epsilon=False, fairness_weight=False))
def test_max_min_and_throughput_peers_on_hypothesis_rounds(doc: dict[str, Any]) -> None:
    # any valid round, types a job cannot use included (throughput 0 or missing, or too few GPUs)
    rnd = {"name": "hypothesis", "cluster": doc["gpus"], "jobs": doc["jobs"], "colocation": doc.get("colocation", [])}
    if not rnd["jobs"]:
        return
    rnd["gavel_shares"] = gavel_shares(rnd)
    state = round_state(rnd)
    for key in ("gavel", "gavel_space_sharing", "max_throughput", "max_throughput_space_sharing", "las"):
        check_peer(rnd, key, independent_optimum(key, rnd), state)
