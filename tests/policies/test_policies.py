"""Tests of the scheduling policies: a contract suite over every registered policy, and hand-solved rounds.

Contract (every name in ``policy_names()``): on random rounds, first-round and with fabricated history, the
allocation is feasible (``allocation_violations == []``) and deterministic. Job-order independence is checked
where tie-breaking allows it: the placements of ``las``, ``fifo`` and ``gandiva-fair`` on states whose sort
keys are all distinct (history), and for the LP-based policies the optimal value of their LP (an LP's optimal
vertex, and so the placement, may legitimately differ between permutations when the optimum is not unique).
The fill property (no GPU idle while an unplaced job fits on it) is checked for every policy that promises it.
"""

from __future__ import annotations

import ast
import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fairshare.allocation import Allocation, Status
from fairshare.errors import InvalidInputError, PolicyError
from fairshare.formulation import RoundModel, build_model
from fairshare.policies import (
    Placed,
    Policy,
    RoundState,
    SupportsAllocate,
    TimeSharePlan,
    base,
    get_policy,
    policy_names,
    policy_options,
    policy_summary,
    register,
)
from fairshare.policies._timeshare import column_mask, column_progress, max_min_plan, take_in_order
from fairshare.policies.ftf import ftf_plan, ftf_rho, ftf_terms
from fairshare.policies.gandiva_fair import traded_shares, type_speed_order
from fairshare.policies.gavel import gavel_plan
from fairshare.policies.gavel_shares import isolated_throughput, proportional_throughput
from fairshare.policies.las import las_plan
from fairshare.policies.max_throughput import throughput_lp
from fairshare.problem import RoundProblem
from fairshare.solvers import solve_lp
from fairshare.testing.random_rounds import random_round
from fairshare.validators import allocation_violations

PEERS = ("gavel", "gavel-ss", "las", "las-tiresias", "ftf", "gandiva-fair", "max-throughput", "fifo")
# the peers with a time-share plan, and the options that make their plan Gavel's (the defaults)
PLANNERS = ("gavel", "gavel-ss", "ftf", "max-throughput", "las")
WATER_FILLED_FTF = {"normalization": "water-filled", "history": "elapsed"}  # fairshare's FTF before 0.2
VARIANTS = [
    ("gavel", {}), ("gavel", {"space_sharing": True}), ("gavel", {"refine": False}),
    ("gavel", {"normalization": "water-filled"}), ("gavel-ss", {}), ("gavel-ss", {"normalization": "water-filled"}),
    ("ftf", {}), ("ftf", {"space_sharing": True}), ("ftf", {"refine": False}), ("ftf", WATER_FILLED_FTF),
    ("ftf", {"history": "elapsed"}),
    ("las", {}), ("las-tiresias", {}), ("gandiva-fair", {}), ("gandiva-fair", {"trading": False}),
    ("max-throughput", {}), ("max-throughput", {"space_sharing": False}), ("max-throughput", {"milp": True}),
    ("max-throughput", {"objective": "normalized"}),
    ("fifo", {}), ("fifo", {"heterogeneity_aware": False}),
]


# ---------------------------------------------------------------------------------------------------- helpers
def history_state(model: RoundModel, seed: int, *, now: float = 1e5) -> RoundState:
    """A state with fabricated, all-distinct history: arrivals, time run on every runnable type, work left."""
    rng = np.random.default_rng([seed, 99])  # not the stream random_round(seed) drew the round from
    p = model.problem
    n, g = p.num_jobs, len(p.gpu_types)
    arrival = now - rng.uniform(1.0, 5e4, n)
    received = rng.uniform(0.01, 1.0, (n, g)) * ((now - arrival) / g)[:, None] * p.runnable
    attained = received.sum(axis=1) * p.scale
    remaining = model.fair.fair_throughput * rng.uniform(1e2, 5e4, n)
    return RoundState(model, now, 360.0, arrival, attained, received, rng.uniform(0, 1e4, n), remaining)


def permuted(state: RoundState, perm: np.ndarray) -> RoundState:
    """The same round with its jobs listed in another order."""
    model = build_model(state.model.problem.take_jobs(perm))
    return RoundState(model, state.time, state.round_length, state.arrival[perm],
                      state.attained_service[perm], state.received[perm], state.done_iterations[perm],
                      state.remaining_iterations[perm])


def placements(alloc: Allocation) -> set[tuple[frozenset[str], str, int]]:
    return {(frozenset(pl.jobs), pl.gpu, pl.gpus) for pl in alloc.placements}


def idle_violations(problem: RoundProblem, alloc: Allocation) -> list[str]:
    """Unplaced jobs that fit alone on a type with enough idle GPUs."""
    free = problem.capacity.astype(np.int64).copy()
    gidx = {g: i for i, g in enumerate(problem.gpu_types)}
    placed: set[str] = set()
    for pl in alloc.placements:
        free[gidx[pl.gpu]] -= pl.gpus
        placed.update(pl.jobs)
    out = []
    runnable = problem.runnable
    for j, jid in enumerate(problem.job_ids):
        if jid in placed:
            continue
        fits = runnable[j] & (free >= problem.scale[j])
        if fits.any():
            g = int(np.argmax(fits))
            out.append(f"{jid} waits while {problem.gpu_types[g]} has {free[g]} idle GPUs")
    return out


def round_of(doc: dict) -> tuple[RoundProblem, RoundModel]:
    p = RoundProblem.from_dict(doc)
    return p, build_model(p)


def job_ids_on(alloc: Allocation, gpu: str) -> set[str]:
    return {j for pl in alloc.placements if pl.gpu == gpu for j in pl.jobs}


# --------------------------------------------------------------------------------------------- contract suite
def test_registry_has_every_peer() -> None:
    assert set(PEERS) <= set(policy_names())
    for name in PEERS:
        pol = get_policy(name)
        assert pol.name == name
        with pytest.raises(AttributeError):
            pol.name = "other"  # type: ignore[misc]  # frozen


@pytest.mark.parametrize("name", policy_names())
@pytest.mark.parametrize("n,seed", [(1, 0), (6, 1), (40, 2), (120, 3), (300, 4)])
def test_first_round_feasible_and_deterministic(name: str, n: int, seed: int) -> None:
    p = random_round(n, seed=seed)
    state = RoundState.first_round(build_model(p))
    a1 = get_policy(name).allocate(state)
    a2 = get_policy(name).allocate(state)
    assert allocation_violations(p, a1) == []
    assert a1.job_ids == p.job_ids
    assert a1.placements == a2.placements
    assert a1.status in (Status.OPTIMAL, Status.HEURISTIC)


@pytest.mark.parametrize("name", policy_names())
@pytest.mark.parametrize("n,seed", [(9, 4), (60, 5), (200, 6)])
def test_history_feasible_and_deterministic(name: str, n: int, seed: int) -> None:
    p = random_round(n, seed=seed, weighted_fraction=0.2)
    state = history_state(build_model(p), seed)
    a1 = get_policy(name).allocate(state)
    a2 = get_policy(name).allocate(state)
    assert allocation_violations(p, a1) == []
    assert a1.placements == a2.placements


@pytest.mark.parametrize("name,options", VARIANTS)
def test_variants_feasible_and_fill(name: str, options: dict) -> None:
    for seed, hist in ((11, False), (12, True)):
        p = random_round(50, seed=seed)
        model = build_model(p)
        state = history_state(model, seed) if hist else RoundState.first_round(model)
        alloc = get_policy(name, **options).allocate(state)
        assert allocation_violations(p, alloc) == []
        assert idle_violations(p, alloc) == []
        assert alloc.report.policy == name and alloc.report.mode is None


@pytest.mark.parametrize("seed", [51, 52, 53])
def test_fair_share_bounds_the_lp_policies(seed: int) -> None:
    # the fair share is a feasible plan with every normalised throughput 1 and every rho 1
    p = random_round(80, seed=seed, weighted_fraction=0.2)
    state = history_state(build_model(p), seed)
    old = ftf_terms(state, **WATER_FILLED_FTF)
    for space_sharing in (False, True):
        assert gavel_plan(state.model, space_sharing=space_sharing, normalization="water-filled").bound >= 1 - 1e-7
        assert ftf_plan(state.model, old, space_sharing=space_sharing).objective <= 1 + 1e-7
    wf = gavel_plan(state.model, space_sharing=True, normalization="water-filled").bound
    assert wf >= gavel_plan(state.model, normalization="water-filled").bound - 1e-7


@pytest.mark.parametrize("seed", [51, 52, 53])
def test_isolated_share_bounds_gavels_programs(seed: int) -> None:
    # Gavel's isolated plan is feasible (x[j, g] = min(C/N, s_j)/s_j * C_g/C on the types where j runs) with
    # tau_j = iso_j: Gavel's max-min level is at least min_j min(C/N, s_j) / w_j, and max rho at most
    # max_j (a_j + 1) / (c_j + 1)
    p = random_round(80, seed=seed, weighted_fraction=0.2)
    state = history_state(build_model(p), seed)
    share = np.minimum(p.total_gpus / p.num_jobs, p.scale)
    terms = ftf_terms(state)
    finite = np.isfinite(terms.elapsed)
    worst = float(((terms.elapsed + 1) / (terms.past + 1))[finite].max())
    for space_sharing in (False, True):
        plan = gavel_plan(state.model, space_sharing=space_sharing)
        assert plan.bound >= (share / p.weight).min() - 1e-7
        assert plan.objective >= plan.bound * (1 - 1e-6)
        assert ftf_plan(state.model, terms, space_sharing=space_sharing).objective <= worst + 1e-7
    assert gavel_plan(state.model, space_sharing=True).bound >= gavel_plan(state.model).bound - 1e-7


def test_empty_round() -> None:
    p = RoundProblem.from_dict({"gpus": {"A": 2}, "jobs": []})
    state = RoundState.first_round(build_model(p))
    for name in policy_names():
        assert get_policy(name).allocate(state).placements == ()


@pytest.mark.parametrize("name", ["las-tiresias", "fifo", "gandiva-fair"])
def test_job_order_independent(name: str) -> None:
    p = random_round(60, seed=21)
    state = history_state(build_model(p), 21)
    perm = np.random.default_rng(0).permutation(p.num_jobs)
    other = permuted(state, perm)
    assert placements(get_policy(name).allocate(state)) == placements(get_policy(name).allocate(other))


def test_las_job_order_independent_when_every_job_runs_everywhere() -> None:
    # then its plan is the water-filled share in closed form (no LP vertex to depend on the job order)
    p = random_round(80, seed=21)
    keep = np.flatnonzero(p.scale <= p.capacity.min())
    p = p.take_jobs(keep)
    p = p.replace(throughput=np.where(p.throughput > 0, p.throughput, 1.0))
    state = history_state(build_model(p), 21)
    assert p.runnable.all()
    other = permuted(state, np.random.default_rng(0).permutation(p.num_jobs))
    assert placements(get_policy("las").allocate(state)) == placements(get_policy("las").allocate(other))


@pytest.mark.parametrize("space_sharing", [False, True])
def test_lp_optima_job_order_independent(space_sharing: bool) -> None:
    p = random_round(60, seed=22)
    state = history_state(build_model(p), 22)
    other = permuted(state, np.random.default_rng(1).permutation(p.num_jobs))
    for normalization in ("proportional", "water-filled"):
        g1 = gavel_plan(state.model, space_sharing=space_sharing, normalization=normalization)
        g2 = gavel_plan(other.model, space_sharing=space_sharing, normalization=normalization)
        assert g1.bound == pytest.approx(g2.bound, rel=1e-7)
    for options in ({}, WATER_FILLED_FTF):
        f1 = ftf_plan(state.model, ftf_terms(state, **options), space_sharing=space_sharing)
        f2 = ftf_plan(other.model, ftf_terms(other, **options), space_sharing=space_sharing)
        assert f1.objective == pytest.approx(f2.objective, rel=1e-6)
    for objective in ("raw", "normalized"):
        t1 = solve_lp(throughput_lp(state.model, column_mask(state.model, space_sharing), objective)).objective
        t2 = solve_lp(throughput_lp(other.model, column_mask(other.model, space_sharing), objective)).objective
        assert t1 == pytest.approx(t2, rel=1e-7)
    assert las_plan(state.model).bound == pytest.approx(las_plan(other.model).bound, rel=1e-7)


# ------------------------------------------------------------------------------------------ template, registry
TWO_JOBS = {"gpus": {"A": 1}, "jobs": [{"id": "x", "scale": 1, "throughput": {"A": 2.0}},
                                       {"id": "y", "scale": 1, "throughput": {"A": 4.0}}]}


def test_infeasible_placement_raises_policy_error_naming_the_policy() -> None:
    class Greedy(Policy):
        name = "both-on-one-gpu"

        def place(self, state: RoundState) -> Placed:
            return Placed(np.ones(state.model.columns.num), Status.HEURISTIC)  # two jobs on one GPU

    _, model = round_of(TWO_JOBS)
    with pytest.raises(PolicyError, match=r"'both-on-one-gpu'.*type 'A': 2 GPUs used of 1") as err:
        Greedy().allocate(RoundState.first_round(model))
    assert not isinstance(err.value, InvalidInputError)  # a policy bug, not bad input


def test_wrong_number_of_column_values_raises_policy_error() -> None:
    class Short(Policy):
        name = "short"

        def place(self, state: RoundState) -> Placed:
            return Placed(np.zeros(state.model.columns.num + 1), Status.HEURISTIC)

    _, model = round_of(TWO_JOBS)
    with pytest.raises(PolicyError, match="'short'.*expected 2 column values"):
        Short().allocate(RoundState.first_round(model))


def test_a_new_policy_is_one_class_and_register(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))  # the registration is undone after the test

    @register("test-shortest-first")
    @dataclass(frozen=True)
    class ShortestFirst(Policy):
        """Jobs by gang size, each alone on its first runnable type with room."""

        limit: int = 1

        def place(self, state: RoundState) -> Placed:
            c, p = state.model.columns, state.model.problem
            x = np.zeros(c.num)
            cap = p.capacity.copy()
            placed = 0
            for k in np.lexsort((c.job_a[: c.num_alone], c.size[: c.num_alone])):
                if placed < self.limit and cap[c.gpu[k]] >= c.size[k] and x[c.job_a == c.job_a[k]].sum() == 0:
                    x[k], placed = 1.0, placed + 1
                    cap[c.gpu[k]] -= c.size[k]
            return Placed(x, Status.HEURISTIC, f"{placed} placed")

    assert "test-shortest-first" in policy_names()
    pol = get_policy("test-shortest-first", limit=1)
    assert isinstance(pol, ShortestFirst) and pol.name == ShortestFirst.name == "test-shortest-first"
    p, model = round_of(TWO_JOBS)
    alloc = pol.allocate(RoundState.first_round(model))
    assert allocation_violations(p, alloc) == []
    r = alloc.report
    assert (r.policy, r.mode, r.message, alloc.status) == ("test-shortest-first", None, "1 placed", Status.HEURISTIC)
    assert len(alloc.placements) == 1 and alloc.report.solve_seconds >= 0.0
    with pytest.raises(InvalidInputError, match="unknown policy"):
        get_policy("no-such-policy")


def test_policy_options_describe_every_registered_name() -> None:
    # what a CLI lists: every name with its options and defaults; constructing with them changes nothing
    for name in policy_names():
        options = policy_options(name)
        assert get_policy(name, **options) == get_policy(name), name
        assert policy_summary(name), name
        for key, value in options.items():
            assert getattr(get_policy(name), key) == value
    assert policy_options("fifo") == {"heterogeneity_aware": True, "backfill": True}
    assert policy_options("las") == {} and policy_options("las-tiresias") == {}
    assert policy_options("ftf") == {"space_sharing": False, "normalization": "isolated", "history": "isolated-time",
                                     "refine": True, "tol": 1e-6, "max_solves": 8}
    assert policy_options("fairshare")["options"] == {}
    with pytest.raises(InvalidInputError, match="unknown policy"):
        policy_options("no-such-policy")
    with pytest.raises(InvalidInputError, match="normalization"):
        get_policy("gavel", normalization="fair-share")


@pytest.mark.parametrize("name", PLANNERS)
def test_planners_expose_a_feasible_time_share_plan(name: str) -> None:
    # plan(state) is the fractional plan over state.model.columns, within Gavel's constraints
    p = random_round(60, seed=9, weighted_fraction=0.2)
    model = build_model(p)
    for state in (RoundState.first_round(model), history_state(model, 9)):
        plan = get_policy(name).plan(state)  # type: ignore[attr-defined]
        assert isinstance(plan, TimeSharePlan)
        c = model.columns
        assert plan.x.shape == (c.num,) and plan.job_values.shape == (p.num_jobs,)
        assert not plan.x.flags.writeable
        assert (plan.x >= 0).all()
        time = np.bincount(c.job_a, weights=plan.x, minlength=p.num_jobs)
        time += np.bincount(c.job_b[c.is_pair], weights=plan.x[c.is_pair], minlength=p.num_jobs)
        assert (time <= 1 + 1e-6).all()
        gpus = np.bincount(c.gpu, weights=plan.x * c.size, minlength=len(p.gpu_types))
        assert (gpus <= p.capacity + 1e-6).all()
        if not getattr(get_policy(name), "space_sharing", False):
            assert (plan.x[c.is_pair] == 0).all()
        assert plan.optimal and plan.message
        # deterministic
        assert get_policy(name).plan(state).x.tolist() == plan.x.tolist()  # type: ignore[attr-defined]


def test_the_template_is_not_overridden() -> None:
    # allocate is the template (timing, the feasibility check, the result): peers implement place only; the
    # fairshare policy alone overrides it, because its result is a solve mode's own allocation
    for name in policy_names():
        cls = type(get_policy(name))
        assert cls.place is not Policy.place
        assert (cls.allocate is Policy.allocate) == (name != "fairshare"), name
    with pytest.raises(TypeError):
        Policy()  # type: ignore[abstract]


def test_placed_holds_a_read_only_float_array() -> None:
    placed = Placed(np.array([1, 0], dtype=np.int64), Status.OPTIMAL)
    assert placed.x.dtype == np.float64 and not placed.x.flags.writeable
    assert placed.message == ""


def test_any_object_with_allocate_supports_allocate_and_policy_stays_nominal() -> None:
    # duck-typed policies are accepted where any policy will do (the simulator checks SupportsAllocate)
    class Duck:
        name = "duck"

        def allocate(self, state: RoundState) -> Allocation:
            return get_policy("las").allocate(state)

    assert isinstance(Duck(), SupportsAllocate) and not isinstance(Duck(), Policy)
    assert not isinstance(object(), SupportsAllocate)
    assert all(isinstance(get_policy(name), SupportsAllocate) for name in policy_names())


@pytest.mark.parametrize("mode", ["fast", "exact"])
@pytest.mark.parametrize("aware", [True, False])
def test_fairshare_policy_reports_its_mode_and_name(mode: str, aware: bool) -> None:
    p = random_round(20, seed=7)
    state = RoundState.first_round(build_model(p))
    for epsilon in (None, 0.4):
        alloc = get_policy("fairshare", mode=mode, heterogeneity_aware=aware, epsilon=epsilon).allocate(state)
        assert (alloc.report.mode, alloc.report.policy) == (mode, "fairshare")
        # the allocation is the round as planned: with the override, next deficits use that epsilon
        assert allocation_violations(p if epsilon is None else p.replace(epsilon=epsilon), alloc) == []
    placed = get_policy("fairshare", mode=mode, heterogeneity_aware=aware).place(state)
    assert placed.x.tolist() == [1.0 if v else 0.0 for v in placed.x > 0.5]
    again = get_policy("fairshare", mode=mode, heterogeneity_aware=aware).allocate(state)
    np.testing.assert_array_equal(state.model.job_throughput(placed.x), again.jobs.throughput)


def test_take_in_order_takes_every_column_that_fits() -> None:
    # unlike the rounding's greedy_take, the peers' greedy does not look at fairshare's column values
    _, model = round_of(GAVEL_ROUND)
    worthless = dataclasses.replace(model, value=np.full(model.columns.num, -1.0))
    assert take_in_order(worthless, np.array([2, 1, 0, 2])).tolist() == [0.0, 1.0, 1.0]


def test_policies_use_the_solver_contract_only() -> None:
    # no policy imports a backend (fairshare.solvers.highs) or a solver library
    for path in sorted(Path(base.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not [m for m in names if m.startswith(("fairshare.solvers.", "highspy", "pyomo"))], path.name


# ------------------------------------------------------------------------------------------------------ gavel
# F-only jobs a, b and an S-only job c on one F and one S GPU. Gavel: prop_j = (1/2) 4 = 2 for everyone, so the
# level of j is s_j tau_j / (w_j prop_j) = 2 x_j; x_a + x_b <= 1 gives level 1 at x_a = x_b = 1/2, and c
# reaches 2 with all of S (the refinement gives it all of S). Water-filled: C' = 2 over 3 jobs, e = 2/3, a
# third of the round on each type, so Tfair = 4/3 for everyone and u_j = 3 x_j: level 1.5 at the same plan.
GAVEL_ROUND = {"gpus": {"F": 1, "S": 1}, "jobs": [
    {"id": "a", "scale": 1, "throughput": {"F": 4.0}},
    {"id": "b", "scale": 1, "throughput": {"F": 4.0}},
    {"id": "c", "scale": 1, "throughput": {"S": 4.0}}]}


@pytest.mark.parametrize("normalization,level", [("proportional", 1.0), ("water-filled", 1.5)])
def test_gavel_hand_solved_lp_and_round(normalization: str, level: float) -> None:
    _, model = round_of(GAVEL_ROUND)
    plan = gavel_plan(model, normalization=normalization)
    assert plan.bound == pytest.approx(level)
    assert plan.objective == pytest.approx(level, rel=1e-6)
    assert plan.x[:3] == pytest.approx([0.5, 0.5, 1.0])
    assert plan.job_values == pytest.approx([level, level, 2 * level], rel=1e-6)
    policy = get_policy("gavel", normalization=normalization)
    assert policy.plan(RoundState.first_round(model)).x == pytest.approx(plan.x)  # type: ignore[attr-defined]
    alloc = policy.allocate(RoundState.first_round(model))
    # no history: every positive target has priority inf; ties by target (c's 1.0 first), then job index
    assert job_ids_on(alloc, "S") == {"c"} and job_ids_on(alloc, "F") == {"a"}
    assert alloc.status == Status.HEURISTIC


def test_gavel_normalizes_by_the_proportional_share_not_the_water_filled_one() -> None:
    # One F and one S pair of GPUs; every job is twice as fast on S. prop_j = (T_F + T_S) / 2 = 3, 1.5, 3.
    # Gavel's levels s_j tau_j / prop_j are all 4/3 with g0 on F all round, the small job on S all round and
    # g2 on S half the round (capacity F: 2, S: 1 + 2 * 0.5). Water-filling caps the small job at its one GPU
    # (e = 1.5, 1, 1.5 GPUs), so Tfair = 2.25, 1.5, 2.25 is not proportional to prop_j / s_j: the fair share
    # itself is the water-filled optimum (every u_j = 1), and on Gavel's objective it scores
    # min(2 * 2.25 / 3, 1.5 / 1.5, 2 * 2.25 / 3) = 1, a quarter below Gavel's optimum.
    doc = {"gpus": {"F": 2, "S": 2}, "jobs": [
        {"id": "g0", "scale": 2, "throughput": {"F": 2.0, "S": 4.0}},
        {"id": "s1", "scale": 1, "throughput": {"F": 1.0, "S": 2.0}},
        {"id": "g2", "scale": 2, "throughput": {"F": 2.0, "S": 4.0}}]}
    p, model = round_of(doc)
    np.testing.assert_allclose(proportional_throughput(p), [3.0, 1.5, 3.0])
    np.testing.assert_allclose(model.fair.fair_throughput, [2.25, 1.5, 2.25])
    gavel = gavel_plan(model, refine=False)
    assert gavel.bound == pytest.approx(4 / 3)
    assert gavel.x == pytest.approx([1.0, 0.0, 0.0, 1.0, 0.0, 0.5], abs=1e-9)  # (g0,F) (g0,S) (s1,F) ...
    wf = gavel_plan(model, normalization="water-filled", refine=False)
    assert wf.bound == pytest.approx(1.0)
    tau = model.job_throughput(wf.x)
    assert (p.scale * tau / proportional_throughput(p)).min() == pytest.approx(1.0)


def test_gavel_weights_divide_the_level() -> None:
    # one GPU, two equal jobs, weights 1 and 3: s_j tau_j / (w_j prop_j) = x_j / w_j equal -> x = 1/4, 3/4
    doc = {"gpus": {"A": 1}, "jobs": [
        {"id": "x", "scale": 1, "weight": 1, "throughput": {"A": 2.0}},
        {"id": "y", "scale": 1, "weight": 3, "throughput": {"A": 2.0}}]}
    _, model = round_of(doc)
    plan = gavel_plan(model)
    assert plan.x == pytest.approx([0.25, 0.75])
    assert plan.bound == pytest.approx(0.25)


def test_gavel_priority_uses_received_fraction() -> None:
    p, model = round_of(GAVEL_ROUND)
    base = RoundState.first_round(model, time=1000.0)
    received = np.array([[600.0, 0.0], [300.0, 0.0], [0.0, 900.0]])
    state = RoundState(model, 1000.0, 360.0, np.zeros(3), received.sum(1), received, base.done_iterations,
                       base.remaining_iterations)
    alloc = get_policy("gavel").allocate(state)
    # a: 0.5 / 0.6 < b: 0.5 / 0.3, so b gets F
    assert job_ids_on(alloc, "F") == {"b"}


def test_gavel_space_sharing_hand_solved() -> None:
    doc = {"gpus": {"V100": 1}, "jobs": [
        {"id": "a", "scale": 1, "throughput": {"V100": 1.0}},
        {"id": "b", "scale": 1, "throughput": {"V100": 1.0}}],
        "colocation": [{"jobs": ["a", "b"], "gpu": "V100", "throughput": [0.8, 0.8]}]}
    _, model = round_of(doc)
    # Gavel: prop = 1, alone x_a + x_b <= 1 caps the level at 0.5; together both get 0.8 all round.
    # Water-filled: Tfair = 0.5, so the levels are 1 and 1.6.
    assert gavel_plan(model).bound == pytest.approx(0.5)
    assert gavel_plan(model, space_sharing=True).bound == pytest.approx(0.8)
    assert gavel_plan(model, normalization="water-filled").bound == pytest.approx(1.0)
    assert gavel_plan(model, space_sharing=True, normalization="water-filled").bound == pytest.approx(1.6)
    for alloc in (get_policy("gavel", space_sharing=True).allocate(RoundState.first_round(model)),
                  get_policy("gavel-ss").allocate(RoundState.first_round(model))):
        assert placements(alloc) == {(frozenset({"a", "b"}), "V100", 1)}
        assert alloc.status == Status.OPTIMAL  # the plan is integral and placed as is
    assert get_policy("gavel-ss").allocate(RoundState.first_round(model)).report.policy == "gavel-ss"


def test_gavel_ss_is_gavel_with_space_sharing() -> None:
    pol = get_policy("gavel-ss")
    assert pol.name == "gavel-ss" and pol.space_sharing  # type: ignore[attr-defined]
    assert policy_options("gavel-ss") == {**policy_options("gavel"), "space_sharing": True}
    with pytest.raises(InvalidInputError, match="space_sharing"):
        get_policy("gavel-ss", space_sharing=False)
    p = random_round(40, seed=8)
    state = history_state(build_model(p), 8)
    a = get_policy("gavel-ss").plan(state)  # type: ignore[attr-defined]
    b = get_policy("gavel", space_sharing=True).plan(state)  # type: ignore[attr-defined]
    np.testing.assert_array_equal(a.x, b.x)


# -------------------------------------------------------------------------------------------------------- ftf
def ftf_state() -> tuple[RoundProblem, RoundState]:
    """GAVEL_ROUND with history: ``b`` arrived 900 s ago with 400 iterations left and none done (a_b = 900 *
    (4/3) / 400 = 3); ``a`` and ``c`` arrive now. iso_j = (2/3) prop_j = 4/3 = Tfair_j for every job."""
    p, model = round_of(GAVEL_ROUND)
    z = np.zeros(3)
    return p, RoundState(model, 900.0, 360.0, np.array([900.0, 0.0, 900.0]), z, np.zeros((3, 2)), z,
                         np.full(3, 400.0))


def test_ftf_hand_solved_elapsed_history() -> None:
    # fairshare's FTF before 0.2 (the past counted as elapsed time): rho_b = (3 + 1 / u_b) / (3 + 1),
    # rho_a = 1 / u_a, with u_a + u_b <= 3. Equal rho at the optimum:
    # (3 + 1/w) / 4 = 1 / (3 - w)  =>  3 w^2 - 4 w - 3 = 0  =>  w = u_b = (4 + sqrt(52)) / 6.
    _, state = ftf_state()
    terms = ftf_terms(state, **WATER_FILLED_FTF)
    np.testing.assert_allclose(terms.elapsed, [0.0, 3.0, 0.0])
    np.testing.assert_allclose(terms.past, [0.0, 3.0, 0.0])
    w = (4 + math.sqrt(52)) / 6
    plan = ftf_plan(state.model, terms, tol=1e-9)
    assert plan.objective == pytest.approx(1 / (3 - w), rel=1e-6)
    assert plan.x[:2] == pytest.approx([(3 - w) / 3, w / 3], rel=1e-5)
    # FTF favours b, whose rho is the worst under an even split ((3 + 1/1.5) / 4 = 0.917 > 1 / 1.5)
    alloc = get_policy("ftf", **WATER_FILLED_FTF).allocate(state)
    assert job_ids_on(alloc, "F") == {"b"} and job_ids_on(alloc, "S") == {"c"}
    assert alloc.status == Status.HEURISTIC
    assert job_ids_on(get_policy("gavel").allocate(state), "F") == {"a"}


def test_ftf_hand_solved_gavel() -> None:
    # Gavel's FTF counts the past as the isolated time of the work done (0 here): b, idle for 900 s, has
    # rho_b = (3 + 1 / u_b) / (0 + 1) and rho_a = 1 / u_a, u_a + u_b <= 3. Equal rho:
    # 1/u - 1/(3 - u) = 3  =>  3 u^2 - 11 u + 3 = 0  =>  u_a = (11 - sqrt(85)) / 6, rho = 1 / u_a.
    _, state = ftf_state()
    terms = ftf_terms(state)
    np.testing.assert_allclose(terms.reference, [4 / 3] * 3)
    np.testing.assert_allclose(terms.elapsed, [0.0, 3.0, 0.0])
    np.testing.assert_allclose(terms.past, [0.0, 0.0, 0.0])
    u = (11 - math.sqrt(85)) / 6
    plan = ftf_plan(state.model, terms, tol=1e-9)
    assert plan.objective == pytest.approx(1 / u, rel=1e-6)
    assert plan.x[:2] == pytest.approx([u / 3, 1 - u / 3], rel=1e-5)
    assert plan.job_values[:2] == pytest.approx([1 / u, 1 / u], rel=1e-6)
    alloc = get_policy("ftf").allocate(state)
    assert job_ids_on(alloc, "F") == {"b"} and job_ids_on(alloc, "S") == {"c"}


def test_ftf_two_job_example_of_issue_8() -> None:
    # One GPU; both jobs 3,600 s old with 3,600 iterations left at 1 it/s; the first has done nothing, the
    # second 3,600 iterations. iso = 1/2: rho_1 = (1 + 1/tau_1) / 2, rho_2 = (1 + 1/tau_2) / 4, so
    # tau_1^2 + 2 tau_1 - 2 = 0: Gavel gives the starved job sqrt(3) - 1 = 0.7321 of the GPU.
    doc = {"gpus": {"A": 1}, "jobs": [{"id": "starved", "scale": 1, "throughput": {"A": 1.0}},
                                      {"id": "served", "scale": 1, "throughput": {"A": 1.0}}]}
    p, model = round_of(doc)
    state = RoundState(model, 3600.0, 360.0, np.zeros(2), np.zeros(2), np.zeros((2, 1)),
                       np.array([0.0, 3600.0]), np.full(2, 3600.0))
    plan = get_policy("ftf").plan(state)  # type: ignore[attr-defined]
    assert plan.x == pytest.approx([math.sqrt(3) - 1, 2 - math.sqrt(3)], abs=1e-6)
    assert plan.x.round(4).tolist() == [0.7321, 0.2679]
    assert plan.objective == pytest.approx((1 + 1 / (math.sqrt(3) - 1)) / 2, rel=1e-6)
    # fairshare's FTF before 0.2 ignored the work done and split the GPU evenly
    old = get_policy("ftf", **WATER_FILLED_FTF).plan(state)  # type: ignore[attr-defined]
    assert old.x == pytest.approx([0.5, 0.5], abs=1e-6)


def test_ftf_rho_definition() -> None:
    # rho_j = (t_j + R_j / tau_j) / (done_j / iso_j + R_j / iso_j), evaluated straight from the definition
    p = random_round(30, seed=33)
    state = history_state(build_model(p), 33)
    terms = ftf_terms(state)
    tau = state.model.fair.fair_throughput * np.linspace(0.5, 2.0, p.num_jobs)
    iso = isolated_throughput(p)
    t = state.time - state.arrival
    r, done = state.remaining_iterations, state.done_iterations
    np.testing.assert_allclose(ftf_rho(terms, tau), (t + r / tau) / (done / iso + r / iso), rtol=1e-12)
    old = ftf_terms(state, **WATER_FILLED_FTF)
    fair = state.model.fair.fair_throughput
    np.testing.assert_allclose(ftf_rho(old, tau), (t + r / tau) / (t + r / fair), rtol=1e-12)
    with pytest.raises(InvalidInputError, match="history"):
        ftf_terms(state, history="since-arrival")
    with pytest.raises(InvalidInputError, match="normalization"):
        get_policy("ftf", normalization="fair")


@pytest.mark.parametrize("options", [{}, WATER_FILLED_FTF])
def test_ftf_without_history_is_max_min(options: dict) -> None:
    p = random_round(30, seed=31)
    model = build_model(p)
    state = RoundState.first_round(model)
    terms = ftf_terms(state, **options)
    assert not terms.has_history
    plan = ftf_plan(model, terms)
    level = max_min_plan(model, column_mask(model, False), progress=column_progress(model, terms.reference)).bound
    assert plan.objective == pytest.approx(1 / level, rel=1e-6)
    if options:
        assert plan.objective == pytest.approx(1 / gavel_plan(model, normalization="water-filled").bound, rel=1e-6)


@pytest.mark.parametrize("options", [{}, WATER_FILLED_FTF])
def test_ftf_bounds_close(options: dict) -> None:
    p = random_round(40, seed=32)
    state = history_state(build_model(p), 32)
    terms = ftf_terms(state, **options)
    plan = ftf_plan(state.model, terms, refine=False, tol=1e-6)
    assert plan.bound <= plan.objective * (1 + 1e-9)
    assert plan.objective - plan.bound <= 1e-6 * plan.objective
    # the reference plan (u_j = 1: the fair share, or Gavel's isolated plan) has rho_j = (a_j + 1) / (c_j + 1)
    assert plan.objective <= ((terms.elapsed + 1) / (terms.past + 1)).max() + 1e-9
    if options:
        assert plan.objective <= 1.0 + 1e-9
    assert plan.job_values.max() == pytest.approx(plan.objective)
    assert plan.optimal


# ----------------------------------------------------------------------------------------------- gandiva-fair
GANDIVA_ROUND = {"gpus": {"fast": 1, "slow": 1}, "jobs": [
    {"id": f"j{i}", "scale": 1, "throughput": {"fast": f, "slow": 1.0}}
    for i, f in enumerate([4.0, 1.5, 1.2, 1.1])]}


def test_gandiva_fair_hand_solved_trades() -> None:
    # Fair shares: e = 1/2, a quarter of the round on each type. Buyers 4, 1.5, 1.2, 1.1; sellers the reverse.
    # j0 buys from j3 at the next bid 1.5: d = min(1/4, (1/4) / 1.5) = 1/6 fast for 1/4 slow.
    # j1 buys j3's last 1/12 fast at 1.2 (next bid j2), paying 1/10 slow; then j2's fast at 1.2 until its slow
    # (0.15) is spent: d = 1/8. j1 (1.5) and j2 (1.2) then meet j2 as seller: no more trades.
    _, model = round_of(GANDIVA_ROUND)
    assert type_speed_order(model).tolist() == [0, 1]
    res = traded_shares(model)
    np.testing.assert_allclose(res.initial, 0.25)
    expected = [[5 / 12, 0.0], [11 / 24, 0.0], [1 / 8, 0.4], [0.0, 0.6]]
    np.testing.assert_allclose(res.shares, expected, atol=1e-12)
    assert res.trades == 3
    np.testing.assert_allclose(res.shares.sum(axis=0), 1.0)  # capacity conserved
    # fast time moved to the jobs with the larger speedups
    assert res.shares[:2, 0].sum() > 0.5 and res.shares[3, 0] == 0.0
    alloc = get_policy("gandiva-fair").allocate(RoundState.first_round(model))
    assert job_ids_on(alloc, "fast") == {"j1"} and job_ids_on(alloc, "slow") == {"j3"}
    plain = get_policy("gandiva-fair", trading=False).allocate(RoundState.first_round(model))
    assert job_ids_on(plain, "fast") == {"j0"} and job_ids_on(plain, "slow") == {"j1"}


def test_gandiva_fair_conserves_capacity_on_random_round() -> None:
    p = random_round(200, seed=41)
    model = build_model(p)
    res = traded_shares(model)
    used = (res.shares * p.scale[:, None]).sum(axis=0)
    np.testing.assert_allclose(used, (res.initial * p.scale[:, None]).sum(axis=0), rtol=1e-9)
    assert (res.shares.sum(axis=1) <= 1 + 1e-9).all()
    assert res.trades > 0


# --------------------------------------------------------------------------------------------- max-throughput
def test_max_throughput_hand_solved() -> None:
    # a: F 4, S 1 (eff 1 / 0.25); b: F 2, S 2 (eff 1 / 1). a on F + b on S = 2 beats b on F + a on S = 1.25.
    doc = {"gpus": {"F": 1, "S": 1}, "jobs": [
        {"id": "a", "scale": 1, "throughput": {"F": 4.0, "S": 1.0}},
        {"id": "b", "scale": 1, "throughput": {"F": 2.0, "S": 2.0}}]}
    _, model = round_of(doc)
    for milp in (False, True):
        alloc = get_policy("max-throughput", milp=milp).allocate(RoundState.first_round(model))
        assert placements(alloc) == {(frozenset({"a"}), "F", 1), (frozenset({"b"}), "S", 1)}
        assert alloc.values.efficiency == pytest.approx(2.0)
        assert alloc.status == Status.OPTIMAL


def test_max_throughput_prefers_best_pair() -> None:
    doc = {"gpus": {"V100": 1}, "jobs": [{"id": x, "scale": 1, "throughput": {"V100": 10.0}} for x in "abc"],
           "colocation": [{"jobs": ["a", "b"], "gpu": "V100", "throughput": [9.0, 9.0]},
                          {"jobs": ["a", "c"], "gpu": "V100", "throughput": [5.0, 6.0]}]}
    _, model = round_of(doc)
    alloc = get_policy("max-throughput").allocate(RoundState.first_round(model))
    assert placements(alloc) == {(frozenset({"a", "b"}), "V100", 1)}
    assert alloc.values.efficiency == pytest.approx(1.8)
    alone = get_policy("max-throughput", space_sharing=False).allocate(RoundState.first_round(model))
    assert len(alone.placements) == 1 and alone.values.efficiency == pytest.approx(1.0)


def test_max_throughput_raw_sum_is_gavels_objective() -> None:
    # a: 100 / 90 steps/s on F / S, b: 2 / 1. Raw sum: a on F + b on S = 101 beats b on F + a on S = 92
    # (Gavel's objective). Normalised by each job's best throughput: 1 + 0.5 = 1.5 against 1 + 0.9 = 1.9.
    doc = {"gpus": {"F": 1, "S": 1}, "jobs": [
        {"id": "a", "scale": 1, "throughput": {"F": 100.0, "S": 90.0}},
        {"id": "b", "scale": 1, "throughput": {"F": 2.0, "S": 1.0}}]}
    _, model = round_of(doc)
    state = RoundState.first_round(model)
    raw = get_policy("max-throughput")
    plan = raw.plan(state)  # type: ignore[attr-defined]
    assert plan.objective == pytest.approx(101.0) and plan.bound == pytest.approx(101.0)
    assert plan.job_values == pytest.approx([100.0, 1.0])
    assert placements(raw.allocate(state)) == {(frozenset({"a"}), "F", 1), (frozenset({"b"}), "S", 1)}
    norm = get_policy("max-throughput", objective="normalized")
    assert norm.plan(state).objective == pytest.approx(1.9)  # type: ignore[attr-defined]
    assert placements(norm.allocate(state)) == {(frozenset({"b"}), "F", 1), (frozenset({"a"}), "S", 1)}
    with pytest.raises(InvalidInputError, match="objective"):
        get_policy("max-throughput", objective="efficiency")


# -------------------------------------------------------------------------------------------------------- las
def test_las_is_gavels_agnostic_max_min() -> None:
    # A 2-GPU gang and three single-GPU jobs (one of weight 2) on 2 + 2 GPUs: water-filling over 4 GPUs gives
    # theta = 1: e = 1, 1, 1 GPUs to the unit-weight jobs (the gang gets half its time), 1 (capped) to the
    # weight-2 job. Levels s_j share_j / w_j: 1, 1, 1, 1/2; Gavel's optimum is min_j s_j / w_j = 1/2.
    doc: dict[str, Any] = {"gpus": {"A": 2, "B": 2}, "jobs": [
        {"id": "g", "scale": 2, "throughput": {"A": 10.0, "B": 1.0}},
        {"id": "x", "scale": 1, "throughput": {"A": 1.0, "B": 9.0}},
        {"id": "y", "scale": 1, "throughput": {"A": 1.0, "B": 1.0}},
        {"id": "z", "scale": 1, "weight": 2, "throughput": {"A": 3.0, "B": 1.0}}]}
    _, model = round_of(doc)
    plan = get_policy("las").plan(RoundState.first_round(model))  # type: ignore[attr-defined]
    # every job's time spread over A and B in proportion to their GPU counts, whatever its throughputs
    assert plan.x == pytest.approx([0.25, 0.25, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5])
    assert plan.job_values == pytest.approx([1.0, 1.0, 1.0, 0.5])
    assert plan.objective == pytest.approx(0.5) and plan.bound == pytest.approx(0.5)
    assert plan.solves == 0 and plan.optimal
    # with every throughput 1 the plan is the same: the agnostic policy never looks at throughputs
    blind = {**doc, "jobs": [{**j, "throughput": {"A": 1.0, "B": 1.0}} for j in doc["jobs"]]}
    assert las_plan(round_of(blind)[1]).x == pytest.approx(plan.x)


def test_las_with_a_job_that_cannot_run_everywhere() -> None:
    # y runs on B only; the water-filled spread would put half of each job's time on A; the LPs keep Gavel's
    # optimum and stay as close to that spread as capacity allows
    doc = {"gpus": {"A": 1, "B": 1}, "jobs": [
        {"id": "x", "scale": 1, "throughput": {"A": 1.0, "B": 1.0}},
        {"id": "y", "scale": 1, "throughput": {"B": 1.0}},
        {"id": "z", "scale": 1, "throughput": {"A": 1.0, "B": 1.0}}]}
    p, model = round_of(doc)
    plan = las_plan(model)
    # v* = 2/3: three jobs share two GPUs (y's 2/3 on B leaves 1/3 of B and all of A to x and z)
    assert plan.bound == pytest.approx(2 / 3)
    assert plan.objective == pytest.approx(2 / 3, rel=1e-6)
    assert plan.solves == 2
    share = np.bincount(model.columns.job_a, weights=plan.x, minlength=3)
    assert share == pytest.approx([2 / 3, 2 / 3, 2 / 3], rel=1e-6)
    used = np.bincount(model.columns.gpu, weights=plan.x * model.columns.size, minlength=2)
    assert (used <= p.capacity + 1e-9).all()


def test_las_tiresias_hand_solved() -> None:
    doc = {"gpus": {"A": 2, "B": 1}, "jobs": [
        {"id": "j0", "scale": 1, "throughput": {"A": 1.0, "B": 100.0}},
        {"id": "j1", "scale": 1, "throughput": {"A": 1.0, "B": 100.0}},
        {"id": "j2", "scale": 1, "throughput": {"A": 1.0, "B": 100.0}},
        {"id": "j3", "scale": 1, "throughput": {"A": 100.0, "B": 1.0}}]}
    p, model = round_of(doc)
    base = RoundState.first_round(model, time=50.0)
    attained = np.array([100.0, 10.0, 50.0, 0.0])
    state = RoundState(model, 50.0, 360.0, np.zeros(4), attained, base.received, base.done_iterations,
                       base.remaining_iterations)
    alloc = get_policy("las-tiresias").allocate(state)
    # order j3, j1, j2, j0; j3 -> A (2 free GPUs against 1), j1 -> A (1 free each: ties go to the first type)
    # although it is 100x faster on B, j2 -> B; j0 waits. Throughputs are never looked at.
    assert job_ids_on(alloc, "A") == {"j3", "j1"} and job_ids_on(alloc, "B") == {"j2"}


# ------------------------------------------------------------------------------------------------------- fifo
def test_fifo_hand_solved() -> None:
    doc = {"gpus": {"fast": 1, "slow": 1}, "jobs": [
        {"id": f"j{i}", "scale": 1, "throughput": {"fast": 10.0, "slow": 5.0}} for i in range(3)]}
    p, model = round_of(doc)
    base = RoundState.first_round(model, time=10.0)
    state = RoundState(model, 10.0, 360.0, np.array([5.0, 1.0, 3.0]), base.attained_service, base.received,
                       base.done_iterations, base.remaining_iterations)
    alloc = get_policy("fifo").allocate(state)
    assert job_ids_on(alloc, "fast") == {"j1"} and job_ids_on(alloc, "slow") == {"j2"}


def test_fifo_strict_leaves_gpus_idle() -> None:
    doc = {"gpus": {"fast": 2, "slow": 1}, "jobs": [
        {"id": "j0", "scale": 1, "throughput": {"fast": 10.0, "slow": 5.0}},
        {"id": "j1", "scale": 2, "throughput": {"fast": 10.0}},
        {"id": "j2", "scale": 1, "throughput": {"fast": 10.0, "slow": 5.0}}]}
    _, model = round_of(doc)
    state = RoundState.first_round(model)
    # j0 takes one fast GPU; j1 (2 GPUs) fits nowhere; strict FIFO stops there, backfill lets j2 in
    assert placements(get_policy("fifo", backfill=False).allocate(state)) == {(frozenset({"j0"}), "fast", 1)}
    assert job_ids_on(get_policy("fifo").allocate(state), "fast") == {"j0", "j2"}
