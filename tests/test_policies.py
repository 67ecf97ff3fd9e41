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

import numpy as np
import pytest

from fairshare.allocation import Allocation, Status
from fairshare.errors import InvalidInputError, PolicyError
from fairshare.formulation import RoundModel, build_model
from fairshare.policies import Placed, Policy, RoundState, base, get_policy, policy_names, register
from fairshare.policies._timeshare import column_mask, take_in_order
from fairshare.policies.ftf import elapsed_ratio, ftf_plan
from fairshare.policies.gandiva_fair import traded_shares, type_speed_order
from fairshare.policies.gavel import gavel_plan
from fairshare.policies.max_throughput import throughput_lp
from fairshare.problem import RoundProblem
from fairshare.solvers import solve_lp
from fairshare.testing.random_rounds import random_round
from fairshare.validators import allocation_violations

PEERS = ("gavel", "las", "ftf", "gandiva-fair", "max-throughput", "fifo")
VARIANTS = [
    ("gavel", {}), ("gavel", {"space_sharing": True}), ("gavel", {"refine": False}),
    ("ftf", {}), ("ftf", {"space_sharing": True}), ("ftf", {"refine": False}),
    ("las", {}), ("gandiva-fair", {}), ("gandiva-fair", {"trading": False}),
    ("max-throughput", {}), ("max-throughput", {"space_sharing": False}), ("max-throughput", {"milp": True}),
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
    remaining = model.fair.throughput * rng.uniform(1e2, 5e4, n)
    return RoundState(p, model, now, 360.0, arrival, attained, received, rng.uniform(0, 1e4, n), remaining)


def permuted(state: RoundState, perm: np.ndarray) -> RoundState:
    """The same round with its jobs listed in another order."""
    model = build_model(state.model.problem.take_jobs(perm))
    return RoundState(model.problem, model, state.time, state.round_length, state.arrival[perm],
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
        assert alloc.policy == name and alloc.mode is None


@pytest.mark.parametrize("seed", [51, 52, 53])
def test_fair_share_bounds_the_lp_policies(seed: int) -> None:
    # the fair share is a feasible plan with every normalised throughput 1 and every rho 1
    p = random_round(80, seed=seed)
    state = history_state(build_model(p), seed)
    for space_sharing in (False, True):
        assert gavel_plan(state.model, space_sharing=space_sharing).level >= 1 - 1e-7
        assert ftf_plan(state.model, elapsed_ratio(state), space_sharing=space_sharing).upper <= 1 + 1e-7
    assert gavel_plan(state.model, space_sharing=True).level >= gavel_plan(state.model).level - 1e-7


def test_empty_round() -> None:
    p = RoundProblem.from_dict({"gpus": {"A": 2}, "jobs": []})
    state = RoundState.first_round(build_model(p))
    for name in policy_names():
        assert get_policy(name).allocate(state).placements == ()


@pytest.mark.parametrize("name", ["las", "fifo", "gandiva-fair"])
def test_job_order_independent(name: str) -> None:
    p = random_round(60, seed=21)
    state = history_state(build_model(p), 21)
    perm = np.random.default_rng(0).permutation(p.num_jobs)
    other = permuted(state, perm)
    assert placements(get_policy(name).allocate(state)) == placements(get_policy(name).allocate(other))


@pytest.mark.parametrize("space_sharing", [False, True])
def test_lp_optima_job_order_independent(space_sharing: bool) -> None:
    p = random_round(60, seed=22)
    state = history_state(build_model(p), 22)
    other = permuted(state, np.random.default_rng(1).permutation(p.num_jobs))
    g1 = gavel_plan(state.model, space_sharing=space_sharing)
    g2 = gavel_plan(other.model, space_sharing=space_sharing)
    assert g1.level == pytest.approx(g2.level, rel=1e-7)
    f1 = ftf_plan(state.model, elapsed_ratio(state), space_sharing=space_sharing)
    f2 = ftf_plan(other.model, elapsed_ratio(other), space_sharing=space_sharing)
    assert f1.upper == pytest.approx(f2.upper, rel=1e-6)
    t1 = solve_lp(throughput_lp(state.model, column_mask(state.model, space_sharing))).objective
    t2 = solve_lp(throughput_lp(other.model, column_mask(other.model, space_sharing))).objective
    assert t1 == pytest.approx(t2, rel=1e-7)


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
    assert (alloc.policy, alloc.mode, alloc.message, alloc.status) == ("test-shortest-first", None, "1 placed",
                                                                       Status.HEURISTIC)
    assert len(alloc.placements) == 1 and alloc.solve_seconds >= 0.0
    with pytest.raises(InvalidInputError, match="unknown policy"):
        get_policy("no-such-policy")


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


def test_any_object_with_allocate_is_a_policy() -> None:
    # duck-typed policies are accepted where a Policy is expected (the simulator checks isinstance)
    class Duck:
        name = "duck"

        def allocate(self, state: RoundState) -> Allocation:
            return get_policy("las").allocate(state)

    assert isinstance(Duck(), Policy)
    assert not isinstance(object(), Policy)


@pytest.mark.parametrize("mode", ["fast", "exact"])
@pytest.mark.parametrize("aware", [True, False])
def test_fairshare_policy_reports_its_mode_and_name(mode: str, aware: bool) -> None:
    p = random_round(20, seed=7)
    state = RoundState.first_round(build_model(p))
    for epsilon in (None, 0.4):
        alloc = get_policy("fairshare", mode=mode, heterogeneity_aware=aware, epsilon=epsilon).allocate(state)
        assert (alloc.mode, alloc.policy) == (mode, "fairshare")
        # the allocation is the round as planned: with the override, next deficits use that epsilon
        assert allocation_violations(p if epsilon is None else p.replace(epsilon=epsilon), alloc) == []
    placed = get_policy("fairshare", mode=mode, heterogeneity_aware=aware).place(state)
    assert placed.x.tolist() == [1.0 if v else 0.0 for v in placed.x > 0.5]
    again = get_policy("fairshare", mode=mode, heterogeneity_aware=aware).allocate(state)
    np.testing.assert_array_equal(state.model.job_throughput(placed.x), again.throughput)


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
# F-only jobs a, b and an S-only job c on one F and one S GPU. Fair share: C' = 2 over 3 jobs, e = 2/3, a
# third of the round on each type, so Tfair = 4/3 for everyone and u_j = 3 x_j. Max-min: x_a + x_b <= 1 gives
# level 1.5 at x_a = x_b = 1/2; c alone on S reaches u = 3 with all of S (the refinement gives it all of S).
GAVEL_ROUND = {"gpus": {"F": 1, "S": 1}, "jobs": [
    {"id": "a", "scale": 1, "throughput": {"F": 4.0}},
    {"id": "b", "scale": 1, "throughput": {"F": 4.0}},
    {"id": "c", "scale": 1, "throughput": {"S": 4.0}}]}


def test_gavel_hand_solved_lp_and_round() -> None:
    _, model = round_of(GAVEL_ROUND)
    plan = gavel_plan(model)
    assert plan.level == pytest.approx(1.5)
    assert plan.x[:3] == pytest.approx([0.5, 0.5, 1.0])
    alloc = get_policy("gavel").allocate(RoundState.first_round(model))
    # no history: every positive target has priority inf; ties by target (c's 1.0 first), then job index
    assert job_ids_on(alloc, "S") == {"c"} and job_ids_on(alloc, "F") == {"a"}
    assert alloc.status == Status.HEURISTIC


def test_gavel_priority_uses_received_fraction() -> None:
    p, model = round_of(GAVEL_ROUND)
    base = RoundState.first_round(model, time=1000.0)
    received = np.array([[600.0, 0.0], [300.0, 0.0], [0.0, 900.0]])
    state = RoundState(p, model, 1000.0, 360.0, np.zeros(3), received.sum(1), received, base.done_iterations,
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
    # Tfair = 0.5: alone, x_a + x_b <= 1 caps the level at 1; together both get 0.8 / 0.5 = 1.6 all round
    assert gavel_plan(model).level == pytest.approx(1.0)
    assert gavel_plan(model, space_sharing=True).level == pytest.approx(1.6)
    alloc = get_policy("gavel", space_sharing=True).allocate(RoundState.first_round(model))
    assert placements(alloc) == {(frozenset({"a", "b"}), "V100", 1)}
    assert alloc.status == Status.OPTIMAL  # the plan is integral and placed as is


# -------------------------------------------------------------------------------------------------------- ftf
def ftf_state() -> tuple[RoundProblem, RoundState]:
    """GAVEL_ROUND with history: ``b`` arrived 900 s ago with 400 iterations left (a_b = 900 * (4/3) / 400 =
    3); ``a`` and ``c`` arrive now."""
    p, model = round_of(GAVEL_ROUND)
    z = np.zeros(3)
    return p, RoundState(p, model, 900.0, 360.0, np.array([900.0, 0.0, 900.0]), z, np.zeros((3, 2)), z,
                         np.full(3, 400.0))


def test_ftf_hand_solved() -> None:
    # rho_a = 1 / u_a, rho_b = (3 + 1 / u_b) / 4 with u_a + u_b <= 3. Equal rho at the optimum:
    # (3 + 1/w) / 4 = 1 / (3 - w)  =>  3 w^2 - 4 w - 3 = 0  =>  w = u_b = (4 + sqrt(52)) / 6.
    _, state = ftf_state()
    np.testing.assert_allclose(elapsed_ratio(state), [0.0, 3.0, 0.0])
    w = (4 + math.sqrt(52)) / 6
    plan = ftf_plan(state.model, elapsed_ratio(state), tol=1e-9)
    assert plan.upper == pytest.approx(1 / (3 - w), rel=1e-6)
    assert plan.x[:2] == pytest.approx([(3 - w) / 3, w / 3], rel=1e-5)
    # FTF favours b, whose rho is the worst under Gavel's even split ((3 + 1/1.5) / 4 = 0.917 > 1 / 1.5)
    alloc = get_policy("ftf").allocate(state)
    assert job_ids_on(alloc, "F") == {"b"} and job_ids_on(alloc, "S") == {"c"}
    assert alloc.status == Status.HEURISTIC
    assert job_ids_on(get_policy("gavel").allocate(state), "F") == {"a"}


def test_ftf_without_history_is_max_min() -> None:
    p = random_round(30, seed=31)
    model = build_model(p)
    plan = ftf_plan(model, np.zeros(p.num_jobs))
    assert plan.upper == pytest.approx(1 / gavel_plan(model).level, rel=1e-6)


def test_ftf_bounds_close() -> None:
    p = random_round(40, seed=32)
    state = history_state(build_model(p), 32)
    plan = ftf_plan(state.model, elapsed_ratio(state), refine=False, tol=1e-6)
    assert plan.lower <= plan.upper * (1 + 1e-9)
    assert plan.upper - plan.lower <= 1e-6 * plan.upper
    assert plan.upper <= 1.0 + 1e-9  # the fair share has rho = 1 for every job
    assert plan.rho.max() == pytest.approx(plan.upper)


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
        assert alloc.efficiency == pytest.approx(2.0)
        assert alloc.status == Status.OPTIMAL


def test_max_throughput_prefers_best_pair() -> None:
    doc = {"gpus": {"V100": 1}, "jobs": [{"id": x, "scale": 1, "throughput": {"V100": 10.0}} for x in "abc"],
           "colocation": [{"jobs": ["a", "b"], "gpu": "V100", "throughput": [9.0, 9.0]},
                          {"jobs": ["a", "c"], "gpu": "V100", "throughput": [5.0, 6.0]}]}
    _, model = round_of(doc)
    alloc = get_policy("max-throughput").allocate(RoundState.first_round(model))
    assert placements(alloc) == {(frozenset({"a", "b"}), "V100", 1)}
    assert alloc.efficiency == pytest.approx(1.8)
    alone = get_policy("max-throughput", space_sharing=False).allocate(RoundState.first_round(model))
    assert len(alone.placements) == 1 and alone.efficiency == pytest.approx(1.0)


# -------------------------------------------------------------------------------------------------------- las
def test_las_hand_solved() -> None:
    doc = {"gpus": {"A": 2, "B": 1}, "jobs": [
        {"id": "j0", "scale": 1, "throughput": {"A": 1.0, "B": 100.0}},
        {"id": "j1", "scale": 1, "throughput": {"A": 1.0, "B": 100.0}},
        {"id": "j2", "scale": 1, "throughput": {"A": 1.0, "B": 100.0}},
        {"id": "j3", "scale": 1, "throughput": {"A": 100.0, "B": 1.0}}]}
    p, model = round_of(doc)
    base = RoundState.first_round(model, time=50.0)
    attained = np.array([100.0, 10.0, 50.0, 0.0])
    state = RoundState(p, model, 50.0, 360.0, np.zeros(4), attained, base.received, base.done_iterations,
                       base.remaining_iterations)
    alloc = get_policy("las").allocate(state)
    # order j3, j1, j2, j0; j3 -> A (2 free GPUs against 1), j1 -> A (1 free each: ties go to the first type)
    # although it is 100x faster on B, j2 -> B; j0 waits. Throughputs are never looked at.
    assert job_ids_on(alloc, "A") == {"j3", "j1"} and job_ids_on(alloc, "B") == {"j2"}


# ------------------------------------------------------------------------------------------------------- fifo
def test_fifo_hand_solved() -> None:
    doc = {"gpus": {"fast": 1, "slow": 1}, "jobs": [
        {"id": f"j{i}", "scale": 1, "throughput": {"fast": 10.0, "slow": 5.0}} for i in range(3)]}
    p, model = round_of(doc)
    base = RoundState.first_round(model, time=10.0)
    state = RoundState(p, model, 10.0, 360.0, np.array([5.0, 1.0, 3.0]), base.attained_service, base.received,
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
