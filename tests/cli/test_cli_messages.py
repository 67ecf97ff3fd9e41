"""Messages name the option the user gave, and options that cannot apply are refused (issue 31: L4, L6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fairshare.cli import main

TRACE = Path(__file__).resolve().parents[2] / "fairshare" / "data" / "default_trace.csv"


def _err(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 2
    return capsys.readouterr().err


@pytest.mark.parametrize(("nodes", "want"), [
    ("2xZZZ:8", "`--nodes` = 'ZZZ': unknown GPU type"),
    ("2xV100", "`--nodes` = '2xV100': expected COUNTxTYPE:GPUS_PER_NODE groups"),
])
def test_node_errors_name_nodes(capsys: pytest.CaptureFixture[str], tmp_path: Path, nodes: str, want: str) -> None:
    assert want in _err(capsys, "simulate", "--trace", str(TRACE), "--nodes", nodes, "--out", str(tmp_path),
                        "--no-plots")


def test_a_window_starting_with_a_minus_is_read_as_its_value(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    src = tmp_path / "s.csv"
    src.write_text("id,sub,g,d\na,0,1,60\n")
    err = _err(capsys, "trace", "import", str(src), "--format", "csv", "--arrival", "sub", "--gpus", "g",
               "--duration", "d", "--id", "id", "--window", "-1:", "-o", str(tmp_path / "o.json"))
    assert "`--window` = '-1:'" in err and "expected one argument" not in err


def test_compare_refuses_one_policy_twice(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    err = _err(capsys, "compare", "--trace", str(TRACE), "--cluster", "V100=8", "--policy", "fifo", "--policy",
               "fifo", "--out", str(tmp_path), "--max-rounds", "2", "--no-plots")
    assert "`--policy` = 'fifo': given twice" in err
    assert not (tmp_path / "results.md").exists()


def test_a_trace_file_that_is_not_json_names_trace(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "t.json"
    bad.write_text('{"jobs": [')
    assert "`--trace` = " in _err(capsys, "simulate", "--trace", str(bad), "--cluster", "V100=8", "--out",
                                  str(tmp_path / "o"), "--no-plots")
