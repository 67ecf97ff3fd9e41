"""``fairshare trace import``, the horizon and records options, and bad options of trace/simulate/compare."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fairshare.cli import main
from fairshare.sim.traces import read_trace

DATA = Path(__file__).resolve().parents[1] / "data" / "traces"
PAI = [str(p) for p in sorted((DATA / "pai2020").glob("*.csv"))]
OPENB = [str(p) for p in sorted((DATA / "openb2023").glob("*.csv"))]
PHILLY = [str(p) for p in sorted((DATA / "philly").iterdir())]
GENERIC = str(DATA / "generic" / "my_cluster.csv")
CSV_OPTS = ["--arrival", "submitted", "--gpus", "gpus", "--duration", "runtime_min", "--time-unit", "min",
            "--gpu-type", "gpu_model", "--user", "owner", "--id", "job", "--status", "state", "--running", "RUNNING"]
CLUSTER = "T4=8,A10=4,A100-80GB=4,H100=2"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fairshare", *args], capture_output=True, text=True, timeout=300,
                          check=False)


def test_import_each_built_in_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for fmt, files, expect in (("pai2020", PAI, "suggested: --cluster T4=12,V100=32,V100-32GB=16,P100=6"),
                               ("openb2023", OPENB,
                                "suggested: --cluster T4=16,V100-16GB=16,V100-32GB=16,P100=6,A10=2"),
                               ("philly", PHILLY, "GPU types without a catalog name: philly-12GB (60 GPUs)")):
        out = tmp_path / f"{fmt}.json"
        assert main(["trace", "import", *files, "--format", fmt, "--catalog", "modern", "-o", str(out)]) == 0
        err = capsys.readouterr().err
        assert expect in err and f"to {out}" in err, err
        doc = json.loads(out.read_text())
        assert doc["meta"]["imported"]["format"] == fmt
        t = read_trace(out)
        assert len(t) == doc["meta"]["imported"]["jobs"] and t.censored.sum() == doc["meta"]["imported"]["censored"]


def test_import_generic_csv_and_csv_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "mine.csv"
    assert main(["trace", "import", GENERIC, "--format", "csv", *CSV_OPTS, "--catalog", "modern",
                 "--cluster", CLUSTER, "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "imported 150 jobs (5 censored" in err
    t = read_trace(out)
    header = out.read_text().splitlines()[0].split(",")
    assert "censored" in header and "meta.queue" in header
    # half-GPU requests are kept as a share of one GPU (scale 0.5), so `gpus` equals `scale` and is not written
    assert "gpus" not in header and t.censored.sum() == 5 and (t.scale == 0.5).any()
    whole = tmp_path / "whole.csv"
    assert main(["trace", "import", GENERIC, "--format", "csv", *CSV_OPTS, "--catalog", "modern",
                 "--cluster", CLUSTER, "--fractional", "whole", "-o", str(whole)]) == 0
    assert "gpus" in whole.read_text().splitlines()[0].split(",") and (read_trace(whole).gpus == 0.5).any()


@pytest.mark.parametrize("args, match", [
    (["--format", "csv", "--gpus", "gpus", "--duration", "runtime_min"],
     r"`--arrival` = None: required with --format csv"),
    (["--format", "csv", "--arrival", "submitted", "--gpus", "gpus"], r"`--duration` = None: give the run time"),
    (["--format", "csv", "--arrival", "nope", "--gpus", "gpus", "--duration", "runtime_min"],
     r"`--arrival` = 'nope': no such column"),
    (["--format", "pai2020", "--arrival", "x"], r"`--arrival` = 'x': column options are for --format csv"),
    (["--format", "csv", *CSV_OPTS, "--gpu-type-map", "G2"], r"`--gpu-type-map` = 'G2': expected KIND=TYPE"),
    (["--format", "csv", *CSV_OPTS, "--gpu-type-map", "G2=B300"], r"`gpu_type_map.G2` = 'B300': not a GPU type"),
    (["--format", "csv", *CSV_OPTS, "--cluster", "T4=1e9"], r"`--cluster` = 'T4=1e9'"),
    (["--format", "csv", *CSV_OPTS, "--models", "GPT-7"], r"`model` = 'GPT-7': unknown model"),
])
def test_import_option_errors_name_the_option(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                              match: str) -> None:
    out = tmp_path / "x.json"
    assert main(["trace", "import", GENERIC, *args, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert re.search(match, err), err
    assert not out.exists()


def test_import_then_compare_on_a_modern_cluster_from_the_cli_alone(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Done-when of issue 10: a built-in format and a generic CSV, replayed on T4/A10/A100/H100, derived labelled."""
    for name, args in (("pai", [*PAI, "--format", "pai2020"]), ("csv", [GENERIC, "--format", "csv", *CSV_OPTS])):
        trace = tmp_path / f"{name}.json"
        assert main(["trace", "import", *args, "--catalog", "modern", "--cluster", CLUSTER, "-o", str(trace)]) == 0
        out = tmp_path / f"res_{name}"
        assert main(["compare", "--trace", str(trace), "--catalog", "modern", "--cluster", CLUSTER,
                     "--policy", "fairshare", "--policy", "fifo", "--workers", "1", "--out", str(out)]) == 0
        table = (out / "results.md").read_text()
        assert "| fairshare |" in table and "| fifo |" in table and "Derived figures:" in table
        rows = list(map(str.split, (out / "results.csv").read_text().splitlines()))
        head = rows[0][0].split(",")
        assert head[-3:] == ["jobs", "unfinished", "censored"]
        assert all(r[0].split(",")[-1] == "5" or name == "pai" for r in rows[1:])
        by_class = (out / "results_by_class.md").read_text()
        assert "fairshare / under one round" in by_class
        for fig in ("jct_cdf.png", "rho_cdf.png", "efficiency.png", "solver_time.png"):
            assert (out / fig).stat().st_size > 5000
        rec = json.loads((out / "records.json").read_text())
        assert rec["runs"][0]["catalog"]["derived"] > 0
        assert any(j.get("censored") for j in rec["runs"][0]["jobs"])
    capsys.readouterr()


def test_horizon_and_records_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r"
    assert main(["simulate", "--policy", "fifo", "--until", "2", "--out", str(out), "--no-plots",
                 "--records", "gzip"]) == 0
    assert not (out / "records.json").exists()
    rec = json.loads(gzip.decompress((out / "records.json.gz").read_bytes()))
    run = rec["runs"][0]
    assert run["config"]["until"] == 7200.0 and max(r["start"] for r in run["rounds"]) < 7200.0
    table = (out / "results.md").read_text()
    assert "`unfinished` jobs (not done when the run stopped)" in table
    assert main(["simulate", "--policy", "fifo", "--max-rounds", "3", "--out", str(out), "--no-plots"]) == 0
    assert not (out / "records.json.gz").exists()                     # the other form of an old run is removed
    assert len(json.loads((out / "records.json").read_text())["runs"][0]["rounds"]) == 3
    assert main(["simulate", "--policy", "fifo", "--max-rounds", "1", "--out", str(out), "--no-plots",
                 "--records", "none"]) == 0
    assert "records.json" not in capsys.readouterr().err.splitlines()[-1]


@pytest.mark.parametrize("args, match", [
    (["simulate", "--round-length", "1e-300"], r"`--round-length` = 1e-300: must be a number in \[0.001, 1e\+08\]"),
    (["simulate", "--cluster", "V100=1e20"], r"`--cluster` = 'V100=1e20'"),
    (["simulate", "--cluster", ""], r"`--cluster` = '': the cluster has no GPU"),
    (["compare", "--workers", "-1", "--policy", "fifo"], r"`--workers` = -1: must be an integer in \[1, 1024\]"),
    (["simulate", "--generate", "--jobs-per-hour", "1e-300"], r"`--jobs-per-hour` = 1e-300"),
    (["simulate", "--cluster", "T4=4"], r"`--cluster` = 'T4': unknown GPU type.*--catalog modern"),
    (["simulate", "--until", "nan"], r"`--until` = nan"),
    (["trace", "-o", "missing/x.csv", "--jobs", "3"], r"`--output` = 'missing/x.csv': cannot write"),
    (["trace", "-o", "x.txt", "--jobs", "3"], r"`--output` = 'x.txt': must end in .csv or .json"),
    (["trace", "--jobs", "3"], r"`--output` = None: required"),
    (["trace", "-o", "t.csv", "--jobs", "-5"], r"`--jobs` = -5"),
])
def test_bad_options_exit_2_naming_the_option(tmp_path: Path, args: list[str], match: str) -> None:
    res = subprocess.run([sys.executable, "-m", "fairshare", *args, "--out", str(tmp_path / "o")]
                         if args[0] != "trace" else [sys.executable, "-m", "fairshare", *args],
                         capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert re.search(match, res.stderr), res.stderr
    assert "Traceback" not in res.stderr and res.stderr.count("\n") == 1
    assert not (tmp_path / "o").exists() and not (tmp_path / "x.txt").exists()


def test_simulations_that_would_never_end_are_refused(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("id,arrival,model,scale,iterations\na,0,A3C,1,1e15\n")
    res = run_cli("simulate", "--trace", str(trace), "--cluster", "V100=1", "--out", str(tmp_path / "o"))
    assert res.returncode == 2 and "more than the limit of 1,000,000 rounds" in res.stderr
    assert "--until, --max-rounds" in res.stderr and not (tmp_path / "o").exists()
    ok = run_cli("simulate", "--trace", str(trace), "--cluster", "V100=1", "--until", "1", "--policy", "fifo",
                 "--no-plots", "--out", str(tmp_path / "o"))
    assert ok.returncode == 0, ok.stderr
    assert "| fifo |" in ok.stdout and "| 1 | 1 | 0 |" in ok.stdout
