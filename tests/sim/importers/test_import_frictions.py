"""Real traces without hand work (issue 32), on the shipped samples: calendar windows, a source with no GPU type,
gangs beyond 8 GPUs, the tenant from any field."""

from __future__ import annotations

import functools
import json
from datetime import datetime, timezone
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
from fairshare.sim.importers.rule import common_gpu_types

DATA = Path(__file__).resolve().parents[2] / "data" / "traces"
GENERIC = DATA / "generic" / "my_cluster.csv"
PHILLY = [DATA / "philly" / "cluster_job_log", DATA / "philly" / "cluster_machine_list"]
OPENB = sorted((DATA / "openb2023").glob("*.csv"))
NO_TYPE = CsvColumns(arrival="submitted", gpus="gpus", duration="runtime_min", time_unit="min", user="owner",
                     id="job")
UTC = timezone.utc


@functools.cache
def _philly_jobs() -> list[dict]:
    return json.loads(PHILLY[0].read_text())


def _first_submission() -> float:
    return min(datetime.fromisoformat(j["submitted_time"]).replace(tzinfo=UTC).timestamp() for j in _philly_jobs())


# ------------------------------------------------------------------------------------------- calendar windows
@settings(max_examples=15, deadline=None)
@given(st.floats(0.0, 20.0), st.floats(0.5, 12.0))
def test_a_date_window_is_the_same_hours_window(start_h: float, length_h: float) -> None:
    origin = _first_submission()
    lo = datetime.fromtimestamp(origin + 3600 * start_h, tz=UTC)
    hi = datetime.fromtimestamp(origin + 3600 * (start_h + length_h), tz=UTC)
    try:
        by_hours = import_trace(PHILLY, "philly", window=(start_h, start_h + length_h))
    except InvalidInputError as exc:          # no job in that window: the date window says so too
        with pytest.raises(InvalidInputError, match="no job left"):
            import_trace(PHILLY, "philly", window=(lo, hi))
        assert "no job left" in exc.reason
        return
    by_date = import_trace(PHILLY, "philly", window=(lo.isoformat(), hi))
    assert by_date.trace.id == by_hours.trace.id
    np.testing.assert_allclose(by_date.trace.arrival, by_hours.trace.arrival, atol=1e-6)
    np.testing.assert_array_equal(by_date.trace.iterations, by_hours.trace.iterations)
    assert by_date.skipped == by_hours.skipped
    assert by_date.source["window"] == pytest.approx(by_hours.source["window"])
    assert by_date.source["window_utc"].endswith("UTC") and by_hours.source["window_utc"] is None


def test_parse_window_hours_dates_times_and_one_day() -> None:
    assert parse_window("3000:3168") == (3000.0, 3168.0)
    assert parse_window(":48") == (None, 48.0)
    d = datetime(2017, 10, 3, tzinfo=UTC)
    assert parse_window("2017-10-03:2017-10-04") == (d, d.replace(day=4))
    assert parse_window("2017-10-03") == (d, d.replace(day=4))                      # one date: that day
    assert parse_window("2017-10-03T08:00:2017-10-03T20:30") == (d.replace(hour=8), d.replace(hour=20, minute=30))
    assert parse_window("2017-10-03T08:00/2017-10-03T20:30:15") == (d.replace(hour=8),
                                                                    d.replace(hour=20, minute=30, second=15))
    assert parse_window("2017-10-03T08:00+08:00:") == (d.replace(hour=0), None)      # an offset is honoured
    for bad in ("2017-10-03:48", "yesterday:today", "2017-13-03", ":"):
        with pytest.raises(InvalidInputError, match="--window"):
            parse_window(bad)


def test_date_windows_are_refused_where_the_source_has_no_dates() -> None:
    with pytest.raises(InvalidInputError, match="openb2023 format gives times as seconds.*hours"):
        import_trace(OPENB, "openb2023", catalog=load_catalog("modern"), window=("2023-01-01", "2023-01-02"))
    with pytest.raises(InvalidInputError, match="both be hours or both be dates"):
        import_trace(PHILLY, "philly", window=(1.0, "2017-10-04"))


def test_cli_date_window_and_a_window_with_no_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t.json"
    assert main(["trace", "import", *map(str, PHILLY), "--format", "philly", "--window", "2017-10-03T12:00:2017-10-04",
                 "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "submitted in the window 2017-10-03 12:00 to 2017-10-04 00:00 UTC" in err
    meta = json.loads(out.read_text())["meta"]["imported"]
    assert meta["window_utc"] == "2017-10-03 12:00 to 2017-10-04 00:00 UTC"
    assert main(["trace", "import", *map(str, PHILLY), "--format", "philly", "--window", "2018-10-03",
                 "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no job left" in err and "submitted from 2017-10-03" in err and "UTC" in err


# ----------------------------------------------------------------------------------- a source with no GPU type
def test_no_gpu_type_targets_the_common_types_and_says_so(tmp_path: Path) -> None:
    cat = load_catalog()
    assert common_gpu_types(cat) == ("K80", "P100", "V100")
    res = import_trace([GENERIC], "csv", columns=NO_TYPE)
    assert res.source["target_gpu_types"] == ["K80", "P100", "V100"] and not res.source["gpu_types_known"]
    for model, scale in zip(res.trace.model, res.trace.scale, strict=True):       # no H200-only workload
        s = max(1, int(np.ceil(scale)))
        assert any(cat.supports(model, s, g) for g in ("K80", "P100", "V100"))
    text = "\n".join(res.summary())
    assert "GPU types: the source names none" in text and "give --cluster" in text
    assert f"a cluster of about {res.source['peak_gpus']} GPUs" in text and "--cluster K80=" in text
    # work: the run time at the fastest target type the model has data for
    j = 0
    rate = max(cat.alone_throughput(res.trace.model[j], int(max(1, np.ceil(res.trace.scale[j]))), g)
               for g in ("K80", "P100", "V100"))
    run = float(res.trace.metadata[j]["run_seconds"])
    assert res.trace.iterations[j] == pytest.approx(max(1, round(run * (rate if res.trace.scale[j] >= 1
                                                                      else rate * res.trace.scale[j]))))
    given = import_trace([GENERIC], "csv", columns=NO_TYPE, gpu_types=["V100"])
    assert given.source["targets_from"] == "cluster" and "suggested: a cluster" not in "\n".join(given.summary())


def test_replay_on_other_types_says_import_again_with_cluster(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.json"
    assert main(["trace", "import", str(GENERIC), "--format", "csv", "--arrival", "submitted", "--gpus", "gpus",
                 "--duration", "runtime_min", "--time-unit", "min", "--cluster", "H200=8", "-o", str(trace)]) == 0
    capsys.readouterr()
    assert main(["simulate", "--trace", str(trace), "--cluster", "V100=8", "--no-plots", "--out",
                 str(tmp_path / "r")]) == 2
    assert "import again with --cluster" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------- gangs beyond 8 GPUs
def test_gangs_beyond_8_are_kept_on_derived_scales_and_replay(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    big = [j for j in _philly_jobs() if len(j["attempts"]) and sum(
        len(d["gpus"]) for d in j["attempts"][-1]["detail"]) > 8]
    assert big                                              # the sample has gangs of more than 8 GPUs
    res = import_trace(PHILLY, "philly")
    assert "more GPUs than any catalog scale" not in " ".join(res.skipped)
    assert int((res.trace.scale > 8).sum()) == res.source["derived_scales"] > 0
    assert "derived:scale-out-v1" in res.source["catalog"]
    assert "on derived scales (rule scale-out-v1" in "\n".join(res.summary())
    trace = tmp_path / "t.json"
    assert main(["trace", "import", *map(str, PHILLY), "--format", "philly", "--cluster", "V100=64,P100=16",
                 "--window", "0:6", "-o", str(trace)]) == 0
    capsys.readouterr()
    assert main(["simulate", "--trace", str(trace), "--cluster", "V100=64,P100=16", "--policy", "fifo",
                 "--no-plots", "--records", "json", "--out", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    assert "added --catalog scale-out" in err
    rec = json.loads((tmp_path / "r" / "records.json").read_text())
    assert rec["catalog"][-1] == "scale-out" and any(j["scale"] > 8 for j in rec["runs"][0]["jobs"])


# ----------------------------------------------------------------------------------------------- the tenant
def test_tenant_from_a_csv_column_or_a_built_in_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cols = CsvColumns(arrival="submitted", gpus="gpus", duration="runtime_min", time_unit="min", user="owner",
                      id="job", tenant="queue")
    res = import_trace([GENERIC], "csv", columns=cols)
    rows = {r.split(",")[0]: r.split(",") for r in GENERIC.read_text().splitlines()[1:]}
    head = GENERIC.read_text().splitlines()[0].split(",")
    assert all(t == rows[i][head.index("queue")] for i, t in zip(res.trace.id, res.trace.tenant, strict=True))
    assert all(m["user"] == rows[i][head.index("owner")] for i, m in zip(res.trace.id, res.trace.metadata,
                                                                          strict=True))
    ph = import_trace(PHILLY, "philly", tenant="vc")
    assert ph.trace.tenant == tuple(m["vc"] for m in ph.trace.metadata) and ph.source["tenant"] == "vc"
    assert import_trace(PHILLY, "philly").trace.tenant == tuple(m["user"] for m in ph.trace.metadata)
    with pytest.raises(InvalidInputError, match=r"`tenant` = 'team': no such field.*vc"):
        import_trace(PHILLY, "philly", tenant="team")
    out = tmp_path / "t.json"
    assert main(["trace", "import", str(GENERIC), "--format", "csv", "--arrival", "submitted", "--gpus", "gpus",
                 "--duration", "runtime_min", "--time-unit", "min", "--tenant", "team", "-o", str(out)]) == 2
    assert "`--tenant` = 'team': no such column" in capsys.readouterr().err
    assert main(["trace", "import", *map(str, PHILLY), "--format", "philly", "--tenant", "vc", "-o", str(out)]) == 0
    assert {j["tenant"] for j in json.loads(out.read_text())["jobs"]} == {m["vc"] for m in ph.trace.metadata}


# --------------------------------------------------------------------------- arrivals given as gaps (--arrival-gaps)
def test_arrival_gaps_are_summed_into_submit_times(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gaps = [0, 120, 0, 3600, 30]
    path = tmp_path / "gaps.csv"
    path.write_text("job,interval,gpus,run\n" + "".join(f"j{k},{g},1,600\n" for k, g in enumerate(gaps)))
    cols = CsvColumns(arrival="interval", gpus="gpus", duration="run", id="job", arrival_gaps=True)
    res = import_trace([path], "csv", columns=cols)
    assert dict(zip(res.trace.id, res.trace.arrival.tolist(), strict=True)) == {
        f"j{k}": float(t) for k, t in enumerate(np.cumsum(gaps))}
    part = import_trace([path], "csv", columns=cols, window=(0.1, None))       # 360 s on: the last two
    assert sorted(part.trace.id) == ["j3", "j4"]
    path.write_text("job,interval,gpus,run\nj0,0,1,600\nj1,-5,1,600\n")
    with pytest.raises(InvalidInputError, match=r"line 3, interval.*>= 0"):
        import_trace([path], "csv", columns=cols)
    assert main(["trace", "import", str(OPENB[1]), "--format", "openb2023", "--arrival-gaps", "-o",
                 str(tmp_path / "x.json")]) == 2
    assert "--arrival-gaps" in capsys.readouterr().err
