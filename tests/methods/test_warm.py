"""Warm rounds (issue 14 part 1): the priced LP and the warm start give the cold answers, faster."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fairshare import Engine, allocate
from fairshare.errors import InvalidInputError
from fairshare.formulation import build_model
from fairshare.methods import fast, warm
from fairshare.methods.lp import solve_relaxation
from fairshare.methods.options import SolveOptions
from fairshare.methods.relax import polish_thresholds, round_relaxation
from fairshare.methods.rounding import is_feasible
from fairshare.methods.solved import relative_gap
from fairshare.policies.base import RoundState
from fairshare.policies.fairshare import FairsharePolicy
from fairshare.problem import RoundProblem
from fairshare.solvers.highs import IncrementalLP
from fairshare.testing.consecutive import consecutive_rounds
from fairshare.testing.random_rounds import random_round
from fairshare.testing.strategies import round_problems
from tests._examples import load_benchmark

WARM = SolveOptions(warm_start=True)
COLD = SolveOptions()
DEFAULT_MIN_COLUMNS = warm.PRICING_MIN_COLUMNS


@pytest.fixture(autouse=True)
def _price_small_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Price every round, however small (by default rounds under PRICING_MIN_COLUMNS columns are not)."""
    monkeypatch.setattr(warm, "PRICING_MIN_COLUMNS", 0)


def _rounds(jobs: int, rounds: int, *, churn: int = 4, seed: int = 0, **kw: float) -> list[RoundProblem]:
    """Consecutive rounds: ``churn`` departures and arrivals per round, deficits carried from fast."""
    return consecutive_rounds(jobs, rounds, churn=churn, seed=seed, **kw)


def _assert_same_lp(model, priced, cold) -> None:
    """Same optimum; the priced duals are optimal for every column of the whole LP (complementary slackness)."""
    assert priced.optimal and priced.x is not None and priced.row_dual is not None
    assert abs(priced.objective - cold.objective) <= 1e-9 * max(1.0, abs(cold.objective))
    lp = model.tightened_lp()
    d = warm.reduced_costs(model, lp.cost, priced.row_dual)
    tol = 1e-6 * max(1.0, float(np.abs(lp.cost).max(initial=0.0)))
    x = priced.x
    assert (d[x < 1 - 1e-7] <= tol).all()  # below its upper bound (every column never added): d <= 0
    assert (d[x > 1e-7] >= -tol).all()  # above 0: d >= 0
    assert priced.row_dual.min(initial=0.0) >= -1e-7
    assert priced.col_dual is not None
    np.testing.assert_allclose(priced.col_dual, d, atol=1e-6 * max(1.0, float(np.abs(lp.cost).max(initial=0.0))))
    assert abs(float(model.value @ priced.x) - cold.objective) <= 1e-7 * max(1.0, abs(cold.objective))
    assert is_feasible_fractional(model, priced.x)


def is_feasible_fractional(model, x: np.ndarray) -> bool:
    lp = model.tightened_lp()
    act = lp.matrix @ x
    return bool((x >= -1e-9).all() and (x <= 1 + 1e-9).all() and (act <= lp.row_upper + 1e-7).all())


def _assert_rules(model, r) -> None:
    """The rounding's certified-gap rules: feasible, below the bound, and polished whenever a gap is large."""
    assert is_feasible(model, r.x)
    value = float(model.value @ r.x)
    assert value <= r.bound * (1 + 1e-9) + 1e-9
    assert r.bound <= r.lp_bound * (1 + 1e-12) + 1e-9
    value_gap, _ = polish_thresholds(model, COLD)
    if relative_gap(r.lp_bound, value) > value_gap:
        assert "local search" in r.message or "polished" in r.message


# ---------------------------------------------------------------------------------------------- the priced LP
@pytest.mark.parametrize(("n", "seed", "lam"), [(64, 0, 100.0), (256, 1, 100.0), (200, 2, 1.0), (400, 3, 10.0)])
def test_priced_lp_is_the_cold_optimum(n: int, seed: int, lam: float) -> None:
    model = build_model(random_round(n, seed=seed, fairness_weight=lam))
    lp = model.tightened_lp()
    cold = solve_relaxation(model, lp, COLD)
    priced = warm.solve_priced(model, lp, COLD)
    _assert_same_lp(model, priced, cold)


def test_priced_lp_adds_columns_until_none_prices_out() -> None:
    model = build_model(random_round(512, seed=4))
    state = warm.WarmStart()
    warm.solve_priced(model, model.tightened_lp(), COLD, state)
    assert state.passes >= 2  # prices 0 miss columns: they were added
    assert state.columns < model.columns.num  # and not all of them


def test_small_rounds_solve_the_whole_lp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warm, "PRICING_MIN_COLUMNS", DEFAULT_MIN_COLUMNS)
    model = build_model(random_round(256, seed=0))
    assert model.columns.num < warm.PRICING_MIN_COLUMNS
    lp = model.tightened_lp()
    state = warm.WarmStart()
    for _ in range(2):
        out = warm.solve_priced(model, lp, COLD, state)
        assert state.passes == 1 and state.columns == model.columns.num
        # solved as cold rounds are, with HiGHS's presolve off: it removes nothing from this round, so the
        # same point and duals
        cold = solve_relaxation(model, lp, COLD)
        np.testing.assert_array_equal(out.x, cold.x)
        np.testing.assert_array_equal(out.row_dual, cold.row_dual)
    assert state.seeded


def test_small_rounds_turn_presolve_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warm, "PRICING_MIN_COLUMNS", DEFAULT_MIN_COLUMNS)
    import fairshare.solvers.highs as highs

    seen: list[dict | None] = []
    solve = highs.solve_highs

    def spy(lp, **options):  # type: ignore[no-untyped-def]
        seen.append(options.get("extra_options"))
        return solve(lp, **options)

    monkeypatch.setattr(highs, "solve_highs", spy)
    model = build_model(random_round(64, seed=1))
    warm.solve_priced(model, model.tightened_lp(), COLD, warm.WarmStart())
    solve_relaxation(model, model.tightened_lp(), COLD)
    assert seen == [{"presolve": "off"}, None]  # the warm small round without presolve, a cold one with it


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(round_problems(min_jobs=1, max_jobs=12))
def test_property_presolve_off_finds_the_same_optimum(problem: RoundProblem) -> None:
    """Without HiGHS's presolve the LP has the same optimum (the point may differ only where presolve removed
    something and the optimum is not unique), and its duals are optimal for it."""
    model = build_model(problem)
    lp = model.tightened_lp()
    on, off = solve_relaxation(model, lp, COLD), solve_relaxation(model, lp, COLD, presolve=False)
    assert off.optimal and off.x is not None
    assert abs(off.objective - on.objective) <= 1e-9 * max(1.0, abs(on.objective))
    _assert_same_lp(model, off, on)


def test_pricing_passes_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warm, "MAX_PRICING_PASSES", 1)
    model = build_model(random_round(256, seed=5))
    lp = model.tightened_lp()
    state = warm.WarmStart()
    out = warm.solve_priced(model, lp, COLD, state)
    assert state.columns == model.columns.num  # the cap added every column left out at once
    _assert_same_lp(model, out, solve_relaxation(model, lp, COLD))


def test_empty_and_tiny_rounds() -> None:
    p = RoundProblem.from_dict({"gpus": {"A": 1}, "jobs": [{"id": "a", "scale": 1, "throughput": {"A": 2.0}}]})
    state = warm.WarmStart()
    for _ in range(2):
        a = allocate(p, mode="fast", warm_start=True)
        b = allocate(p, mode="fast", warm_start=True, warm=state)
        assert [q.jobs for q in a.placements] == [q.jobs for q in b.placements] == [("a",)]
    assert state.rounds == 2 and state.seeded


# ---------------------------------------------------------------------------------------------- consecutive rounds
@pytest.mark.parametrize("use_basis", [None, False, True])
def test_warm_rounds_give_the_cold_answers(use_basis: bool | None) -> None:
    problems = _rounds(300, 6, churn=6, seed=7)
    state = warm.WarmStart(use_basis=use_basis)
    same = 0
    for k, p in enumerate(problems):
        model = build_model(p)
        lp = model.tightened_lp()
        cold_lp = solve_relaxation(model, lp, COLD)
        priced = warm.solve_priced(model, lp, COLD, state)
        assert state.seeded == (k > 0)
        _assert_same_lp(model, priced, cold_lp)
        cold = round_relaxation(model, lp, COLD)
        hot = round_relaxation(model, lp, WARM, warm=_copy(state, model, lp))
        assert abs(hot.lp_bound - cold.lp_bound) <= 1e-9 * abs(cold.lp_bound)
        _assert_rules(model, hot)
        if np.allclose(priced.x, cold_lp.x, atol=1e-9) and "polished" not in cold.message + hot.message:
            np.testing.assert_array_equal(hot.x, cold.x)  # same LP point, no polish: the same placement
            same += 1
    assert same >= 1


def _copy(state: warm.WarmStart, model, lp) -> warm.WarmStart:
    """A state one round behind ``state`` would give the same seed; re-seeding from ``state`` is enough here."""
    return state._copy()


def test_warm_fast_placements_equal_cold_on_a_catalog_sequence() -> None:
    # 1,024-job rounds: the LP optimum is unique here and no polish runs, so warm and cold place alike
    problems = _rounds(1024, 4, churn=8, seed=1)
    state = warm.WarmStart()
    for p in problems:
        model = build_model(p)
        cold = fast.solve(model, COLD)
        hot = fast.solve(model, WARM, warm=state)
        np.testing.assert_array_equal(hot.x, cold.x)
        assert hot.bound == pytest.approx(cold.bound, rel=1e-9)
    assert state.rounds == 4 and state.seeded


# ---------------------------------------------------------------------------------------------- irrelevant starts
def _renamed(p: RoundProblem, prefix: str) -> RoundProblem:
    return p.replace(job_ids=tuple(prefix + j for j in p.job_ids))


def _only(p: RoundProblem, types: tuple[str, ...]) -> RoundProblem:
    """``p`` on some of its GPU types (V100 among them: every job of random_round can run there)."""
    d = p.to_dict()
    d["gpus"] = {g: c for g, c in d["gpus"].items() if g in types}
    for job in d["jobs"]:
        job["throughput"] = {g: t for g, t in job["throughput"].items() if g in types}
    d["colocation"] = [c for c in d["colocation"] if c["gpu"] in types]
    return RoundProblem.from_dict(d)


@pytest.mark.parametrize("use_basis", [None, False, True])
def test_irrelevant_previous_round_gives_the_cold_answer(use_basis: bool | None) -> None:
    first = random_round(200, seed=11)
    others = {
        "all jobs replaced": _renamed(random_round(200, seed=12), "new-"),
        "other gpu types": random_round(200, seed=13).replace(gpu_types=("A", "B", "C", "D")),
        "fewer types": _only(first, ("V100", "H200")),
        "more types": first,
        "same ids, other jobs": random_round(260, seed=15),
    }
    for name, p in others.items():
        state = warm.WarmStart(use_basis=use_basis)
        m0 = build_model(_only(first, ("V100",)) if name == "more types" else first)
        warm.solve_priced(m0, m0.tightened_lp(), COLD, state)
        model = build_model(p)
        lp = model.tightened_lp()
        out = warm.solve_priced(model, lp, COLD, state)
        assert state.seeded, name
        _assert_same_lp(model, out, solve_relaxation(model, lp, COLD))


def test_basis_is_used_when_values_moved_little() -> None:
    # the same jobs with their deficits held: the previous basis is taken, and saves most iterations
    p = random_round(600, seed=3)
    model = build_model(p)
    lp = model.tightened_lp()
    auto, prices = warm.WarmStart(), warm.WarmStart(use_basis=False)
    for state in (auto, prices):
        warm.solve_priced(model, lp, COLD, state)
    again = build_model(p.take_jobs(np.arange(4, 600)))  # four jobs left; deficits as they were
    cold = solve_relaxation(again, again.tightened_lp(), COLD)
    for state in (auto, prices):
        _assert_same_lp(again, warm.solve_priced(again, again.tightened_lp(), COLD, state), cold)
    assert auto.used_basis and not prices.used_basis
    assert auto.iterations < prices.iterations / 2
    # deficits moved for most jobs: the basis is left aside
    moved = build_model(p.replace(deficit=p.deficit + np.where(np.arange(600) % 2 == 0, 1.0, 0.0)))
    out = warm.solve_priced(moved, moved.tightened_lp(), COLD, auto)
    assert auto.seeded and not auto.used_basis
    _assert_same_lp(moved, out, solve_relaxation(moved, moved.tightened_lp(), COLD))


def test_garbage_basis_still_gives_the_optimum() -> None:
    p = random_round(300, seed=21)
    model = build_model(p)
    lp = model.tightened_lp()
    state = warm.WarmStart(use_basis=True)
    warm.solve_priced(model, lp, COLD, state)
    rng = np.random.default_rng(0)
    assert state._fetch_basis() and state._col_status is not None and state._row_status is not None
    state._col_status = rng.integers(0, 3, len(state._col_status)).astype(np.int8)
    state._row_status = rng.integers(0, 3, len(state._row_status)).astype(np.int8)
    state._col_cost = None if state._col_cost is None else state._col_cost * rng.uniform(0, 2, len(state._col_cost))
    state._prices = rng.uniform(0, 1e4, len(p.gpu_types))
    out = warm.solve_priced(model, lp, COLD, state)
    _assert_same_lp(model, out, solve_relaxation(model, lp, COLD))


def test_a_failed_restricted_solve_falls_back_to_the_cold_lp(monkeypatch: pytest.MonkeyPatch) -> None:
    from fairshare.errors import SolverError

    def broken(*args, **kwargs):
        raise SolverError("broken on purpose")

    model = build_model(random_round(100, seed=3))
    lp = model.tightened_lp()
    state = warm.WarmStart()
    warm.solve_priced(model, lp, COLD, state)
    monkeypatch.setattr(warm, "_price", broken)
    out = warm.solve_priced(model, lp, COLD, state)
    assert state.empty  # reset
    _assert_same_lp(model, out, solve_relaxation(model, lp, COLD))


def test_deadline_already_past() -> None:
    model = build_model(random_round(100, seed=3))
    out = warm.solve_priced(model, model.tightened_lp(), COLD, deadline=0.0)
    assert out.x is None and str(out.termination) == "time_limit"
    r = round_relaxation(model, model.tightened_lp(), WARM, deadline=0.0)
    assert is_feasible(model, r.x) and "greedy by value" in r.message


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(round_problems(min_jobs=1, max_jobs=10), st.data())
def test_property_warm_lp_equals_cold_lp(problem: RoundProblem, data: st.DataObject) -> None:
    """From any previous round (here: a random sub-round with other deficits), the LP optimum is the cold one."""
    n = problem.num_jobs
    keep = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
    deficit = data.draw(st.lists(st.integers(0, 30).map(lambda v: v / 10), min_size=len(keep), max_size=len(keep)))
    before = problem.take_jobs(sorted(keep))
    before = before.replace(deficit=np.array(deficit))
    state = warm.WarmStart(use_basis=data.draw(st.sampled_from([None, False, True])))
    m0 = build_model(before)
    warm.solve_priced(m0, m0.tightened_lp(), COLD, state)
    model = build_model(problem)
    lp = model.tightened_lp()
    out = warm.solve_priced(model, lp, COLD, state)
    _assert_same_lp(model, out, solve_relaxation(model, lp, COLD))
    r = round_relaxation(model, lp, WARM, warm=state)
    _assert_rules(model, r)


# ---------------------------------------------------------------------------------------------- options, Engine, policy
def test_option_is_checked() -> None:
    with pytest.raises(InvalidInputError, match="warm_start"):
        SolveOptions(warm_start=1)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="applies to mode fast only"):
        SolveOptions(warm_start=True).for_mode("exact")
    assert SolveOptions().warm_start is False
    with pytest.raises(InvalidInputError, match="use_basis"):
        warm.WarmStart(use_basis=1)  # type: ignore[arg-type]


def _jobs(p: RoundProblem) -> list[dict]:
    return [{k: v for k, v in j.items() if k != "deficit"} for j in p.to_dict()["jobs"]]


def test_engine_keeps_its_warm_start_between_plans() -> None:
    problems = _rounds(120, 4, churn=3, seed=2)
    gpus = dict(zip(problems[0].gpu_types, problems[0].capacity.tolist()))
    hot = Engine(gpus, options={"warm_start": True}, priority="none")
    cold = Engine(gpus, priority="none")
    for p in problems:
        a = hot.plan(_jobs(p))
        b = cold.plan(_jobs(p))
        assert a.report.bound == pytest.approx(b.report.bound, rel=1e-6)  # LP bound or a polished one: both certified
        assert a.values.objective <= a.report.bound + 1e-6 and b.values.objective <= b.report.bound + 1e-6
        hot.commit(a)
        cold.commit(b)
        if dict(hot.deficits) != dict(cold.deficits):  # a tie broken otherwise: the rounds diverge from here
            break
    assert hot._warm.rounds >= 1
    assert cold._warm.rounds == 0
    assert "warm_start" in hot.state()["options"]
    again = Engine.from_state(hot.state())
    assert again.options.warm_start and again._warm.empty  # not saved: the first plan after a load is cold


def test_engine_plan_again_within_a_round_starts_from_the_basis() -> None:
    p = random_round(300, seed=6)
    gpus = dict(zip(p.gpu_types, p.capacity.tolist()))
    eng = Engine(gpus, options={"warm_start": True}, priority="none")
    jobs = _jobs(p)
    first = eng.plan(jobs[:-2])
    assert not eng._warm.seeded
    again = eng.plan(jobs)  # two arrivals before the round starts: the plan is made again, deficits unchanged
    assert eng._warm.seeded and eng._warm.used_basis
    cold = Engine(gpus, priority="none").plan(jobs)
    assert again.report.bound == pytest.approx(cold.report.bound, rel=1e-9)
    assert first.values.objective <= first.report.bound + 1e-6


def test_policy_cache_pickles_empty_and_is_not_compared() -> None:
    pol = FairsharePolicy(options={"warm_start": True})
    state = RoundState.first_round(build_model(random_round(60, seed=1)), time=0.0)
    pol.allocate(state)
    assert not pol._warm._state.empty
    copy = pickle.loads(pickle.dumps(pol))
    assert copy == pol and repr(copy) == repr(pol)
    assert copy._warm._state.empty
    assert dataclasses.replace(pol, mode="fast")._warm is not pol._warm


def test_policy_resets_its_state_for_a_new_run() -> None:
    pol = FairsharePolicy(options={"warm_start": True}, priority="none")
    model = build_model(random_round(60, seed=1))
    pol.allocate(RoundState.first_round(model, time=0.0))
    pol.allocate(RoundState.first_round(model, time=360.0))
    assert pol._warm._state.rounds == 2 and pol._warm._state.seeded
    pol.allocate(RoundState.first_round(model, time=0.0))  # time went back: a new run
    assert pol._warm._state.rounds == 3 and not pol._warm._state.seeded


def test_policy_warm_and_cold_agree_on_a_round() -> None:
    model = build_model(random_round(300, seed=8))
    state = RoundState.first_round(model, time=0.0)
    hot = FairsharePolicy(options={"warm_start": True}, priority="none").allocate(state)
    cold = FairsharePolicy(priority="none").allocate(state)
    assert hot.values.objective == pytest.approx(cold.values.objective, rel=1e-9)


def test_warm_start_pickles_empty() -> None:
    state = warm.WarmStart(use_basis=True)
    model = build_model(random_round(40, seed=0))
    warm.solve_priced(model, model.tightened_lp(), COLD, state)
    copy = pickle.loads(pickle.dumps(state))
    assert copy.empty and copy.use_basis and not state.empty


# ---------------------------------------------------------------------------------------------- benchmark smoke
def test_bench_warm_quick(tmp_path) -> None:
    mod = load_benchmark("bench_warm")
    assert mod.main(["--quick", "--jobs", "96", "--rounds", "3", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "bench_warm.md").read_text()
    for variant in mod.VARIANTS:
        assert f"| {variant} |" in text
    assert "## A long queue: an eighth as many GPUs as jobs" in text and "96 jobs on 12 GPUs" in text
    # the job rows each LP kept (this module prices every round): all 96 with 48 GPUs, fewer with 12
    kept = [int(line.split("|")[11]) for line in text.splitlines() if line.startswith("| warm |")]
    assert len(kept) == 3 and kept[0] == 96 and kept[2] < 96


def test_fractional_and_empty_rounds() -> None:
    frac = RoundProblem.from_dict({"gpus": {"A": 2, "B": 1}, "jobs": [
        {"id": "a", "scale": 0.5, "throughput": {"A": 2.0, "B": 3.0}},
        {"id": "b", "scale": 0.25, "throughput": {"A": 1.0}},
        {"id": "c", "scale": 1, "throughput": {"A": 4.0, "B": 5.0}},
        {"id": "d", "scale": 2, "throughput": {"A": 6.0}}]})
    model = build_model(frac)
    lp = model.tightened_lp()
    state = warm.WarmStart()
    for _ in range(2):
        _assert_same_lp(model, warm.solve_priced(model, lp, COLD, state), solve_relaxation(model, lp, COLD))
    empty = RoundProblem.from_dict({"gpus": {"A": 1}, "jobs": []})
    a = allocate(empty, mode="fast", warm_start=True, warm=state)
    assert a.placements == ()


def _seed_by_sorting(model, cost: np.ndarray, prices: np.ndarray) -> np.ndarray:
    """The seed columns as first written: every (job, column) entry sorted by job, then score, then position."""
    c, n = model.columns, model.problem.num_jobs
    score = cost - c.size * prices[c.gpu]
    pairs = np.flatnonzero(c.is_pair)
    owner = np.concatenate([c.job_a, c.job_b[pairs]])
    col = np.concatenate([np.arange(c.num), pairs])
    order = np.lexsort((-score[col], owner))
    first = np.searchsorted(owner[order], np.arange(n))
    rank = np.arange(len(order)) - first[owner[order]]
    keep = np.zeros(c.num, bool)
    keep[col[order[rank < warm.SEED_COLUMNS]]] = True
    return np.flatnonzero(keep & (cost > 0))


@given(problem=round_problems(max_jobs=14), prices=st.lists(st.sampled_from([0.0, 0.5, 1.0, 50.0]), min_size=4,
                                                            max_size=4))
def test_seed_columns_are_each_jobs_best_with_ties_broken_by_position(problem, prices) -> None:
    # tenths for throughputs and small weights: many columns of a job have equal scores
    model = build_model(problem)
    cost = np.asarray(model.value, np.float64)
    y = np.asarray(prices[: len(problem.gpu_types)])
    got = warm._seed_columns(model, cost, y, np.zeros(model.columns.num, bool))
    np.testing.assert_array_equal(got, _seed_by_sorting(model, cost, y))


# ------------------------------------------------------------------------------------- rows priced (long queue)
def _solved_in_turn(problems, state: warm.WarmStart):
    """Solve the rounds in turn, warm with ``state``; yield each (round, model, LP, cold LP) once checked."""
    for p in problems:
        model = build_model(p)
        lp = model.tightened_lp()
        cold = solve_relaxation(model, lp, COLD)
        _assert_same_lp(model, warm.solve_priced(model, lp, COLD, state), cold)
        yield p, model, lp, cold


@pytest.mark.parametrize(("jobs", "gpus", "seed"), [(400, 40, 0), (600, 64, 1), (500, 30, 2)])
def test_a_long_queue_prices_rows_and_keeps_the_cold_optimum(jobs: int, gpus: int, seed: int) -> None:
    # many more jobs than GPUs: with the previous prices most jobs start outside the LP, rows and all
    problems = consecutive_rounds(jobs, 5, churn=6, seed=seed, num_gpus=gpus)
    state = warm.WarmStart()
    restricted = 0
    for p, _, _, _ in _solved_in_turn(problems, state):
        restricted += state.job_rows < p.num_jobs
        assert state.job_rows <= p.num_jobs
    assert restricted >= 2  # rounds after the first had prices, and used them to leave rows out


def test_rows_left_out_come_back_when_their_columns_price_out() -> None:
    # prices far too high leave every job out at first; pricing brings back what the optimum needs
    p = consecutive_rounds(300, 1, seed=3, num_gpus=40)[0]
    model = build_model(p)
    lp = model.tightened_lp()
    state = warm.WarmStart()
    warm.solve_priced(model, lp, COLD, state)
    state._prices = np.full(len(p.gpu_types), 1e9)
    assert state._job_duals is not None
    state._job_duals[:] = 0.0  # no job had a positive dual: the first LP has no job row and no column
    state.use_basis = False
    out = warm.solve_priced(model, lp, COLD, state)
    _assert_same_lp(model, out, solve_relaxation(model, lp, COLD))
    assert state.passes >= 2 and state.job_rows > 0


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), gpus=st.integers(8, 60), scale=st.floats(0.0, 3.0))
def test_priced_rows_from_any_prices_give_the_optimum(seed: int, gpus: int, scale: float) -> None:
    p = consecutive_rounds(200, 1, seed=seed, num_gpus=gpus)[0]
    model = build_model(p)
    lp = model.tightened_lp()
    state = warm.WarmStart(use_basis=False)
    warm.solve_priced(model, lp, COLD, state)  # the state now has this round's prices: rows get left out
    state._prices = np.asarray(state._prices) * scale  # prices too low or too high
    state._job_duals = np.asarray(state._job_duals) * np.random.default_rng(seed).uniform(0, 2, p.num_jobs)
    out = warm.solve_priced(model, lp, COLD, state)
    _assert_same_lp(model, out, solve_relaxation(model, lp, COLD))


@pytest.mark.parametrize("batch", [1, 7, 10_000])
def test_batched_pricing_keeps_the_cold_optimum(monkeypatch: pytest.MonkeyPatch, batch: int) -> None:
    # a pass adds at most max(PRICING_BATCH, GPUs) columns, the largest reduced costs first: more passes,
    # the same optimum, and never more columns per pass than that
    monkeypatch.setattr(warm, "PRICING_BATCH", batch)
    added: list[int] = []
    original = IncrementalLP.add_columns

    def counted(self, cost, matrix):  # type: ignore[no-untyped-def]
        added.append(len(cost))
        return original(self, cost, matrix)

    monkeypatch.setattr(IncrementalLP, "add_columns", counted)
    p = consecutive_rounds(300, 1, seed=3, num_gpus=40)[0]
    model = build_model(p)
    lp = model.tightened_lp()
    state = warm.WarmStart(use_basis=False)
    warm.solve_priced(model, lp, COLD, state)
    state._prices = np.full(len(p.gpu_types), 1e9)  # every job starts outside: most columns price out at once
    assert state._job_duals is not None
    state._job_duals[:] = 0.0
    added.clear()
    _assert_same_lp(model, warm.solve_priced(model, lp, COLD, state), solve_relaxation(model, lp, COLD))
    limit = max(batch, p.total_gpus)
    assert added and max(added) <= limit
    if batch < p.total_gpus:
        assert max(added) == limit and state.passes >= 3  # the cap bound, so more passes were needed
    else:
        assert max(added) > p.total_gpus  # without a binding cap one pass adds more than the GPU count


def test_the_kept_basis_covers_the_rows_left_out() -> None:
    # a round whose LP left rows out keeps a basis over all its rows: planned again from it, the same round
    # needs (almost) no simplex iteration, with the same rows left out
    problems = consecutive_rounds(400, 6, churn=4, seed=5, num_gpus=30)
    state = warm.WarmStart()
    checked = 0
    for p, model, lp, cold in _solved_in_turn(problems, state):
        if state.job_rows < p.num_jobs and state._pending is not None:
            rows = np.sort(state._pending[2][state._pending[2] < p.num_jobs])
            before = state.iterations
            again = warm.WarmStart(use_basis=True)
            for name in ("_ids", "_jobs", "_job_keys", "_types", "_prices", "_job_duals", "_col_keys", "_col_cost",
                         "_pending"):
                setattr(again, name, getattr(state, name))
            _assert_same_lp(model, warm.solve_priced(model, lp, COLD, again), cold)
            assert again.used_basis and again.job_rows < p.num_jobs
            assert again.iterations <= max(5, before // 20), (again.iterations, before)
            assert again._fetch_basis() and again._row_status is not None
            assert len(again._row_status) == p.num_jobs + len(p.gpu_types)
            out_of_lp = np.setdiff1d(np.arange(p.num_jobs), rows)
            assert len(out_of_lp)
            checked += 1
    assert checked >= 1


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 25), m=st.integers(1, 30),
       density=st.floats(0.05, 0.7), repeat=st.booleans(), sort_rows=st.booleans())
def test_sub_columns_is_scipys_indexing(seed: int, n: int, m: int, density: float, repeat: bool,
                                        sort_rows: bool) -> None:
    """The restricted LP's columns (and rows) taken without scipy: the same CSC arrays, entry for entry."""
    import scipy.sparse as sp
    rng = np.random.default_rng(seed)
    a = sp.random(n, m, density=density, format="csc", random_state=seed)
    cols = rng.choice(m, int(rng.integers(0, m + 1)), replace=repeat)
    rows = rng.permutation(n)[:int(rng.integers(0, n + 1))]
    if sort_rows:
        rows = np.sort(rows)
    pos = np.full(n, -1, np.int64)
    pos[rows] = np.arange(len(rows))
    for want, got in ((a[:, cols][rows].tocsc(), warm._sub_columns(a, cols, pos, len(rows))),
                      (a[:, cols].tocsc(), warm._sub_columns(a, cols))):
        assert got.shape == want.shape
        assert np.array_equal(got.indptr, want.indptr)
        assert np.array_equal(got.indices, want.indices)
        assert np.array_equal(got.data, want.data)
        assert got.nnz == want.nnz and (got.to_scipy() != want).nnz == 0  # a valid CSC form, as scipy checks it


def test_a_reused_highs_object_solves_as_a_new_one() -> None:
    """An IncrementalLP in the object of an earlier one (cleared, default options) runs as in a new object,
    whatever the earlier one was set to (a deadline's time limit, a basis, more columns)."""
    first, second = (build_model(random_round(n, seed=s)).tightened_lp() for n, s in ((60, 1), (90, 2)))
    old = IncrementalLP(first, seed=3)
    old.highs.setOptionValue("time_limit", 1e-9)
    assert not old.run().optimal  # the time limit left in the object
    fresh, reused = IncrementalLP(second, seed=3), IncrementalLP(second, seed=3, reuse=old.highs)
    assert reused.highs is old.highs
    a, b = fresh.run(), reused.run()
    assert a.optimal and b.optimal and a.x is not None and b.x is not None
    assert np.array_equal(a.x, b.x) and a.objective == b.objective
    assert fresh.iterations == reused.iterations
    assert fresh.basis() is not None and np.array_equal(fresh.basis()[0], reused.basis()[0])


def test_warm_rounds_reuse_one_highs_object() -> None:
    """Consecutive priced rounds solve in the object the round before kept; a reset drops it."""
    state = warm.WarmStart()
    seen = []
    for problem in _rounds(200, 3):
        allocate(problem, mode="fast", warm_start=True, warm=state)
        seen.append(state._highs)
    assert seen[0] is not None and all(h is seen[0] for h in seen)
    state.reset()
    assert state._highs is None


def test_a_deadline_counts_from_now_on_an_object_that_ran_before() -> None:
    """HiGHS's run clock adds up over an object's runs; a deadline's limit is the time left from now.

    The object runs until its clock holds 20 times one run; a deadline half that far away leaves ten runs'
    time, which a limit set from the clock's zero (as before) would already have used up.
    """
    import time

    lp = build_model(random_round(300, seed=4)).tightened_lp()
    inc = IncrementalLP(lp)
    assert inc.run().optimal
    one = inc.highs.getRunTime()
    while inc.highs.getRunTime() < 20 * one:
        inc.highs.clearSolver()
        assert inc.run().optimal
    used = inc.highs.getRunTime()
    again = IncrementalLP(lp, reuse=inc.highs)
    assert again.highs.getRunTime() >= used  # clearing the model does not reset the clock
    out = again.run(deadline=time.perf_counter() + used / 2)
    assert out.optimal


def test_warm_rounds_with_a_deadline_keep_the_last_lp() -> None:
    """A round with a deadline solves in an object of its own; the state keeps the last round's LP and object."""
    import time

    state = warm.WarmStart()
    problems = _rounds(200, 2)
    allocate(problems[0], mode="fast", warm_start=True, warm=state)
    kept, pending = state._highs, state._pending
    assert kept is not None and pending is not None
    out = warm.solve_priced(build_model(problems[1]), build_model(problems[1]).tightened_lp(),
                            SolveOptions(warm_start=True), state, deadline=time.perf_counter() - 1.0)
    assert not out.optimal  # the deadline had passed
    assert state._highs is kept and state._pending is pending
    copy = dataclasses.replace(state)
    assert copy._highs is None and copy._pending is None  # a copy never shares the HiGHS object


# ---------------------------------------------------------------------------------------------- jobs matched by keys
def _keyed(p: RoundProblem, space: object, key_of: dict[str, int]) -> RoundProblem:
    """``p`` as the simulator builds its rounds: checked arrays, jobs numbered by ``key_of`` in ``space``."""
    return RoundProblem.from_trusted_arrays(
        p.gpu_types, p.capacity, p.job_ids, p.scale, p.throughput, p.weight, p.deficit, p.pair_jobs, p.pair_gpu,
        p.pair_throughput, p.epsilon, p.fairness_weight,
        job_keys=(space, np.array([key_of[j] for j in p.job_ids], np.int64)))


@given(st.lists(st.integers(0, 60), max_size=30, unique=True), st.lists(st.integers(0, 60), max_size=30, unique=True),
       st.booleans())
def test_matched_keys_is_a_lookup(old: list[int], new: list[int], sort_old: bool) -> None:
    old_a = np.array(sorted(old) if sort_old else old, np.int64)
    where = {k: i for i, k in enumerate(old_a.tolist())}
    got = warm._matched_keys(old_a, np.array(new, np.int64))
    assert got.tolist() == [where.get(k, -1) for k in new]


def test_rounds_with_job_keys_match_jobs_as_ids_do() -> None:
    problems = _rounds(120, 3, churn=10, seed=5)
    ids = sorted({j for p in problems for j in p.job_ids})
    rng = np.random.default_rng(0)
    key_of = dict(zip(ids, rng.permutation(len(ids)).tolist()))  # keys in no particular order
    space = object()
    by_ids, by_keys = warm.WarmStart(), warm.WarmStart()
    for p in problems:
        plain, keyed = build_model(p), build_model(_keyed(p, space, key_of))
        if not by_ids.empty:
            want = by_ids._old_rows(plain)
            got = by_keys._old_rows(keyed)
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])
            assert (want[0] >= 0).any() and (want[0] < 0).any()  # kept and new jobs both occur
        a = fast.solve(plain, WARM, warm=by_ids)
        b = fast.solve(keyed, WARM, warm=by_keys)
        np.testing.assert_array_equal(a.x, b.x)
    # keys of another space (another simulation) are not trusted: the ids decide
    wrong = dict(zip(ids, range(len(ids))))
    other = build_model(_keyed(problems[-1], object(), wrong))
    np.testing.assert_array_equal(by_keys._old_rows(other)[0], by_ids._old_rows(build_model(problems[-1]))[0])


def test_a_keyed_round_builds_its_id_map_only_when_read() -> None:
    p = random_round(30, seed=2)
    keyed = _keyed(p, object(), {j: 100 + k for k, j in enumerate(p.job_ids)})
    assert keyed._job_index is None
    state = warm.WarmStart()
    fast.solve(build_model(keyed), WARM, warm=state)
    assert keyed._job_index is None  # a warm round with keys never needs it
    assert dict(keyed.job_positions) == dict(p.job_positions)
    assert keyed.job_index(p.job_ids[7]) == 7
