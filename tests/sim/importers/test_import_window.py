"""``import_trace(..., window=(FROM, TO))`` and ``fairshare trace import --window``: a part of a real trace."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairshare.cli import main
from fairshare.cli.importing import parse_window
from fairshare.errors import InvalidInputError
from fairshare.sim.catalog import load_catalog
from fairshare.sim.importers import CsvColumns, import_trace

DATA = Path(__file__).resolve().parents[2] / "data" / "traces"
GENERIC = DATA / "generic" / "my_cluster.csv"
OPENB = sorted((DATA / "openb2023").glob("*.csv"))
COLS = CsvColumns(arrival="submitted", gpus="gpus", duration="runtime_min", time_unit="min", gpu_type="gpu_model",
                  user="owner", id="job", status="state", running=("RUNNING",))
CLUSTER = ("T4", "A10", "A100-80GB", "H100")


@functools.cache
def _modern():
    return load_catalog("modern")


@functools.cache
def _whole():
    return import_trace([GENERIC], "csv", catalog=_modern(), columns=COLS, gpu_types=CLUSTER)


@pytest.fixture(scope="module")
def modern():
    return _modern()


@pytest.fixture(scope="module")
def whole():
    return _whole()


def _since(res) -> dict[str, float]:
    """Hours after the first kept job's submission, by job id (the whole import's arrivals)."""
    return dict(zip(res.trace.id, (res.trace.arrival / 3600.0).tolist(), strict=True))


def test_no_window_is_the_whole_trace(modern, whole) -> None:
    res = import_trace([GENERIC], "csv", catalog=modern, columns=COLS, gpu_types=CLUSTER, window=(None, None))
    assert res.trace == whole.trace and res.skipped == whole.skipped and res.source["window"] is None
    assert whole.summary()[1] == "arrivals: 0 to 44.3 h (a window keeps a part: --window FROM:TO, in hours or dates)"
    odd = import_trace([GENERIC], "csv", catalog=modern, columns=COLS, window=(1000.125 / 100, None))
    assert any(line.endswith("(submitted in the window 10.00125: h of the source)") for line in odd.summary())


@settings(max_examples=15, deadline=None)
@given(cut=st.floats(min_value=0.05, max_value=44.0))  # the sample's arrivals span 44.3 h
def test_two_windows_split_the_trace_at_any_hour(cut: float) -> None:
    """[0, cut) and [cut, open) hold every job once; each job keeps its model, scale and work."""
    modern, whole = _modern(), _whole()
    hours = _since(whole)
    early = import_trace([GENERIC], "csv", catalog=modern, columns=COLS, gpu_types=CLUSTER, window=(0, cut))
    late = import_trace([GENERIC], "csv", catalog=modern, columns=COLS, gpu_types=CLUSTER, window=(cut, None))
    assert set(early.trace.id) == {j for j, h in hours.items() if h < cut}
    assert set(late.trace.id) == {j for j, h in hours.items() if h >= cut}
    assert early.skipped.get("submitted after the window", 0) == len(late.trace)
    assert late.skipped.get("submitted before the window", 0) == len(early.trace)
    pos = {j: i for i, j in enumerate(whole.trace.id)}
    for part in (early, late):
        i = np.array([pos[j] for j in part.trace.id], dtype=np.int64)
        assert part.trace.model == tuple(whole.trace.model[k] for k in i)
        assert np.array_equal(part.trace.scale, whole.trace.scale[i])
        assert np.array_equal(part.trace.iterations, whole.trace.iterations[i])
        assert np.array_equal(part.trace.censored, whole.trace.censored[i])
        # arrivals keep their gaps and start at 0 again
        assert part.trace.arrival.min() == 0
        assert np.allclose(part.trace.arrival, whole.trace.arrival[i] - whole.trace.arrival[i].min())


def test_window_counts_every_left_out_job_once(tmp_path: Path, modern) -> None:
    """The origin is the source's first submission, even of a job left out; outside jobs count as outside."""
    src = tmp_path / "w.csv"
    src.write_text("id,sub,g,d\n"
                   "cpu,0,0,100\n"        # no GPU, submitted first: sets the origin
                   "a,1800,1,600\n"       # 0.5 h
                   "never,3600,1,\n"      # 1 h, never started
                   "b,5400,2,600\n"       # 1.5 h
                   "c,9000,1,600\n"       # 2.5 h
                   "cpu2,9500,0,50\n")    # 2.64 h, no GPU
    cols = CsvColumns(arrival="sub", gpus="g", duration="d", id="id")
    res = import_trace([src], "csv", catalog=modern, columns=cols, window=(1, 2))
    assert res.trace.id == ("b",) and res.trace.arrival.tolist() == [0.0]
    assert res.summary()[0].startswith("imported 1 job (0 censored")
    assert res.skipped == {"submitted before the window": 2, "submitted after the window": 2, "never started": 1}
    assert sum(res.skipped.values()) + len(res.trace) == 6
    assert res.source["window"] == [1.0, 2.0]
    line = next(s for s in res.summary() if s.startswith("arrivals:"))
    assert line == "arrivals: 0 to 0.0 h (submitted in the window 1:2 h of the source)"
    early = import_trace([src], "csv", catalog=modern, columns=cols, window=(None, 1))
    assert early.trace.id == ("a",) and early.skipped == {"submitted after the window": 4, "no GPU": 1}


def test_a_window_changes_which_jobs_not_their_work(modern) -> None:
    """Without --cluster the target types come from the whole source, so a job's model and work do not depend on
    the window (the sample's types are known, so the targets are the suggestion's)."""
    full = import_trace([GENERIC], "csv", catalog=modern, columns=COLS)
    for window in ((0, 1), (3, 4), (20, None)):
        part = import_trace([GENERIC], "csv", catalog=modern, columns=COLS, window=window)
        assert part.suggested_cluster == full.suggested_cluster
        assert part.source["target_gpu_types"] == full.source["target_gpu_types"]
        pos = {j: i for i, j in enumerate(full.trace.id)}
        i = np.array([pos[j] for j in part.trace.id], dtype=np.int64)
        assert part.trace.model == tuple(full.trace.model[k] for k in i)
        assert np.array_equal(part.trace.iterations, full.trace.iterations[i])


PAI = sorted((DATA / "pai2020").glob("*.csv"))
PHILLY = sorted((DATA / "philly").iterdir())


@pytest.mark.parametrize("fmt, files", [("pai2020", PAI), ("philly", PHILLY), ("openb2023", OPENB)])
def test_every_format_splits_at_a_window(modern, fmt: str, files: list[Path]) -> None:
    """Each built-in reader: a cut in the middle of the trace puts every source job, kept or left out, on
    exactly one side; the jobs left out for other reasons are counted on their side of the cut."""
    full = import_trace(files, fmt, catalog=modern)
    rows = len(full.trace) + sum(full.skipped.values())
    cut = float(full.trace.arrival.max()) / 3600.0 / 2
    early = import_trace(files, fmt, catalog=modern, window=(None, cut))
    late = import_trace(files, fmt, catalog=modern, window=(cut, None))
    for part in (early, late):
        assert len(part.trace) + sum(part.skipped.values()) == rows
    assert len(early.trace) + len(late.trace) == len(full.trace)
    assert set(early.trace.id) | set(late.trace.id) == set(full.trace.id)
    assert early.skipped["submitted after the window"] == len(late.trace) + sum(
        n for why, n in late.skipped.items() if why != "submitted before the window")
    for why, n in full.skipped.items():
        assert early.skipped.get(why, 0) + late.skipped.get(why, 0) == n, why


def test_machine_list_still_gives_the_cluster(modern) -> None:
    full = import_trace(OPENB, "openb2023", catalog=modern)
    part = import_trace(OPENB, "openb2023", catalog=modern, window=(0, 1))
    assert part.suggested_cluster == full.suggested_cluster and len(part.trace) < len(full.trace)


@pytest.mark.parametrize("window, match", [
    ((5, 5), "TO must be after FROM"), ((6, 2), "TO must be after FROM"), ((-1, None), ">= 0"),
    ((None, 0), "TO must be > 0"),
    ((float("nan"), None), "finite"), ((0, float("inf")), "finite"), (("0", 1), "not an ISO 8601 date"),
    ((True, 2), "numbers"),
    ((1,), r"\(FROM, TO\)"), ("0:1", r"\(FROM, TO\)"),
])
def test_bad_window_is_refused_naming_it(modern, window, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match) as info:
        import_trace([GENERIC], "csv", catalog=modern, columns=COLS, window=window)
    assert info.value.field == "window"


def test_a_window_with_no_job_says_why(modern) -> None:
    with pytest.raises(InvalidInputError, match=r"no job left to import \(1 submitted before the window; 149 "
                                                 r"submitted after the window\); the source's jobs were "
                                                 r"submitted from 0 to 44.3 h") as info:
        import_trace([GENERIC], "csv", catalog=modern, columns=COLS, window=(1e-6, 2e-6))
    assert info.value.field == "window"
    with pytest.raises(InvalidInputError, match=r"\(150 submitted before the window\); .* from 0 to 44.3 h"):
        import_trace([GENERIC], "csv", catalog=modern, columns=COLS, window=(100, None))


def test_parse_window() -> None:
    assert parse_window(None) is None
    assert parse_window("3000:3168") == (3000.0, 3168.0)
    assert parse_window(" 12 : ") == (12.0, None) and parse_window(":48") == (None, 48.0)
    for bad in ("3000", ":", "a:5", "1:2:3"):
        with pytest.raises(InvalidInputError) as info:
            parse_window(bad)
        assert info.value.field == "--window"


def test_cli_window(tmp_path: Path, capsys: pytest.CaptureFixture[str], whole) -> None:
    out = tmp_path / "w.json"
    opts = ["--arrival", "submitted", "--gpus", "gpus", "--duration", "runtime_min", "--time-unit", "min",
            "--gpu-type", "gpu_model", "--user", "owner", "--id", "job", "--status", "state", "--running", "RUNNING"]
    assert main(["trace", "import", str(GENERIC), "--format", "csv", *opts, "--catalog", "modern", "--cluster",
                 "T4=4,A10=4,A100-80GB=2,H100=2", "--window", "24:", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    kept = sum(h >= 24 for h in _since(whole).values())
    assert f"imported {kept} jobs" in err and f"{len(whole.trace) - kept} submitted before the window" in err
    assert "(submitted in the window 24: h of the source)" in err
    assert json.loads(out.read_text())["meta"]["imported"]["window"] == [24.0, None]
    assert main(["trace", "import", str(GENERIC), "--format", "csv", *opts, "--window", "9:3", "-o",
                 str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert "`--window` = '9:3': TO must be after FROM" in err and not (tmp_path / "x.json").exists()


# ------------------------------------------------------------------------------------------------ carry-in
def test_carry_in_keeps_the_jobs_running_at_the_window_start(modern, whole) -> None:
    """Duration-only CSV: a job's start is its submit time; those running at 10 h arrive at 0 with what was left."""
    lo = 10 * 3600.0
    submit = dict(zip(whole.trace.id, whole.trace.arrival.tolist(), strict=True))   # origin = first submission
    run = {j: float(m["run_seconds"]) for j, m in zip(whole.trace.id, whole.trace.metadata, strict=True)}
    running = {j for j in submit if submit[j] < lo < submit[j] + run[j]}
    assert running                                                   # the sample has such jobs at 10 h
    res = import_trace([GENERIC], "csv", catalog=modern, columns=COLS, gpu_types=CLUSTER, window=(10, None),
                       carry_in=True)
    plain = import_trace([GENERIC], "csv", catalog=modern, columns=COLS, gpu_types=CLUSTER, window=(10, None))
    t = res.trace
    got = {j for j, m in zip(t.id, t.metadata, strict=True) if m.get("carried_in") == "true"}
    assert got == running and res.source["carried_in"] == len(running) and res.source["carry_in"] is True
    assert set(t.id) == set(plain.trace.id) | running
    assert res.skipped["submitted before the window"] == plain.skipped["submitted before the window"] - len(running)
    pos = {j: i for i, j in enumerate(whole.trace.id)}
    for i, j in enumerate(t.id):
        w = pos[j]
        if j in running:
            left = submit[j] + run[j] - lo
            assert t.arrival[i] == 0 and float(t.metadata[i]["run_seconds"]) == pytest.approx(left)
            assert float(t.metadata[i]["source_run_seconds"]) == run[j]
            # the same model and throughput: work in proportion to the run time left (rounding: within 1)
            assert t.model[i] == whole.trace.model[w]
            assert abs(t.iterations[i] - whole.trace.iterations[w] * left / run[j]) <= 1
        else:
            assert t.arrival[i] == pytest.approx(submit[j] - lo) and t.iterations[i] == whole.trace.iterations[w]
    line = next(s for s in res.summary() if s.startswith("arrivals:"))
    assert line.endswith(f"(submitted in the window 10: h of the source; {len(running)} carried in, not done "
                         "at its start)")


def test_carry_in_uses_the_start_time_when_the_source_has_one(tmp_path: Path, modern) -> None:
    src = tmp_path / "s.csv"
    src.write_text("id,sub,start,end,g\n"
                   "a,0,7200,18000,1\n"      # started at 2 h, ended at 5 h: 2 h left at 3 h
                   "b,0,7200,9000,1\n"       # ended at 2.5 h: not running at 3 h
                   "c,3600,,,1\n"            # never started
                   "d,14400,14400,16200,1\n")  # submitted at 4 h, in the window
    cols = CsvColumns(arrival="sub", gpus="g", start="start", end="end", id="id")
    res = import_trace([src], "csv", catalog=modern, columns=cols, window=(3, None), carry_in=True)
    t = res.trace
    assert t.id == ("a", "d") and t.arrival.tolist() == [0.0, 3600.0]
    assert [float(m["run_seconds"]) for m in t.metadata] == [7200.0, 1800.0]
    assert res.skipped == {"submitted before the window": 2}


def test_carry_in_on_the_openb_sample_matches_the_pod_list(modern) -> None:
    """openb: a pod is running at the window's start if it was created before it, scheduled, and deleted after."""
    import csv
    pods = next(p for p in OPENB if "pod_list" in p.name)
    rows = list(csv.DictReader(pods.open()))
    full = import_trace(OPENB, "openb2023", catalog=modern)
    origin = min(float(r["creation_time"]) for r in rows)
    cut = float(full.trace.arrival.max()) / 3600.0 / 2
    lo = origin + cut * 3600.0
    expect = {r["name"] for r in rows
              if float(r["num_gpu"] or 0) * float(r["gpu_milli"] or 1000) > 0 and r["scheduled_time"]
              and float(r["creation_time"]) < lo < float(r["deletion_time"])}
    res = import_trace(OPENB, "openb2023", catalog=modern, window=(cut, None), carry_in=True)
    got = {j for j, m in zip(res.trace.id, res.trace.metadata, strict=True) if m.get("carried_in")}
    assert got == expect and expect


@pytest.mark.parametrize("window", [None, (None, 5)])
def test_carry_in_needs_a_window_start(modern, window) -> None:
    with pytest.raises(InvalidInputError, match="needs a window with a start") as info:
        import_trace([GENERIC], "csv", catalog=modern, columns=COLS, window=window, carry_in=True)
    assert info.value.field == "carry_in"


def test_cli_carry_in(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    opts = ["--arrival", "submitted", "--gpus", "gpus", "--duration", "runtime_min", "--time-unit", "min"]
    out = tmp_path / "c.json"
    assert main(["trace", "import", str(GENERIC), "--format", "csv", *opts, "--catalog", "modern", "--window", "10:",
                 "--carry-in", "-o", str(out)]) == 0
    assert "carried in, not done at its start" in capsys.readouterr().err
    meta = json.loads(out.read_text())["meta"]["imported"]
    assert meta["carry_in"] is True and meta["carried_in"] >= 1
    assert main(["trace", "import", str(GENERIC), "--format", "csv", *opts, "--carry-in", "-o",
                 str(tmp_path / "x.json")]) == 2
    assert "`--carry-in` = True: needs a window with a start" in capsys.readouterr().err


def test_carry_in_counts_time_from_the_window_start_and_carries_waiting_jobs(tmp_path: Path, modern) -> None:
    src = tmp_path / "w.csv"
    src.write_text("id,sub,start,end,g\n"
                   "half,0,0,10800,0.5\n"        # running at 1 h, asks for half a GPU
                   "wait,0,7200,9000,1\n"        # submitted at 0, still waiting at 1 h: its whole run is left
                   "y,7200,7200,9000,1\n")       # submitted at 2 h, inside the window
    cols = CsvColumns(arrival="sub", gpus="g", start="start", end="end", id="id")
    res = import_trace([src], "csv", catalog=modern, columns=cols, window=(1, None), carry_in=True)
    t = res.trace
    assert t.id == ("half", "wait", "y") and t.arrival.tolist() == [0.0, 0.0, 3600.0]
    assert [m["run_seconds"] for m in t.metadata] == ["7200.0", "1800.0", "1800.0"]
    assert t.metadata[1]["source_run_seconds"] == "1800.0"
    # a carried-in job left out by another rule is counted under that rule; time 0 stays the window's start
    drop = import_trace([src], "csv", catalog=modern, columns=cols, window=(1, None), carry_in=True,
                        fractional="drop")
    assert drop.trace.id == ("wait", "y") and drop.trace.arrival.tolist() == [0.0, 3600.0]
    assert drop.skipped == {"part of a GPU (fractional=drop)": 1}
    alone = import_trace([src], "csv", catalog=modern, columns=cols, window=(1.5, None), carry_in=True,
                         fractional="drop")
    assert alone.trace.id == ("wait", "y") and alone.trace.arrival.tolist() == [0.0, 1800.0]
