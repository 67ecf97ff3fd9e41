"""The command line: allocate (exit codes, output document), simulate and compare (files written)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from fairshare.cli import example_round_text, main
from fairshare.simulate_cli import parse_policy


def test_allocate_example_exact_prints_the_spec_optimum(capsys) -> None:
    assert main(["allocate", "--example", "--mode", "exact"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "optimal" and out["mode"] == "exact"
    assert out["objective"] == pytest.approx(-3.4549, abs=1e-3)
    assert {tuple(p["jobs"]) for p in out["placements"]} == {("transformer-3",), ("resnet50-4",),
                                                              ("resnet18-1", "lm-2")}


def test_allocate_file_to_output_file(tmp_path, capsys) -> None:
    src = tmp_path / "round.json"
    src.write_text(example_round_text())
    dst = tmp_path / "out.json"
    assert main(["allocate", str(src), "--mode", "fast", "-o", str(dst)]) == 0
    out = json.loads(dst.read_text())
    assert out["status"] == "heuristic"
    assert set(out["jobs"]) == {"resnet18-1", "lm-2", "transformer-3", "resnet50-4"}


@pytest.mark.parametrize("doc, match", [
    ('{"gpus": {"V100": 1}, "jobs": [{"id": "a", "scale": 0, "throughput": {"V100": 1}}]}', r"jobs\[0\]\.scale"),
    ("not json", "document"),
    ('{"gpus": {"V100": 1}, "jobs": [], "colour": 1}', "colour"),
])
def test_bad_input_exits_2_with_the_message_on_stderr(tmp_path, capsys, doc, match) -> None:
    src = tmp_path / "bad.json"
    src.write_text(doc)
    assert main(["allocate", str(src)]) == 2
    err = capsys.readouterr()
    assert err.out == ""
    assert re.search(match, err.err)


def test_missing_file_and_conflicting_arguments_exit_2(capsys) -> None:
    assert main(["allocate", "/nonexistent/round.json"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["allocate"]) == 2
    assert main(["allocate", "x.json", "--example"]) == 2


def test_time_limit_must_be_positive(capsys) -> None:
    assert main(["allocate", "--example", "--mode", "exact", "--time-limit", "-1"]) == 2
    assert "time_limit" in capsys.readouterr().err


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


def test_simulate_and_compare_write_table_records_and_figures(tmp_path, capsys) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("id,arrival,model,scale,iterations\n"
                     "a,0,ResNet-50 (batch size 64),1,20000\n"
                     "b,100,LM (batch size 20),1,200000\n"
                     "c,200,Transformer (batch size 64),1,30000\n")
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


def test_trace_command_writes_a_readable_deterministic_trace(tmp_path) -> None:
    from fairshare.traces import read_trace

    a, b = tmp_path / "a.csv", tmp_path / "b.json"
    assert main(["trace", "-o", str(a), "--jobs", "15", "--seed", "3", "--weighted-fraction", "0.2"]) == 0
    assert main(["trace", "-o", str(b), "--jobs", "15", "--seed", "3", "--weighted-fraction", "0.2"]) == 0
    ta, tb = read_trace(a), read_trace(b)
    assert len(ta.id) == 15
    assert ta.id == tb.id and (ta.iterations == tb.iterations).all() and (ta.weight == tb.weight).all()
