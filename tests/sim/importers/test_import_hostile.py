"""Malformed trace sources (issue 31: M2-M5, L3): refused naming file, line and column, or read as documented.

The rule (docs/traces.md, "Malformed sources"): a source that cannot be read as its format says (a malformed
line, a repeated column, a missing required column, a cell that is not what its column holds, times of two
kinds in one column, a run time too long for any trace) is refused, exit 2, naming the file, line and column;
a well-formed job that lacks what a replay needs (no GPU, never started, end before start) is left out and
counted by reason. Repeated job ids are kept, renamed ``ID#2``, ``ID#3``, and reported.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairshare.cli import main
from fairshare.errors import InvalidInputError
from fairshare.sim.importers import CsvColumns, import_trace

COLS = CsvColumns(arrival="sub", gpus="g", duration="d", id="id")
CSV_ARGS = ["--format", "csv", "--arrival", "sub", "--gpus", "g", "--duration", "d", "--id", "id"]
PHILLY_JOB = {"jobid": "b", "submitted_time": "2017-10-03 08:00:00",
              "attempts": [{"start_time": "2017-10-03 08:01:00", "end_time": "2017-10-03 09:00:00",
                            "detail": [{"ip": "m1", "gpus": ["gpu0"]}]}]}


def _csv(tmp_path: Path, text: str | bytes, name: str = "s.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def _refused(paths: list[Path], fmt: str, match: str, columns: CsvColumns | None = None) -> InvalidInputError:
    with pytest.raises(InvalidInputError, match=match) as info:
        import_trace(paths, fmt, columns=columns)
    return info.value


# ------------------------------------------------------------------------------------------------ M2
def test_bare_cr_line_ends_are_read(tmp_path: Path) -> None:
    res = import_trace([_csv(tmp_path, "id,sub,g,d\ra,0,1,60\rb,5,1,60\r")], "csv", columns=COLS)
    assert res.trace.id == ("a", "b")


def test_a_cell_too_long_is_refused_naming_the_line(tmp_path: Path) -> None:
    path = _csv(tmp_path, "id,sub,g,d,note\na,0,1,60," + "x" * 200_000 + "\n")
    _refused([path], "csv", r"`s.csv, line 2` = None: not a well-formed CSV line", COLS)


def test_openb_deletion_time_that_is_not_a_number_names_the_line(tmp_path: Path) -> None:
    pods = _csv(tmp_path, "name,num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time\np,1,1000,0,abc,5\n",
                "pods.csv")
    _refused([pods], "openb2023", r"`pods.csv, line 2, deletion_time` = 'abc': not a number")


def test_a_philly_machine_list_of_one_column_is_refused_naming_the_line(tmp_path: Path) -> None:
    log = _csv(tmp_path, json.dumps([PHILLY_JOB]), "cluster_job_log")
    machines = _csv(tmp_path, "machineId\nm1\n", "cluster_machine_list")
    _refused([log, machines], "philly", r"`cluster_machine_list, line 2` = 'm1': expected 3 fields")


def test_the_command_exits_2_on_malformed_sources(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _csv(tmp_path, "id,sub,g,d,note\na,0,1,60," + "x" * 200_000 + "\n")
    assert main(["trace", "import", str(path), *CSV_ARGS, "-o", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err
    assert "s.csv, line 2" in err and "internal error" not in err


# ------------------------------------------------------------------------------------------------ M3
@pytest.mark.parametrize("detail", [[], None, [{"ip": "m1", "gpus": None}], [{"ip": "m1"}]])
def test_a_philly_attempt_without_gpus_is_left_out_and_counted(tmp_path: Path, detail: object) -> None:
    job = json.loads(json.dumps(PHILLY_JOB))
    job["jobid"] = "a"
    job["attempts"][0]["detail"] = detail
    res = import_trace([_csv(tmp_path, json.dumps([job, PHILLY_JOB]), "log")], "philly")
    assert res.trace.id == ("b",) and res.skipped == {"no GPU": 1}


@pytest.mark.parametrize(("change", "field"), [
    ({"detail": {"ip": "m1"}}, r"cluster_job_log\[0\].attempts\[0\].detail"),
    ({"detail": [{"ip": "m1", "gpus": "gpu0"}]}, r"cluster_job_log\[0\].attempts\[0\].detail\[0\].gpus"),
    ({"detail": ["m1"]}, r"cluster_job_log\[0\].attempts\[0\].detail\[0\]"),
])
def test_malformed_philly_gpu_details_are_refused_naming_the_source_job(tmp_path: Path, change: dict,
                                                                        field: str) -> None:
    job = json.loads(json.dumps(PHILLY_JOB))
    job["attempts"][0].update(change)
    _refused([_csv(tmp_path, json.dumps([job]), "log")], "philly", field)


def test_a_philly_attempt_ending_before_it_starts_counts_as_end_before_start(tmp_path: Path) -> None:
    job = json.loads(json.dumps(PHILLY_JOB))
    job["jobid"] = "a"
    job["attempts"].insert(0, {"start_time": "2017-10-03 08:10:00", "end_time": "2017-10-03 08:00:00",
                               "detail": [{"ip": "m1", "gpus": ["gpu0"]}]})
    res = import_trace([_csv(tmp_path, json.dumps([job, PHILLY_JOB]), "log")], "philly")
    assert res.trace.id == ("b",) and res.skipped == {"end before start": 1}


# ------------------------------------------------------------------------------------------------ M4
def test_a_json_trace_the_reader_would_refuse_is_not_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    import fairshare.cli.importing as importing

    monkeypatch.setattr(importing, "MAX_JSON_BYTES", 2000)  # the same check as at 64 MiB, on a small source
    src = _csv(tmp_path, "id,sub,g,d\n" + "".join(f"j{i},{i},1,60\n" for i in range(40)))
    out = tmp_path / "o.json"
    assert main(["trace", "import", str(src), *CSV_ARGS, "-o", str(out)]) == 2
    assert "write it as .csv" in capsys.readouterr().err and not out.exists()
    assert main(["trace", "import", str(src), *CSV_ARGS, "-o", str(tmp_path / "o.csv")]) == 0


# ------------------------------------------------------------------------------------------------ M5
@pytest.mark.parametrize(("text", "match"), [
    ("id,sub,g,g,d\na,0,1,4,60\n", r"`s.csv, header` = 'g': column given twice"),
    ("id,sub,g,d\na,0,1,1e300\nb,0,1,60\n", r"`s.csv, line 2, id` = 'a': ran 1e\+300 s: .* above the 1e\+18"),
    ("id,sub,g,d\na,2024-03-04T00:00:00,1,60\nb,5,1,60\n", r"`s.csv, line 3, sub` = '5': a number in a column of "
                                                          r"dates \(line 2\)"),
    ("id,sub,g,d\na,5,1,60\nb,2024-03-04T00:00:00,1,60\n", r"`s.csv, line 3, sub` = .*a date in a column of numbers"),
    ("id,sub,g,d\na,0,1,60,7\n", r"`s.csv, line 2` = 'a,0,1,60,7': expected 4 fields"),
])
def test_malformed_csv_sources_are_refused(tmp_path: Path, text: str, match: str) -> None:
    _refused([_csv(tmp_path, text)], "csv", match, COLS)


def test_a_run_time_that_overflows_its_unit_is_refused_not_called_never_started(tmp_path: Path) -> None:
    cols = CsvColumns(arrival="sub", gpus="g", duration="d", id="id", time_unit="h")
    _refused([_csv(tmp_path, "id,sub,g,d\na,0,1,1e308\nb,0,1,60\n")], "csv", r"`s.csv, line 2, d` = '1e308': must "
             "be finite", cols)


def test_repeated_ids_are_renamed_without_collisions_and_reported(tmp_path: Path) -> None:
    res = import_trace([_csv(tmp_path, "id,sub,g,d\nj1,0,1,60\nj1,10,1,60\nj1#2,20,1,60\nj1,30,1,60\n")], "csv",
                       columns=COLS)
    assert res.trace.id == ("j1", "j1#3", "j1#2", "j1#4")
    assert res.source["renamed_ids"] == {"j1": ["j1#3", "j1#4"]}
    assert any("2 repeated job ids renamed" in line for line in res.summary())


def test_openb_needs_gpu_milli_and_whole_gpu_counts(tmp_path: Path) -> None:
    pods = _csv(tmp_path, "name,num_gpu,gpu_millis,creation_time,deletion_time,scheduled_time\np,1,250,0,100,5\n",
                "pods.csv")
    _refused([pods], "openb2023", r"`pods.csv, header` = .*needs the column gpu_milli")
    good = "name,num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time\np,1,250,0,100,5\n"
    pods = _csv(tmp_path, good, "pods.csv")
    for nodes, match in [("sn,cpu_milli,memory_mib,gpu,model\nn1,1,1,2.7,V100\n", r"line 2, gpu` = '2.7'"),
                         ("sn,cpu_milli,memory_mib,gpu,model\nn1,1,1\n", r"`nodes.csv, line 2` = 'n1,1,1'")]:
        _refused([pods, _csv(tmp_path, nodes, "nodes.csv")], "openb2023", match)


@pytest.mark.parametrize("cap", ["2.9", "-2"])
def test_pai_gpu_capacity_must_be_a_whole_count(tmp_path: Path, cap: str) -> None:
    job = _csv(tmp_path, "a,i,u,Terminated,1,5\n", "pai_job_table.csv")
    task = _csv(tmp_path, "a,worker,1,Terminated,1,5,400,1,100,T4\n", "pai_task_table.csv")
    spec = _csv(tmp_path, f"m1,T4,96,512,{cap}\n", "pai_machine_spec.csv")
    _refused([job, task, spec], "pai2020", r"`pai_machine_spec.csv, line 1, cap_gpu`")


# ------------------------------------------------------------------------------------------------ L3
def test_conflicting_gpu_type_map_entries_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _csv(tmp_path, "id,sub,g,d\na,0,1,60\n")
    argv = ["trace", "import", str(src), *CSV_ARGS, "-o", str(tmp_path / "o.json")]
    assert main([*argv, "--gpu-type-map", "V100=K80", "--gpu-type-map", "V100=P100"]) == 2
    assert "`--gpu-type-map` = 'V100=P100': V100 is already mapped to K80" in capsys.readouterr().err
    assert main([*argv, "--gpu-type-map", "V100=K80", "--gpu-type-map", "V100=K80"]) == 0  # the same twice is fine


def test_running_out_of_memory_is_reported_as_the_source_too_large(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import fairshare.sim.importers as importers

    def no_memory(*args: object, **kwargs: object) -> None:
        raise MemoryError

    monkeypatch.setattr(importers, "import_trace", no_memory)
    src = _csv(tmp_path, "id,sub,g,d\na,0,1,60\n")
    assert main(["trace", "import", str(src), *CSV_ARGS, "-o", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err
    assert "not enough memory to import" in err and "internal error" not in err
