"""The round-based simulator (spec simulator.md): exact finish times, overheads, deficits, determinism."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from fairshare import InvalidInputError
from fairshare.catalog import load_catalog
from fairshare.simulator import SimulationResult, parse_cluster, simulate
from fairshare.traces import Trace, generate_trace

R50 = "ResNet-50 (batch size 64)"


def tput(model: str, gpu: str, scale: int = 1) -> float:
    return load_catalog().alone_throughput(model, scale, gpu)


def one_job(iterations: float, arrival: float = 0.0, model: str = R50) -> Trace:
    return Trace(id=["a"], arrival=[arrival], model=[model], scale=[1], iterations=[iterations])


def test_a_job_finishes_at_the_exact_time_its_work_runs_out() -> None:
    t = tput(R50, "V100")
    res = simulate(one_job(t * 1000.0), "V100=1", "fairshare", progress=False)
    job = res.jobs[0]
    assert job.finish == pytest.approx(1000.0)
    assert job.done_iterations == pytest.approx(job.iterations)
    assert len(res.rounds) == 3  # rounds start at 0, 360, 720
    # busy GPU time: 360 + 360 + 280 s on one GPU
    assert sum(r.busy_gpu_seconds for r in res.rounds) == pytest.approx(1000.0)


def test_restart_overhead_is_paid_when_the_placement_changes() -> None:
    t = tput(R50, "V100")
    res = simulate(one_job(t * 1000.0), "V100=1", "fairshare", restart_overhead=10.0, progress=False)
    assert res.jobs[0].finish == pytest.approx(1010.0)  # paid once: the placement never changes again


def test_arrival_inside_a_round_waits_for_the_next_round() -> None:
    t = tput(R50, "V100")
    tr = Trace(id=["a", "b"], arrival=[0.0, 100.0], model=[R50, R50], scale=[1, 1],
               iterations=[t * 2000.0, t * 100.0])
    res = simulate(tr, "V100=2", "fairshare", progress=False)
    b = next(j for j in res.jobs if j.id == "b")
    assert b.finish == pytest.approx(360.0 + 100.0)


def test_deficits_make_two_jobs_share_one_gpu_in_time() -> None:
    t = tput(R50, "V100")
    tr = Trace(id=["a", "b"], arrival=[0.0, 0.0], model=[R50, R50], scale=[1, 1],
               iterations=[t * 3600.0, t * 3600.0])
    res = simulate(tr, "V100=1", "fairshare", colocation=False, progress=False)
    finishes = sorted(j.finish for j in res.jobs)
    # alternating rounds: both finish near 2 x 3600 s, not one at 3600 and the other at 7200
    assert finishes[0] > 6000 and finishes[1] == pytest.approx(7200.0)
    spatial = simulate(tr, "V100=1", "fairshare", colocation=False, carry_deficits=False, progress=False)
    assert min(j.finish for j in spatial.jobs) == pytest.approx(3600.0)  # no memory: one runs to the end


def test_capacity_and_work_are_conserved_on_a_generated_trace() -> None:
    tr = generate_trace(30, jobs_per_hour=20, seed=3, multi_gpu=False)
    res = simulate(tr, "V100=4,P100=4,K80=4", "fairshare", round_length=1800.0, progress=False)
    assert all(math.isfinite(j.finish) for j in res.jobs)
    for j in res.jobs:
        assert j.done_iterations == pytest.approx(j.iterations)
        assert j.finish > j.arrival
    for r in res.rounds:
        assert r.busy_gpu_seconds <= r.capacity_gpu_seconds + 1e-6
        assert 0 <= r.placed_jobs <= r.active_jobs


@pytest.mark.parametrize("policy", ["fairshare", "gavel", "las", "fifo"])
def test_simulation_is_deterministic(policy: str) -> None:
    tr = generate_trace(25, jobs_per_hour=30, seed=5, multi_gpu=False)
    a = simulate(tr, "V100=3,P100=3,K80=3", policy, round_length=3600.0, progress=False)
    b = simulate(tr, "V100=3,P100=3,K80=3", policy, round_length=3600.0, progress=False)
    assert [(j.id, j.finish) for j in a.jobs] == [(j.id, j.finish) for j in b.jobs]


def test_max_rounds_leaves_unfinished_jobs_nan_and_json_round_trips(tmp_path) -> None:
    tr = generate_trace(20, jobs_per_hour=60, seed=1, multi_gpu=False)
    res = simulate(tr, "V100=2,P100=2,K80=2", "fairshare", max_rounds=3, progress=False)
    assert len(res.rounds) == 3
    assert any(math.isnan(j.finish) for j in res.jobs)
    assert all(j.active_seconds >= 0 for j in res.jobs)
    path = tmp_path / "r.json"
    res.save_json(path)
    back = SimulationResult.from_dict(__import__("json").loads(path.read_text()))
    assert [j.id for j in back.jobs] == [j.id for j in res.jobs]
    m = back.metrics()
    assert m.unfinished == sum(math.isnan(j.finish) for j in res.jobs)


@pytest.mark.parametrize("policy", ["las", "gavel"])
def test_stop_when_finished_ends_the_run_in_the_round_the_window_empties(policy: str) -> None:
    tr = generate_trace(16, jobs_per_hour=30, seed=4, multi_gpu=False)
    full = simulate(tr, "V100=1,P100=1,K80=1", policy, round_length=1800.0, progress=False)
    window = [tr.id[i] for i in np.argsort(tr.arrival, kind="stable")[3:8]]
    part = simulate(tr, "V100=1,P100=1,K80=1", policy, round_length=1800.0, stop_when_finished=window, progress=False)
    by_id = {j.id: j for j in part.jobs}
    last = max(by_id[w].finish for w in window)
    assert all(math.isfinite(by_id[w].finish) for w in window)
    # the run stops in the round where the last watched job finished, with later jobs still unfinished
    assert part.rounds[-1].start < last <= part.rounds[-1].start + part.rounds[-1].length
    assert len(part.rounds) < len(full.rounds)
    assert any(math.isnan(j.finish) for j in part.jobs)
    # and up to there it is the same run as without the stop
    def plan(rounds):  # everything but the measured solver time
        return [dataclasses.replace(r, solver_seconds=0.0) for r in rounds]

    assert plan(part.rounds) == plan(full.rounds[:len(part.rounds)])
    full_by_id = {j.id: j for j in full.jobs}
    assert all(by_id[w].finish == full_by_id[w].finish for w in window)
    assert part.config["stop_when_finished_jobs"] == len(window)


def test_stop_when_finished_rejects_unknown_ids() -> None:
    tr = one_job(10.0)
    with pytest.raises(InvalidInputError, match=r"stop_when_finished.*zz"):
        simulate(tr, "V100=1", "fairshare", stop_when_finished=["zz"], progress=False)
    with pytest.raises(InvalidInputError, match=r"stop_when_finished.*collection"):
        simulate(tr, "V100=1", "fairshare", stop_when_finished="a", progress=False)
    with pytest.raises(InvalidInputError, match=r"stop_when_finished.*names no job"):
        simulate(tr, "V100=1", "fairshare", stop_when_finished=[], progress=False)


def test_job_that_fits_nowhere_is_rejected() -> None:
    tr = Trace(id=["big"], arrival=[0.0], model=[R50], scale=[8], iterations=[10.0])
    with pytest.raises(InvalidInputError, match=r"trace\[0\].*big"):
        simulate(tr, "V100=4", "fairshare", progress=False)


@pytest.mark.parametrize("spec, match", [("V100", r"cluster.*TYPE=COUNT"), ("V100=x", r"cluster\.V100.*x"),
                                         ("V100=0", "no GPU"), ({"V100": -1}, r"cluster\.V100.*-1")])
def test_bad_cluster_spec(spec, match) -> None:
    with pytest.raises(InvalidInputError, match=match):
        parse_cluster(spec)


def test_bad_simulation_options() -> None:
    tr = one_job(10.0)
    with pytest.raises(InvalidInputError, match="round_length"):
        simulate(tr, "V100=1", "fairshare", round_length=0, progress=False)
    with pytest.raises(InvalidInputError, match="restart_overhead"):
        simulate(tr, "V100=1", "fairshare", restart_overhead=400, progress=False)
    with pytest.raises(InvalidInputError, match=r"policy.*nope"):
        simulate(tr, "V100=1", "nope", progress=False)


def test_fair_throughput_record_is_the_time_weighted_fair_share() -> None:
    t = tput(R50, "V100")
    tr = Trace(id=["a", "b"], arrival=[0.0, 0.0], model=[R50, R50], scale=[1, 1],
               iterations=[t * 720.0, t * 720.0])
    res = simulate(tr, "V100=2", "fairshare", colocation=False, progress=False)
    for j in res.jobs:  # two jobs, two V100: each one's fair share is one V100
        assert j.fair_throughput == pytest.approx(t)
        assert j.finish == pytest.approx(720.0)
    assert np.isclose(res.metrics().max_rho, 1.0)
