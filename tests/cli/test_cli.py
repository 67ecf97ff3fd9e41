"""The command line: allocate (exit codes, output document), simulate and compare (files written).

Exit codes (docs/cli.md): 0 ok, 2 bad input (one line naming the field or path), 1 a solver or policy
failure or a bug (one line; the traceback only with ``--debug``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import fairshare.cli.allocate
from fairshare.cli import example_round_text, main
from fairshare.cli.simulate import parse_policy
from fairshare.errors import FairshareError, PolicyError, SolverError

TRACE_CSV = ("id,arrival,model,scale,iterations\n"
             "a,0,ResNet-50 (batch size 64),1,20000\n"
             "b,100,LM (batch size 20),1,200000\n"
             "c,200,Transformer (batch size 64),1,30000\n")


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m fairshare ARGS`` in a subprocess, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "fairshare", *args], capture_output=True, text=True,
                          input=stdin, timeout=300, check=False)


def test_allocate_example_exact_prints_the_spec_optimum(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["allocate", "--example", "--mode", "exact"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "optimal" and out["mode"] == "exact"
    assert out["objective"] == pytest.approx(-3.4549, abs=1e-3)
    assert {tuple(p["jobs"]) for p in out["placements"]} == {("transformer-3",), ("resnet50-4",),
                                                              ("resnet18-1", "lm-2")}


def test_allocate_file_to_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "round.json"
    src.write_text(example_round_text())
    dst = tmp_path / "out.json"
    assert main(["allocate", str(src), "--mode", "fast", "-o", str(dst)]) == 0
    out = json.loads(dst.read_text())
    assert out["status"] == "heuristic"
    assert set(out["jobs"]) == {"resnet18-1", "lm-2", "transformer-3", "resnet50-4"}
    assert re.fullmatch(r"heuristic \(fast\): objective \S+, E/C \S+, \d+ placements -> .*out\.json\n",
                        capsys.readouterr().err)


@pytest.mark.parametrize("doc, match", [
    ('{"gpus": {"V100": 1}, "jobs": [{"id": "a", "scale": 0, "throughput": {"V100": 1}}]}', r"jobs\[0\]\.scale"),
    ("not json", "document"),
    ('{"gpus": {"V100": 1}, "jobs": [], "colour": 1}', "colour"),
])
def test_bad_input_exits_2_with_the_message_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       doc: str, match: str) -> None:
    src = tmp_path / "bad.json"
    src.write_text(doc)
    assert main(["allocate", str(src)]) == 2
    err = capsys.readouterr()
    assert err.out == ""
    assert re.search(match, err.err)


def test_missing_file_and_conflicting_arguments_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["allocate", "/nonexistent/round.json"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["allocate"]) == 2
    assert main(["allocate", "x.json", "--example"]) == 2


def test_time_limit_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["allocate", "--example", "--mode", "exact", "--time-limit", "-1"]) == 2
    assert "`--time-limit` = -1.0: must be a positive number of seconds" in capsys.readouterr().err


def test_console_script_entry_point_runs() -> None:
    res = subprocess.run([sys.executable, "-m", "fairshare", "allocate", "--example"], capture_output=True,
                         text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["mode"] == "fast"
    assert res.stderr == ""  # the library prints nothing of its own (HiGHS banner silenced)


def test_parse_policy() -> None:
    assert parse_policy("gavel:space_sharing=true,refine=false") == (
        "gavel", {"space_sharing": True, "refine": False}, "gavel:space_sharing=true,refine=false")
    assert parse_policy("fairshare:mode=exact")[1] == {"mode": "exact"}
    with pytest.raises(ValueError, match="key=value"):
        parse_policy("gavel:oops")


def test_simulate_and_compare_write_table_records_and_figures(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(TRACE_CSV)
    out = tmp_path / "res"
    assert main(["compare", "--trace", str(trace), "--cluster", "V100=1,K80=1", "--policy", "fairshare",
                 "--policy", "fifo", "--out", str(out), "--workers", "1"]) == 0
    table = (out / "results.md").read_text()
    assert "fairshare" in table and "fifo" in table
    rec = json.loads((out / "records.json").read_text())
    assert [r["policy"] for r in rec["runs"]] == ["fairshare", "fifo"]
    assert all(len(r["jobs"]) == 3 for r in rec["runs"])
    for name in ("jct_cdf.png", "rho_cdf.png", "efficiency.png", "solver_time.png"):
        assert (out / name).stat().st_size > 5000
    assert main(["simulate", "--trace", str(trace), "--cluster", "V100=1", "--policy", "nope",
                 "--out", str(out)]) == 2
    assert "nope" in capsys.readouterr().err


def test_simulate_no_polish_reaches_the_fairshare_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(TRACE_CSV)
    out = tmp_path / "res"
    assert main(["simulate", "--trace", str(trace), "--cluster", "V100=1,K80=1", "--no-polish", "--no-plots",
                 "--out", str(out), "--policy", "fairshare:priority=none"]) == 0
    (run,) = json.loads((out / "records.json").read_text())["runs"]
    assert run["config"]["policy_options"] == {"priority": "none", "options": {"polish": False}}
    assert main(["simulate", "--trace", str(trace), "--cluster", "V100=1", "--no-polish", "--mode", "exact",
                 "--out", str(out)]) == 2
    assert "`--no-polish` = True: applies to the fast mode only, not to mode 'exact'" in capsys.readouterr().err


def test_simulate_warm_start_reaches_the_fairshare_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(TRACE_CSV)
    out = tmp_path / "res"
    assert main(["simulate", "--trace", str(trace), "--cluster", "V100=1,K80=1", "--no-polish", "--warm-start",
                 "--no-plots", "--out", str(out), "--policy", "fairshare:priority=none"]) == 0
    (run,) = json.loads((out / "records.json").read_text())["runs"]
    assert run["config"]["policy_options"] == {"priority": "none",
                                               "options": {"polish": False, "warm_start": True}}
    assert main(["simulate", "--trace", str(trace), "--cluster", "V100=1", "--warm-start", "--mode", "exact",
                 "--out", str(out)]) == 2
    assert "`--warm-start` = True: applies to the fast mode only, not to mode 'exact'" in capsys.readouterr().err


def test_trace_command_writes_a_readable_deterministic_trace(tmp_path: Path) -> None:
    from fairshare.sim.traces import read_trace

    a, b = tmp_path / "a.csv", tmp_path / "b.json"
    assert main(["trace", "-o", str(a), "--jobs", "15", "--seed", "3", "--weighted-fraction", "0.2"]) == 0
    assert main(["trace", "-o", str(b), "--jobs", "15", "--seed", "3", "--weighted-fraction", "0.2"]) == 0
    ta, tb = read_trace(a), read_trace(b)
    assert len(ta.id) == 15
    assert ta.id == tb.id and (ta.iterations == tb.iterations).all() and (ta.weight == tb.weight).all()


# ---------------------------------------------------------------- exit codes, as a user sees them
@pytest.mark.parametrize("args, code, match", [
    (["allocate", "/nonexistent/round.json"], 2,
     r"^fairshare: error: `ROUND` = '/nonexistent/round\.json': no such file$"),
    (["allocate", "--example", "--mode", "nope"], 2, r"argument --mode: invalid choice: 'nope'"),
    (["allocate", "--example", "--time-limit", "soon"], 2, r"argument --time-limit: invalid float value"),
    (["nope"], 2, r"invalid choice: 'nope'"),
    (["simulate", "--policy", "nope", "--no-plots"], 2, r"`--policy` = 'nope': unknown policy"),
    (["compare", "--policy", "fifo", "--policy", "gavel:oops=1", "--no-plots", "--workers", "2"], 2,
     r"^fairshare: error: `--policy` = 'gavel:oops=1': got an unexpected keyword argument 'oops'$"),
    (["trace", "-o", "/nonexistent/dir/t.csv", "--jobs", "3"], 2,
     r"^fairshare: error: `--output` = '/nonexistent/dir/t\.csv': cannot write \(No such file or directory\)$"),
])
def test_exit_codes_in_a_subprocess(args: list[str], code: int, match: str) -> None:
    res = run_cli(*args)
    assert res.returncode == code, res.stderr
    assert re.search(match, res.stderr.strip(), flags=re.MULTILINE), res.stderr
    assert "Traceback" not in res.stderr


def test_bad_round_on_stdin_exits_2_naming_the_field() -> None:
    res = run_cli("allocate", "-", stdin='{"gpus": {"V100": 1}, "jobs": [{"id": "a", "scale": 0, '
                                        '"throughput": {"V100": 1}}]}')
    assert res.returncode == 2
    assert res.stdout == ""
    assert re.fullmatch(r"fairshare: error: `jobs\[0\]\.scale` = 0: .*\n", res.stderr)


def test_unwritable_output_and_unreadable_round_exit_2_naming_the_path(tmp_path: Path) -> None:
    res = run_cli("allocate", "--example", "-o", str(tmp_path))  # a folder, not a file
    assert res.returncode == 2
    assert f"`--output` = '{tmp_path}': is a folder, not a file" in res.stderr and "Traceback" not in res.stderr
    res = run_cli("allocate", str(tmp_path))
    assert res.returncode == 2
    assert f"`ROUND` = '{tmp_path}': is a folder, not a file" in res.stderr and "Traceback" not in res.stderr
    binary = tmp_path / "round.bin"
    binary.write_bytes(b"\xff\xfe\x00")
    res = run_cli("allocate", str(binary))
    assert res.returncode == 2 and "not UTF-8 text" in res.stderr and "Traceback" not in res.stderr


def test_oserror_reading_the_round_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "round.json"
    src.write_text(example_round_text())

    real_open = os.open

    def denied(path: Any, *args: Any, **kwargs: Any) -> Any:  # as if the file were unreadable (root reads all)
        if str(path) == str(src):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    assert main(["allocate", str(src)]) == 2
    err = capsys.readouterr().err
    assert err == f"fairshare: error: `ROUND` = '{src}': cannot read (Permission denied)\n"


def test_out_that_is_a_file_fails_before_the_run(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(TRACE_CSV)
    out = tmp_path / "res"
    out.write_text("a file")
    res = run_cli("simulate", "--trace", str(trace), "--cluster", "V100=1", "--out", str(out), "--no-plots")
    assert res.returncode == 2
    assert f"`--out` = '{out}': not a folder" in res.stderr
    assert "rounds in" not in res.stderr and "Traceback" not in res.stderr  # nothing was simulated


# ---------------------------------------------------------------- failures that are not the input's fault
def _raise(exc: BaseException) -> Any:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise exc
    return fail


def test_a_bug_exits_1_with_one_line_and_no_traceback(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(fairshare.cli.allocate, "allocate", _raise(RuntimeError("index out of\nrange")))
    assert main(["allocate", "--example"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == ("fairshare: internal error: RuntimeError: index out of range (please report it with the "
                   "command and input; run with --debug for the traceback)\n")


@pytest.mark.parametrize("argv", [["--debug", "allocate", "--example"], ["allocate", "--example", "--debug"]])
def test_debug_shows_the_traceback_of_a_bug(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                            argv: list[str]) -> None:
    monkeypatch.setattr(fairshare.cli.allocate, "allocate", _raise(RuntimeError("boom")))
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert "RuntimeError: boom\n" in err
    assert err.splitlines()[-1].startswith("fairshare: internal error: RuntimeError: boom (please report it")


def test_solver_error_exits_1_with_its_advice(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    msg = "HiGHS stopped with status 'Solve error'; try mode='fast' or a time limit"
    monkeypatch.setattr(fairshare.cli.allocate, "allocate", _raise(SolverError(msg)))
    assert main(["allocate", "--example", "--mode", "exact"]) == 1
    assert capsys.readouterr().err == f"fairshare: solver error: {msg}\n"
    assert main(["--debug", "allocate", "--example", "--mode", "exact"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and err.endswith(f"fairshare: solver error: {msg}\n")


def test_policy_error_exits_1_not_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(fairshare.cli.allocate, "allocate", _raise(PolicyError("gavel placed job 'a' twice")))
    assert main(["allocate", "--example"]) == 1
    assert capsys.readouterr().err == "fairshare: policy error: gavel placed job 'a' twice\n"
    # any other FairshareError that is not bad input is handled alike, named by its class
    other = type("QuotaError", (FairshareError,), {})
    monkeypatch.setattr(fairshare.cli.allocate, "allocate", _raise(other("over quota")))
    assert main(["allocate", "--example"]) == 1
    assert capsys.readouterr().err == "fairshare: quota error: over quota\n"


def test_bad_input_with_debug_keeps_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["allocate", "/nonexistent/round.json", "--debug"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.endswith("fairshare: error: `ROUND` = '/nonexistent/round.json': no such file\n")


def test_interrupt_exits_130(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(fairshare.cli.allocate, "allocate", _raise(KeyboardInterrupt()))
    assert main(["allocate", "--example"]) == 130
    assert capsys.readouterr().err == "fairshare: interrupted\n"


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "allocate" in capsys.readouterr().out
    assert main(["allocate", "--help"]) == 0
    assert "--debug" in capsys.readouterr().out


def test_records_file_is_one_json_document_with_a_record_per_line(tmp_path: Path) -> None:
    """docs/json-formats.md: one JSON document (not JSON Lines); each job record on a line of its own."""
    trace = tmp_path / "t.csv"
    trace.write_text(TRACE_CSV)
    out = tmp_path / "res"
    assert main(["simulate", "--trace", str(trace), "--cluster", "V100=1,K80=1", "--policy", "fifo", "--no-plots",
                 "--records", "json", "--out", str(out)]) == 0
    text = (out / "records.json").read_text()
    (run,) = json.loads(text)["runs"]
    lines = text.splitlines()
    with pytest.raises(json.JSONDecodeError):
        json.loads(lines[0])                       # not JSON Lines: the first line alone is not a document
    for job in run["jobs"]:
        (line,) = [ln for ln in lines if f'"id": "{job["id"]}"' in ln]     # grep finds the whole record
        assert json.loads(line.strip().rstrip(",")) == job
