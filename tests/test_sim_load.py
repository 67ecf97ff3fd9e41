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


def test_cli_warns_of_a_long_overloaded_replay_only(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import fairshare.cli.simulate as sim_cli

    out = tmp_path / "res"
    args = ["simulate", "--generate", "--jobs", "60", "--jobs-per-hour", "30", "--single-gpu", "--cluster",
            "V100=2,K80=2", "--max-rounds", "2", "--no-plots", "--records", "none", "--out", str(out)]
    assert main(args) == 0
    assert "warning" not in capsys.readouterr().err  # 2 rounds: not a long replay
    monkeypatch.setattr(sim_cli, "LONG_REPLAY_ROUNDS", 2)
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "fairshare: warning: the trace needs at least" in err and "offered load" in err
    calm = [*args[:5], "1", "--single-gpu", "--cluster", "V100=36,P100=36,K80=36", *args[9:]]
    assert "overloaded" not in calm and main(calm) == 0  # 1 job/h on 108 GPUs: not overloaded
    assert "warning" not in capsys.readouterr().err
