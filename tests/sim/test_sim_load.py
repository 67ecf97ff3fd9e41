"""The offered load of a trace on a cluster, and the CLI's warning for long overloaded replays."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fairshare.cli import main
from fairshare.errors import InvalidInputError
from fairshare.sim.catalog import load_catalog
from fairshare.sim.load import offered_load
from fairshare.sim.traces import generate_trace, read_trace

TRACE = """id,arrival,model,scale,iterations
a,0,ResNet-18 (batch size 64),1,1000
b,3600,ResNet-18 (batch size 64),2,1000
"""


def test_ratio_is_gpu_time_over_the_gpu_time_of_the_arrival_span(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(TRACE)
    trace = read_trace(path)
    cat = load_catalog()
    models = ("ResNet-18 (batch size 64)",) * 2
    fastest = cat.throughput_matrix(models, np.array([1, 2]), ("V100", "K80")).max(axis=1)
    need = 1000 / fastest[0] + 2 * 1000 / fastest[1]
    load = offered_load(trace, "V100=2,K80=2", cat)
    assert load.gpu_seconds == pytest.approx(need)
    assert load.span_seconds == 3600.0 and load.gpus == 4
    assert load.ratio == pytest.approx(need / (4 * 3600.0))
    assert load.overloaded is (load.ratio > 1)
    assert "offered load" in load.describe()


def test_load_grows_with_the_arrival_rate() -> None:
    low = offered_load(generate_trace(400, jobs_per_hour=1, seed=0), "V100=36,P100=36,K80=36")
    high = offered_load(generate_trace(400, jobs_per_hour=8, seed=0), "V100=36,P100=36,K80=36")
    assert high.ratio == pytest.approx(low.ratio * 8, rel=0.35)  # same recipe, eight times the arrivals
    assert not low.overloaded and high.overloaded
    one = generate_trace(1, jobs_per_hour=1, seed=0, multi_gpu=False)
    assert offered_load(one, "V100=1").ratio == float("inf")  # one arrival: no span


def test_a_job_that_runs_nowhere_is_named() -> None:
    trace = generate_trace(5, jobs_per_hour=1, seed=0)
    with pytest.raises(InvalidInputError, match=r"trace\[\d\]"):
        offered_load(trace, "H200=1")


def test_cli_warns_whenever_the_load_says_something(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Overloaded: a warning on every run (saying the replay slows down only for long ones); mostly idle: a
    warning that jobs rarely compete; otherwise a one-line note of the load."""
    import fairshare.cli.simulate as sim_cli

    out = tmp_path / "res"
    args = ["simulate", "--generate", "--jobs", "60", "--jobs-per-hour", "30", "--single-gpu", "--cluster",
            "V100=2,K80=2", "--max-rounds", "2", "--no-plots", "--records", "none", "--out", str(out)]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "fairshare: warning: the trace needs at least" in err and "cannot keep up" in err
    assert "slows down" not in err                                     # 2 rounds: not a long replay
    monkeypatch.setattr(sim_cli, "LONG_REPLAY_ROUNDS", 2)
    assert main(args) == 0
    assert "slows down" in capsys.readouterr().err
    calm = [*args[:5], "1", "--single-gpu", "--cluster", "V100=36,P100=36,K80=36", *args[9:]]
    assert main(calm) == 0                                             # 1 job/h on 108 GPUs
    err = capsys.readouterr().err
    assert "rarely wait for each other" in err and "cannot keep up" not in err
    t = load_catalog().alone_throughput("ResNet-18 (batch size 64)", 1, "V100")
    path = tmp_path / "t.csv"                       # three 500 s jobs, 1,000 s apart, on one GPU: load 0.75
    path.write_text("id,arrival,model,scale,iterations\n" + "".join(
        f"j{k},{1000 * k},ResNet-18 (batch size 64),1,{500 * t}\n" for k in range(3)))
    busy = ["simulate", "--trace", str(path), "--cluster", "V100=1", "--policy", "fifo", "--no-plots", "--records",
            "none", "--out", str(out)]
    assert main(busy) == 0
    err = capsys.readouterr().err
    assert "fairshare: load: the trace needs" in err and "warning" not in err


def test_fluid_estimate_matches_replays_of_the_sample(tmp_path: Path) -> None:
    """The busy fraction of the fluid model against what replays report (docs/traces.md, "Load")."""
    from fairshare.sim.metrics import compute_metrics
    from fairshare.sim.simulator import simulate

    for jph, cluster in ((2, "V100=2,P100=2,K80=2"), (6, "V100=2,P100=2,K80=2"), (1, "V100=8,P100=8,K80=8")):
        trace = generate_trace(40, jobs_per_hour=jph, seed=3, multi_gpu=False)
        load = offered_load(trace, cluster)
        for policy in ("fifo", "gavel"):
            res = simulate(trace, cluster, policy, show_progress=False)
            busy = compute_metrics(res.jobs, res.rounds).gpu_busy_fraction
            assert abs(load.busy_fraction - busy) <= 0.12, (jph, cluster, policy, load.busy_fraction, busy)


def test_fluid_schedule_by_hand() -> None:
    from fairshare.sim.load import fluid_schedule

    # a 4-GPU gang and a 1-GPU job on 4 GPUs: 5 wanted, each at 4/5 speed until the short one ends
    busy, end = fluid_schedule(np.array([0.0, 0.0]), np.array([4.0, 1.0]), np.array([100.0, 8.0]), 4)
    t1 = 8.0 / 0.8                                       # the 1-GPU job ends at 10 s
    left = 100.0 - 0.8 * t1                              # the gang's full-speed seconds still to go
    assert end == pytest.approx(t1 + left) and busy == pytest.approx(1.0)
    busy, end = fluid_schedule(np.array([0.0, 50.0]), np.array([1.0, 1.0]), np.array([10.0, 10.0]), 2)
    assert end == 60.0 and busy == pytest.approx(0.5)   # idle gap left out; one of two GPUs busy
    busy, end = fluid_schedule(np.array([0.0]), np.array([2.0]), np.array([100.0]), 2, until=30.0)
    assert end == 30.0 and busy == 1.0
