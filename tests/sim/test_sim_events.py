"""Re-planning at events (spec section 11, simulator "Events and restarts"): work kept, capacity held, equivalences."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairshare.sim import SimConfig, simulate
from fairshare.sim.execute import partial_deficit
from fairshare.sim.traces import generate_trace

CLUSTER = {"V100": 8, "P100": 4, "K80": 4}


def _trace(seed, jobs=12, rate=40.0):
    trace = generate_trace(jobs, jobs_per_hour=rate, seed=seed)
    return trace.take(np.flatnonzero(trace.iterations / np.median(trace.iterations) < 20))  # no days-long job


def _capacity_held(result):
    """Largest number of GPUs of each type held at once, from the run's holds."""
    worst = {}
    for g in CLUSTER:
        events = sorted([(h.start, h.gpus) for h in result.holds if h.gpu == g]
                        + [(h.end, -h.gpus) for h in result.holds if h.gpu == g], key=lambda e: (e[0], e[1]))
        level, top = 0.0, 0.0
        for _, d in events:
            level += d
            top = max(top, level)
        worst[g] = top
    return worst


@settings(max_examples=4)
@given(st.integers(0, 10_000), st.sampled_from([0.0, 30.0, 120.0]), st.sampled_from([0.0, 10.0, 60.0]))
def test_events_never_lose_work_nor_exceed_capacity(seed, restart, spacing):
    res = simulate(_trace(seed), CLUSTER, "fairshare", starts="events", restart_overhead=restart,
                   event_spacing=spacing, record_holds=True, show_progress=False,
                   policy_options={"shortfall_price": "finish-time"})
    for job in res.jobs:
        assert job.done_iterations <= job.iterations * (1 + 1e-9)
        if np.isfinite(job.finish):
            assert job.done_iterations == pytest.approx(job.iterations, rel=1e-9)
            assert job.finish >= job.arrival
    assert all(np.isfinite(j.finish) for j in res.jobs)  # no horizon: every job finishes
    for g, top in _capacity_held(res).items():
        assert top <= CLUSTER[g] + 1e-9, g
    lengths = [r.length for r in res.rounds]
    assert min(lengths) > 0 and max(lengths) <= res.config.round_length + 1e-9
    # plans are at least event_spacing apart, except the last part of a round
    starts = np.array([r.start for r in res.rounds])
    short = np.diff(starts) < spacing - 1e-6
    ends_round = np.isclose(((starts[1:] - starts[0]) / 360.0) % 1.0, 0.0) | np.isclose(
        ((starts[1:] - starts[0]) / 360.0) % 1.0, 1.0)
    assert not (short & ~ends_round).any()


def test_events_with_spacing_of_a_round_are_boundary_rounds_with_idle_starts():
    trace = _trace(3)
    a = simulate(trace, CLUSTER, "fairshare", starts="events", event_spacing=360.0, restart_overhead=30.0,
                 show_progress=False)
    b = simulate(trace, CLUSTER, "fairshare", starts="idle", restart_overhead=30.0, show_progress=False)
    assert [j.finish for j in a.jobs] == [j.finish for j in b.jobs]
    assert len(a.rounds) == len(b.rounds)


def test_peers_run_as_with_idle_starts_in_event_mode():
    trace = _trace(5)
    for name in ("gavel",):
        a = simulate(trace, CLUSTER, name, starts="events", restart_overhead=30.0, show_progress=False)
        b = simulate(trace, CLUSTER, name, starts="idle", restart_overhead=30.0, show_progress=False)
        assert [j.finish for j in a.jobs] == [j.finish for j in b.jobs]
        assert a.config.starts == "events"


def test_a_short_arrival_is_planned_at_once_instead_of_at_the_boundary():
    # one long job holds the only GPU; a short job arrives 60 s into the round
    from fairshare.sim.traces import Trace

    trace = Trace(id=["long", "short"], arrival=[0.0, 60.0], model=["ResNet-18 (batch size 32)"] * 2,
                  scale=[1, 1], iterations=[5e5, 300.0])
    kw = dict(show_progress=False, policy_options={"shortfall_price": "finish-time"}, restart_overhead=10.0,
              colocation=False)
    ev = simulate(trace, {"V100": 1}, "fairshare", starts="events", event_spacing=5.0, **kw)
    rd = simulate(trace, {"V100": 1}, "fairshare", starts="idle", **kw)
    short_ev = next(j for j in ev.jobs if j.id == "short")
    short_rd = next(j for j in rd.jobs if j.id == "short")
    assert short_rd.finish > 360.0          # waited for the boundary
    assert short_ev.finish < 120.0          # planned at its arrival, preempting the long job
    assert sum(r.preempted_jobs for r in ev.rounds) >= 1


@given(st.floats(0.0, 5.0), st.floats(0.0, 0.9), st.floats(0.0, 3.0), st.floats(1.0, 359.0))
def test_partial_deficits_are_never_negative_and_two_parts_make_a_round(d, eps, rho, cut):
    d0, fair = np.array([d]), np.array([2.0])
    done_per_s = rho * fair / 1.0
    whole = partial_deficit(d0, eps, done_per_s * 360.0, fair, 360.0, 360.0)
    first = partial_deficit(d0, eps, done_per_s * cut, fair, cut, 360.0)
    second = partial_deficit(first, eps, done_per_s * (360.0 - cut), fair, 360.0 - cut, 360.0)
    assert (first >= 0).all() and (second >= 0).all()
    assert second[0] == pytest.approx(whole[0], rel=1e-9, abs=1e-9)


def test_event_spacing_is_checked():
    with pytest.raises(Exception, match="event_spacing"):
        SimConfig(event_spacing=-1.0)
    with pytest.raises(Exception, match="event_spacing"):
        SimConfig(event_spacing=400.0)


def test_a_pair_only_one_member_ran_in_is_no_pair_to_stay_in():
    from fairshare.sim.catalog import load_catalog
    from fairshare.sim.config import SimConfig as Cfg
    from fairshare.sim.ledger import _Ledger
    from fairshare.sim.traces import Trace

    trace = Trace(id=["a", "b", "c"], arrival=[0.0, 0.0, 0.0], model=["ResNet-18 (batch size 32)"] * 3,
                  scale=[1, 1, 1], iterations=[1e5] * 3)
    led = _Ledger.of(trace, load_catalog(), {"V100": 2})
    act = np.arange(3)
    # b ran beside a, but a got no throughput there (key -1): b's pair is not a current placement
    led.prev_key[:] = [(-1, -1), (0, 0), (0, -1)]
    p = led.problem(act, {"V100": 2}, (np.zeros((0, 2), np.int64), np.zeros(0, np.int64), np.zeros((0, 2))),
                    Cfg(restart_overhead=30.0), 360.0)
    assert p.running.gpu.tolist() == [-1, 0, 0]
    assert p.running.partner.tolist() == [-1, -2, -1]


def test_only_policies_that_see_running_jobs_get_them_in_their_rounds():
    from fairshare.policies import get_policy

    class Spy:
        name = "spy"

        def __init__(self, inner, sees):
            self.inner, self.sees_running_jobs, self.seen = inner, sees, []

        def allocate(self, state):
            self.seen.append(state.model.problem.running is not None)
            return self.inner.allocate(state)

    trace = _trace(7)
    for sees in (True, False):
        spy = Spy(get_policy("gavel"), sees)
        simulate(trace, CLUSTER, spy, restart_overhead=30.0, show_progress=False, max_rounds=30)
        assert any(spy.seen) is sees
    assert get_policy("fairshare").sees_running_jobs and not get_policy("gavel").sees_running_jobs


def test_a_restart_longer_than_a_round_goes_on_into_the_next_plan():
    from fairshare.sim.traces import Trace

    trace = Trace(id=["a"], arrival=[0.0], model=["ResNet-18 (batch size 32)"], scale=[1], iterations=[1e6])
    res = simulate(trace, {"V100": 1}, "fifo", restart_overhead=500.0, round_length=360.0, starts="round",
                   show_progress=False)
    job = res.jobs[0]
    tau = job.iterations / job.ideal_seconds  # alone on the only GPU the whole time
    # it lost exactly 500 s to its one restart, across the first two rounds
    assert job.finish - job.arrival == pytest.approx(500.0 + job.iterations / tau, rel=1e-9)


@pytest.mark.parametrize("owed", [True, False])
def test_a_newcomer_is_owed_its_wait_unless_told_otherwise(owed):
    from fairshare.sim.catalog import load_catalog
    from fairshare.sim.config import SimConfig as Cfg
    from fairshare.sim.ledger import _Ledger
    from fairshare.sim.traces import Trace

    trace = Trace(id=["a"], arrival=[90.0], model=["ResNet-18 (batch size 32)"], scale=[1], iterations=[1e5])
    led = _Ledger.of(trace, load_catalog(), {"V100": 1})
    cfg = Cfg(epsilon=0.2, wait_is_owed=owed)
    led.admit(0, 360.0, cfg)
    assert led.deficit[0] == pytest.approx(0.8 * 270.0 / 360.0 if owed else 0.0)


def test_a_moved_job_runs_at_its_placements_throughput_and_pays_its_restart_once():
    from fairshare import allocate
    from fairshare.problem import RoundProblem
    from fairshare.sim.simulator import _as_run

    doc = {"gpus": {"V100": 1, "K80": 1}, "fairness_weight": 1.0, "round_seconds": 360.0,
           "jobs": [{"id": "a", "scale": 1, "throughput": {"V100": 10.0, "K80": 5.0}, "restart_seconds": 120.0,
                     "current": {"gpu": "K80", "partner": None}}]}
    problem = RoundProblem.from_dict(doc)
    alloc = allocate(problem, mode="exact")
    assert alloc.jobs.moved.tolist() == [True]
    assert alloc.jobs.throughput[0] == pytest.approx(10.0 * (1 - 120 / 360))   # reported with the restart taken off
    assert _as_run(alloc, problem).throughput[0] == 10.0                   # run at the V100's own throughput


@pytest.mark.parametrize("starts", ["events", "idle"])
@pytest.mark.parametrize("restart", [30.0, 500.0])
def test_a_start_between_plans_pays_its_whole_restart_even_when_the_next_plan_comes_first(starts, restart):
    """A job started on idle GPUs just before a plan keeps paying its restart in that plan if it stays put."""
    from fairshare.sim.traces import Trace

    # b arrives 10 s before the plan at 360 s (a, alone, holds one of the two GPUs) and starts on the idle one
    trace = Trace(id=["a", "b"], arrival=[0.0, 350.0], model=["ResNet-18 (batch size 32)"] * 2, scale=[1, 1],
                  iterations=[1e7, 1e6])
    res = simulate(trace, {"V100": 2}, "fifo", restart_overhead=restart, round_length=360.0, starts=starts,
                   event_spacing=360.0, show_progress=False)
    b = next(j for j in res.jobs if j.id == "b")
    tau = b.iterations / b.ideal_seconds  # alone on a V100 from its start, never moved
    assert b.first_start == pytest.approx(350.0)
    assert b.finish - b.first_start == pytest.approx(restart + b.iterations / tau, rel=1e-9)


@pytest.mark.parametrize("policy", ["fifo", "gavel"])
def test_a_waiting_job_started_late_in_a_round_owes_the_rest_of_its_restart_in_the_next(policy):
    from fairshare.sim.traces import Trace

    model = "ResNet-18 (batch size 32)"
    alone = simulate(Trace(id=["x"], arrival=[0.0], model=[model], scale=[1], iterations=[1000.0]), {"V100": 1},
                     "fifo", show_progress=False).jobs[0]
    tau = 1000.0 / alone.ideal_seconds
    # one GPU: a runs (restart to 30 s, 310 s of work) and frees it at 340 s; b, planned out of the first round,
    # starts there, 20 s before the round ends, and keeps the GPU in the next round: it owes 10 s of restart there
    trace = Trace(id=["a", "b"], arrival=[0.0, 0.0], model=[model] * 2, scale=[1, 1],
                  iterations=[310 * tau, 100 * tau])
    res = simulate(trace, {"V100": 1}, policy, restart_overhead=30.0, starts="idle", show_progress=False)
    a, b = res.jobs
    assert a.finish == pytest.approx(340.0) and b.first_start == pytest.approx(340.0)
    assert b.finish == pytest.approx(340.0 + 30.0 + 100.0)
