"""Starts between rounds (``SimConfig.starts``): with ``"idle"``, jobs start on idle GPUs at arrivals and finishes
inside a round; ``"round"`` (the default) is the old rule. Capacity, completion and work are checked on the GPU
holds a run records (``record_holds=True``)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from _examples import load_example
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fairshare import InvalidInputError
from fairshare.sim.catalog import load_catalog
from fairshare.sim.config import SimConfig
from fairshare.sim.metrics import compute_metrics
from fairshare.sim.result import GpuHold, SimulationResult
from fairshare.sim.simulator import simulate
from fairshare.sim.traces import Trace, generate_trace

R50 = "ResNet-50 (batch size 64)"


def tput(gpu: str, model: str = R50, scale: int = 1) -> float:
    return load_catalog().alone_throughput(model, scale, gpu)


def trace(rows: list[tuple[str, float, int, float]], model: str = R50) -> Trace:
    """Jobs ``(id, arrival, scale, iterations)`` of one model."""
    return Trace(id=[r[0] for r in rows], arrival=[r[1] for r in rows], model=[model] * len(rows),
                 scale=[r[2] for r in rows], iterations=[r[3] for r in rows])


def peak_use(res: SimulationResult) -> dict[str, float]:
    """Most GPUs of each type held at one instant (a hold ending at ``t`` frees its GPUs for one starting at ``t``)."""
    events = sorted((h.end, 0, h.gpu, -h.gpus) for h in res.holds)
    events += sorted((h.start, 1, h.gpu, h.gpus) for h in res.holds)
    use = dict.fromkeys(res.cluster, 0.0)
    peak = dict.fromkeys(res.cluster, 0.0)
    for _, _, gpu, delta in sorted(events):
        use[gpu] += delta
        peak[gpu] = max(peak[gpu], use[gpu])
    return peak


def first_start(res: SimulationResult, job: str) -> float:
    return min(h.start for h in res.holds if job in h.jobs)


def test_the_option_is_validated_and_events_is_the_default() -> None:
    assert SimConfig().starts == "events"
    assert SimConfig(starts="round").to_dict()["starts"] == "round"
    assert SimConfig.from_dict(SimConfig().to_dict()).starts == "events"
    assert SimConfig.from_dict(SimConfig(starts="idle").to_dict()).starts == "idle"
    assert SimConfig.from_dict({"round_length": 360.0}).starts == "round"   # records written before the option
    with pytest.raises(InvalidInputError, match="starts"):
        SimConfig(starts="event")


def test_a_job_arriving_mid_round_starts_at_once_on_an_idle_gpu() -> None:
    # "a" holds the V100 for hours; "b" arrives at 100 s while the K80 is idle
    tr = trace([("a", 0.0, 1, tput("V100") * 20000.0), ("b", 100.0, 1, tput("K80") * 1000.0)])
    idle = simulate(tr, "V100=1,K80=1", "fairshare", starts="idle", record_holds=True, show_progress=False)
    old = simulate(tr, "V100=1,K80=1", "fairshare", starts="round", record_holds=True, show_progress=False)
    assert first_start(idle, "b") == 100.0
    assert first_start(old, "b") == 360.0
    b = {j.id: j for j in idle.jobs}["b"]
    # alone on the K80 from its arrival until the next boundary; the policy re-plans it from 360 s on
    assert [h.gpu for h in idle.holds if "b" in h.jobs and h.between_rounds] == ["K80"]
    assert b.finish < {j.id: j for j in old.jobs}["b"].finish
    assert b.done_iterations == pytest.approx(b.iterations)


def test_a_job_shorter_than_a_round_finishes_before_the_boundary() -> None:
    short = tput("V100") * 60.0  # one minute on the V100
    tr = trace([("a", 0.0, 1, tput("V100") * 50.0), ("b", 100.0, 1, short)])
    res = simulate(tr, "V100=1", "fairshare", starts="idle", restart_overhead=5.0, record_holds=True,
                   show_progress=False)
    jobs = {j.id: j for j in res.jobs}
    assert jobs["a"].finish == pytest.approx(55.0)           # overhead, then 50 s of work
    assert jobs["b"].finish == pytest.approx(100.0 + 5.0 + 60.0)   # starts at its arrival, pays the overhead once
    assert jobs["b"].finish < 360.0
    # alone in the system at its arrival ("a" finished at 55 s): its fair share is the whole V100, so rho = 65/60
    assert jobs["b"].fair_throughput == pytest.approx(tput("V100"))
    assert (jobs["b"].finish - jobs["b"].arrival) * jobs["b"].fair_throughput / jobs["b"].iterations == \
        pytest.approx(65.0 / 60.0)
    assert len(res.rounds) == 1
    assert res.rounds[0].busy_gpu_seconds == pytest.approx(55.0 + 65.0)
    old = simulate(tr, "V100=1", "fairshare", starts="round", restart_overhead=5.0, show_progress=False)
    assert {j.id: j for j in old.jobs}["b"].finish == pytest.approx(360.0 + 65.0)
    assert simulate(tr, "V100=1", "fairshare", restart_overhead=5.0, show_progress=False).jobs == res.jobs  # default


def test_a_finish_inside_the_round_refills_the_freed_gpus_in_arrival_order() -> None:
    v = tput("V100")
    tr = trace([("a", 0.0, 1, v * 100.0), ("b", 10.0, 1, v * 600.0), ("c", 20.0, 1, v * 30.0)])
    res = simulate(tr, "V100=1", "fairshare", starts="idle", record_holds=True, show_progress=False)
    # the GPU frees at 100 s: "b" (arrived first) gets it, "c" waits for the next boundary
    assert first_start(res, "b") == pytest.approx(100.0)
    assert first_start(res, "c") >= 360.0
    assert peak_use(res) == {"V100": 1.0}


def test_a_gang_needs_its_gpus_on_one_type_and_takes_the_fastest_idle_type() -> None:
    tr = trace([("a", 0.0, 2, tput("V100", scale=2) * 20000.0),
                ("g", 50.0, 2, tput("K80", scale=2) * 200.0),   # 2 GPUs: only the K80s have two idle
                ("s", 60.0, 1, tput("K80") * 100.0)])           # 1 GPU: the idle P100 beats the K80s
    res = simulate(tr, "V100=2,P100=1,K80=2", "fairshare", starts="idle", record_holds=True, show_progress=False)
    between = {h.jobs[0]: (h.gpu, h.gpus, h.start) for h in res.holds if h.between_rounds}
    assert between["g"] == ("K80", 2.0, 50.0)
    assert between["s"] == ("P100", 1.0, 60.0)
    assert all(v <= res.cluster[g] for g, v in peak_use(res).items())


def test_part_of_a_gpu_counts_its_share_class() -> None:
    tr = Trace(id=["a", "h1", "h2", "h3"], arrival=[0.0, 10.0, 11.0, 12.0], model=[R50] * 4,
               scale=[1.0, 0.5, 0.5, 0.5], iterations=[tput("V100") * 50000.0] + [tput("K80") * 3000.0] * 3)
    res = simulate(tr, "V100=1,K80=1", "fairshare", starts="idle", record_holds=True, show_progress=False)
    between = [h for h in res.holds if h.between_rounds and h.start < 360.0]
    # two halves fill the idle K80; the third waits for the boundary
    assert [(h.jobs[0], h.gpu, h.gpus) for h in between] == [("h1", "K80", 0.5), ("h2", "K80", 0.5)]
    assert peak_use(res)["K80"] == 1.0


def test_round_is_the_old_rule_and_recording_holds_changes_nothing() -> None:
    tr = generate_trace(12, jobs_per_hour=30, seed=5)
    kw = {"restart_overhead": 5.0, "show_progress": False}
    base = simulate(tr, "V100=8,P100=8,K80=8", "fifo", starts="round", **kw)
    old = simulate(tr, "V100=8,P100=8,K80=8", "fifo", starts="round", record_holds=True, **kw)
    assert old.jobs == base.jobs
    strip = [dataclasses.replace(r, solver_seconds=0.0) for r in old.rounds]
    assert strip == [dataclasses.replace(r, solver_seconds=0.0) for r in base.rounds]
    assert not any(h.between_rounds for h in old.holds) and base.holds == ()


def test_idle_finishes_every_job_within_capacity_and_does_all_the_work() -> None:
    tr = generate_trace(20, jobs_per_hour=30, seed=2)
    tr = dataclasses.replace(tr, iterations=np.asarray(tr.iterations) / 4)    # a shorter run
    res = simulate(tr, "V100=8,P100=8,K80=8", "fairshare", starts="idle", restart_overhead=5.0,
                   record_holds=True, show_progress=False)
    assert all(np.isfinite(j.finish) for j in res.jobs)
    assert all(j.done_iterations == pytest.approx(j.iterations, rel=1e-9) for j in res.jobs)
    assert all(v <= res.cluster[g] for g, v in peak_use(res).items())
    assert any(h.between_rounds for h in res.holds)
    for j in res.jobs:   # nobody starts before it arrives or runs after it finished
        assert min(h.start for h in res.holds if j.id in h.jobs) >= j.arrival
        # (a co-located pair holds its GPUs until its last member stops)
        assert max((h.end for h in res.holds if h.jobs == (j.id,)), default=-1.0) <= j.finish + 1e-6
    m = compute_metrics(res.jobs, res.rounds)   # the records pass the metrics' validation
    assert m.finished == 20 and 0 < m.gpu_busy_fraction <= 1


def test_nodes_bind_the_rounds_and_starts_in_between_stay_type_level() -> None:
    tr = generate_trace(10, jobs_per_hour=30, seed=1, multi_gpu=False)
    res = simulate(tr, "2xV100:2,2xK80:2", "fifo", starts="idle", record_holds=True, show_progress=False)
    assert all(np.isfinite(j.finish) for j in res.jobs)
    assert all(v <= res.cluster[g] for g, v in peak_use(res).items())


@st.composite
def small_traces(draw: st.DrawFn) -> Trace:
    n = draw(st.integers(1, 6))
    rows = []
    for k in range(n):
        rows.append((f"j{k}", draw(st.floats(0.0, 1500.0)), draw(st.sampled_from([1, 1, 2])),
                     draw(st.floats(10.0, 1500.0))))
    return trace([(i, a, s, secs * tput("K80", scale=s)) for i, a, s, secs in rows])


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tr=small_traces(), starts=st.sampled_from(["round", "idle"]), overhead=st.sampled_from([0.0, 20.0]))
def test_property_capacity_completion_and_work(tr: Trace, starts: str, overhead: float) -> None:
    res = simulate(tr, "V100=2,K80=2", "fifo", starts=starts, restart_overhead=overhead, record_holds=True,
                   show_progress=False)
    assert all(v <= res.cluster[g] for g, v in peak_use(res).items())
    assert all(np.isfinite(j.finish) for j in res.jobs)
    assert all(j.done_iterations == pytest.approx(j.iterations, rel=1e-9) for j in res.jobs)
    assert all(isinstance(h, GpuHold) and h.start < h.end + 1e-9 for h in res.holds)
    compute_metrics(res.jobs, res.rounds)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tr=small_traces(), starts=st.sampled_from(["round", "idle", "events"]),
       policy=st.sampled_from(["fifo", "fairshare"]))
def test_property_first_start_is_the_first_gpu_hold(tr: Trace, starts: str, policy: str) -> None:
    """A job's ``first_start`` (queueing delay = first_start - arrival) is when its first GPU hold began."""
    res = simulate(tr, "V100=2,K80=2", policy, starts=starts, record_holds=True, show_progress=False)
    for j in res.jobs:
        first = min(h.start for h in res.holds if j.id in h.jobs)
        assert j.first_start == first and j.arrival <= j.first_start <= j.finish
        if starts == "round":
            assert j.first_start in {r.start for r in res.rounds}          # only a round's plan starts a job
    m = compute_metrics(res.jobs, res.rounds)
    waits = [j.first_start - j.arrival for j in res.jobs]
    assert m.mean_queue_delay == pytest.approx(float(np.mean(waits)))
    assert m.p99_queue_delay == pytest.approx(float(np.percentile(waits, 99)))


def test_idle_never_finishes_a_job_later_than_it_could_alone() -> None:
    tr = trace([("a", 30.0, 1, tput("V100") * 100.0)])
    res = simulate(tr, "V100=1,K80=1", "fairshare", starts="idle", show_progress=False)
    assert res.jobs[0].finish == pytest.approx(130.0)   # empty cluster: the round starts at the arrival


def test_the_cli_passes_starts_through(tmp_path: Path) -> None:
    from fairshare.cli import main

    out = tmp_path / "o"
    code = main(["simulate", "--generate", "--jobs", "6", "--jobs-per-hour", "30", "--cluster", "V100=4,K80=4",
                 "--policy", "fifo", "--starts", "idle", "--out", str(out), "--no-plots", "--records", "json"])
    assert code == 0
    doc = json.loads((out / "records.json").read_text())
    assert doc["runs"][0]["config"]["starts"] == "idle"


def test_the_example_writes_its_table_with_quick(tmp_path: Path) -> None:
    out = tmp_path / "starts.md"
    assert load_example("starts_between_rounds").main(["--quick", "--out", str(out)]) == 0
    text = out.read_text()
    assert "| round |" in text and "| idle |" in text and "under one round" in text
