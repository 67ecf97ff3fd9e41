"""Horizon, censoring, duration classes, run limits, clear refusals, provenance and progress of the simulator."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest

from fairshare.errors import InvalidInputError
from fairshare.sim.catalog import load_catalog
from fairshare.sim.config import ROUND_LIMIT, SimConfig
from fairshare.sim.ledger import _Ledger
from fairshare.sim.metrics import compute_metrics, metrics_by_duration_class
from fairshare.sim.progress_bar import ProgressBar
from fairshare.sim.result import SimulationResult
from fairshare.sim.simulator import _progress, check_run, simulate
from fairshare.sim.traces import Trace, generate_trace

A3C = "A3C"  # 7.176 it/s alone on a V100


def trace(work: list[float], arrival: list[float] | None = None, scale: list[int] | None = None,
          censored: list[bool] | None = None, model: str = A3C) -> Trace:
    n = len(work)
    return Trace(id=[f"j{i}" for i in range(n)], arrival=arrival or [0.0] * n, model=[model] * n,
                 scale=scale or [1] * n, iterations=work, censored=None if censored is None else np.array(censored))


def test_until_stops_the_run_and_counts_the_unfinished() -> None:
    rate = load_catalog().alone_throughput(A3C, 1, "V100")
    tr = trace([rate * 100, rate * 36_000, rate * 100], arrival=[0.0, 0.0, 7200.0])
    res = simulate(tr, "V100=2", "fifo", until=3600.0, show_progress=False)
    assert max(r.start for r in res.rounds) < 3600.0 <= res.rounds[-1].start + 360.0
    m = res.metrics()
    assert (m.jobs, m.finished, m.unfinished) == (3, 1, 2)
    assert math.isnan(res.jobs[1].finish) and res.jobs[1].done_iterations == pytest.approx(rate * 3600)
    assert res.jobs[2].done_iterations == 0 and res.jobs[2].active_seconds == 0     # arrives after the horizon
    assert res.config.until == 3600.0 and SimulationResult.from_dict(json.loads(res.to_json())).config.until == 3600.0


def test_until_and_max_rounds_whichever_comes_first() -> None:
    tr = generate_trace(20, jobs_per_hour=20, seed=1, multi_gpu=False)
    a = simulate(tr, "V100=2,K80=2", "fifo", until=7200.0, max_rounds=5, show_progress=False)
    b = simulate(tr, "V100=2,K80=2", "fifo", until=1800.0, max_rounds=50, show_progress=False)
    assert len(a.rounds) == 5 and len(b.rounds) == 5
    with pytest.raises(InvalidInputError, match=r"`until` = -1"):
        SimConfig(until=-1)
    with pytest.raises(InvalidInputError, match=r"`until` = inf"):
        SimConfig(until=float("inf"))


def test_censored_jobs_run_but_are_left_out_of_jct() -> None:
    rate = load_catalog().alone_throughput(A3C, 1, "V100")
    plain = trace([rate * 360, rate * 720, rate * 1080])
    cens = trace([rate * 360, rate * 720, rate * 1080], censored=[False, True, False])
    a = simulate(plain, "V100=3", "fifo", show_progress=False)
    b = simulate(cens, "V100=3", "fifo", show_progress=False)
    assert [j.finish for j in a.jobs] == [j.finish for j in b.jobs]       # the simulation itself is the same
    assert [j.censored for j in b.jobs] == [False, True, False]
    ma, mb = a.metrics(), b.metrics()
    assert (ma.censored, mb.censored) == (0, 1) and mb.finished == 3
    assert ma.mean_jct == pytest.approx(720.0) and mb.mean_jct == pytest.approx(720.0)   # (360 + 1080) / 2
    assert mb.max_rho == ma.max_rho and mb.makespan == ma.makespan


def test_duration_classes_use_the_ideal_time_on_the_fastest_type() -> None:
    cat = load_catalog()
    v, k = cat.alone_throughput(A3C, 1, "V100"), cat.alone_throughput(A3C, 1, "K80")
    tr = trace([v * 100, v * 1800, v * 7200])
    res = simulate(tr, "V100=1,K80=2", "fifo", show_progress=False)
    assert [j.ideal_seconds for j in res.jobs] == pytest.approx([100.0, 1800.0, 7200.0])
    assert k < v
    classes = metrics_by_duration_class(res.jobs, res.rounds, 360.0)
    assert {c: m.jobs for c, m in classes.items()} == {"under one round": 1, "one round to 1 h": 1, "over 1 h": 1}
    whole = compute_metrics(res.jobs, res.rounds)
    assert classes["over 1 h"].utilization == whole.utilization           # round fields are cluster-wide
    assert metrics_by_duration_class(res.jobs, res.rounds, 3600.0).keys() == {"under one round", "over 1 h"}
    old = [j.__class__(**{**j.to_dict(), "ideal_seconds": float("nan")}) for j in res.jobs]
    assert metrics_by_duration_class(old, res.rounds, 360.0) == {}


def test_a_run_sure_to_need_too_many_rounds_is_refused_unless_a_horizon_cuts_it() -> None:
    rate = load_catalog().alone_throughput(A3C, 1, "V100")
    tr = trace([rate * 360.0 * (ROUND_LIMIT + 10)])
    with pytest.raises(InvalidInputError, match=r"`trace\[0\].iterations` = .*needs at least 1e\+06 rounds.*"
                                                r"set a horizon"):
        simulate(tr, "V100=1", "fifo", show_progress=False)
    res = simulate(tr, "V100=1", "fifo", max_rounds=3, show_progress=False)
    assert len(res.rounds) == 3 and res.metrics().unfinished == 1
    assert len(simulate(tr, "V100=1", "fifo", until=1000.0, show_progress=False).rounds) == 3
    with pytest.raises(InvalidInputError, match=r"`round_length` = 1e-300: must be a positive number of seconds "
                                                r"from 0.001 to 1e\+08"):
        simulate(trace([10.0]), "V100=1", "fifo", round_length=1e-300, show_progress=False)


def test_huge_values_are_refused_with_their_field() -> None:
    with pytest.raises(InvalidInputError, match=r"`jobs\[0\].iterations` = 1e\+300"):
        trace([1e300])
    with pytest.raises(InvalidInputError, match=r"`jobs\[0\].arrival` = 1e\+300"):
        trace([10.0], arrival=[1e300])
    with pytest.raises(InvalidInputError, match=r"`jobs\[0\].scale`"):
        trace([10.0], scale=[2**40])
    with pytest.raises(InvalidInputError, match=r"`cluster.V100` = '1e20'"):
        simulate(trace([10.0]), "V100=1e20", "fifo", show_progress=False)
    with pytest.raises(InvalidInputError, match=r"`cluster.V100` = 4294967296"):
        simulate(trace([10.0]), {"V100": 2**32}, "fifo", show_progress=False)
    with pytest.raises(InvalidInputError, match=r"`jobs_per_hour` = 1e-300"):
        generate_trace(3, jobs_per_hour=1e-300, seed=0)


@pytest.mark.parametrize("cluster, scale, model, match", [
    ("V100=4", 8, A3C, r"gang larger than any GPU type of the cluster: it needs 8 GPUs of one type, the largest "
                       r"type has 4"),
    ("V100=8", 3, "ResNet-50 (batch size 64)", r"no throughput data for model 'ResNet-50 \(batch size 64\)' at scale "
                                               r"3: the catalog has data for scales 1, 2, 4, 8 only"),
    ("V100=8", 2, A3C, r"no throughput data for model 'A3C' at scale 2 on the cluster's GPU types \['V100'\] \(it has "
                       r"data on no GPU type at that scale\)"),
    ("H200=8", 1, A3C, r"no throughput data for model 'A3C' at scale 1 on the cluster's GPU types \['H200'\] \(it has "
                       r"data on K80, P100, V100\)"),
    ("V100=1,K80=8", 4, "ResNet-50 (batch size 128)",
     r"gang larger than the GPU types with data for model .* V100 has 1"),
])
def test_two_causes_two_messages(cluster: str, scale: int, model: str, match: str) -> None:
    tr = trace([100.0], scale=[scale], model=model)
    with pytest.raises(InvalidInputError, match=match):
        simulate(tr, cluster, "fifo", show_progress=False)
    with pytest.raises(InvalidInputError, match=match):
        check_run(tr, cluster)


def test_unknown_gpu_type_points_to_the_catalog_that_has_it() -> None:
    with pytest.raises(InvalidInputError, match=r"`cluster` = 'T4': unknown GPU type .*catalog 'modern' \(derived "
                                                r"figures\).*--catalog modern"):
        simulate(trace([10.0]), "T4=4", "fifo", show_progress=False)
    res = simulate(trace([10.0]), "T4=4,H100=1", "fifo", catalog=load_catalog("modern"), show_progress=False)
    assert res.metrics().finished == 1


def test_results_say_how_many_figures_are_derived() -> None:
    modern = load_catalog("modern")
    tr = trace([100.0, 100.0], model="ResNet-50 (batch size 64)")
    res = simulate(tr, "V100=1,T4=1,H100=1", "fifo", catalog=modern, show_progress=False)
    assert res.catalog["figures"] == 3 and res.catalog["derived"] == 2
    assert {s["name"]: s["kind"] for s in res.catalog["sources"]} == {"gavel-simulation": "measured",
                                                                        "derived:modern-v1": "derived"}
    back = SimulationResult.from_dict(json.loads(res.to_json()))
    assert back.catalog == res.catalog and back.jobs == res.jobs
    measured = simulate(tr, "V100=1", "fifo", show_progress=False)
    assert measured.catalog["derived"] == 0


def test_metadata_and_gpus_reach_the_records_and_change_nothing_else() -> None:
    base = trace([500.0, 900.0])
    extra = Trace(id=base.id, arrival=base.arrival, model=base.model, scale=base.scale, iterations=base.iterations,
                  gpus=[0.5, 1.0], metadata=[{"queue": "q1"}, {}])
    a = simulate(base, "V100=1", "fifo", show_progress=False)
    b = simulate(extra, "V100=1", "fifo", show_progress=False)
    assert [j.finish for j in a.jobs] == [j.finish for j in b.jobs]
    assert b.jobs[0].metadata == {"queue": "q1"} and b.jobs[1].metadata == {}
    text = b.to_json()
    assert '"metadata": {"queue": "q1"}' in text and text.count('"metadata"') == 1   # empty ones left out
    assert SimulationResult.from_dict(json.loads(text)).jobs == b.jobs


def test_progress_is_simulated_time_towards_the_longest_remaining_job() -> None:
    cat = load_catalog()
    rate = cat.alone_throughput(A3C, 1, "V100")
    tr = trace([rate * 60] * 20 + [rate * 36_000])               # 20 one-minute jobs, one 10-hour job
    gpus = {"V100": 4}
    led = _Ledger.of(tr, cat, gpus)
    cfg = SimConfig()
    frac0, _, _ = _progress(led, 0.0, 0.0, 4, cfg, 0.01, 0, 21, 0)
    assert frac0 == 0.0
    led.done[:20] = led.work[:20]                                 # the short jobs are done after two rounds
    led.finish[:20] = 100.0
    led.done[20] = rate * 720
    frac, note, eta = _progress(led, 720.0, 0.0, 4, cfg, 0.01, 2, 1, 20)
    assert frac == pytest.approx(720.0 / 36_000.0)                # not 20/21 of the jobs
    assert eta == pytest.approx((36_000.0 - 720.0) / 360.0 * 0.01)  # rounds left x wall seconds per round
    assert "20/21 done" in note
    capped, _, eta_c = _progress(led, 720.0, 0.0, 4, SimConfig(until=3600.0), 0.01, 2, 1, 20)
    assert capped == pytest.approx(0.2) and eta_c == pytest.approx(8 * 0.01)


def test_progress_bar_prints_the_given_eta() -> None:
    buf = io.StringIO()
    bar = ProgressBar(1.0, "sim", delay=0.0, interval=0.0, stream=buf)
    assert bar.due()
    bar.update(0.25, "round 3", eta=3725.0)
    bar.close("(done)")
    text = buf.getvalue()
    assert " 25.0% " in text and "eta 1h02m" in text and "round 3" in text and "sim done in" in text
    quiet = ProgressBar(1.0, "sim", enabled=False, stream=buf)
    assert not quiet.due()
