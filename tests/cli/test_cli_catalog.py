"""``fairshare catalog`` and ``--catalog``: listing, showing, validating, provenance labels, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairshare.cli import main
from fairshare.sim.catalog import CATALOG_FILES, DATA_DIR

R50 = "ResNet-50 (batch size 64)"
MINE = {"format": "fairshare-catalog/1", "name": "our-rtx", "kind": "measured",
        "source": {"description": "measured by us"}, "gpu_types": ["RTX6000"], "models": [R50, "ours"],
        "alone": [{"model": R50, "scale": 1, "RTX6000": 9.1}, {"model": "ours", "scale": 1, "RTX6000": 3.2}]}


def _write(tmp_path: Path, doc: dict, name: str = "mine.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def test_list_default_is_measured_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith("  ResNet") or line.startswith("  gpt2")]
    assert "catalog: default" in out and "DERIVED" not in out and rows and all("d" not in r[-4:] for r in rows)
    assert "gavel-simulation  measured" in out


def test_list_modern_labels_derived_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "--catalog", "modern"]) == 0
    out = capsys.readouterr().out
    assert "derived:modern-v1  DERIVED" in out
    for g in ("T4", "A10", "L4", "A100-40GB", "A100-80GB", "H100", "H200", "V100-16GB", "V100-32GB"):
        assert g in out
    row = next(line for line in out.splitlines() if line.strip().startswith(R50))
    assert row.split()[-12:] == ["m", "m", "m"] + ["d"] * 9
    assert main(["catalog", "list", "--catalog", "modern", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["models"][R50]["T4"] == "d" and doc["models"][R50]["V100"] == "m"
    assert {s["name"]: s["kind"] for s in doc["sources"]}["derived:modern-v1"] == "derived"


def test_show_one_workload(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "show", R50, "--catalog", "modern"]) == 0
    out = capsys.readouterr().out
    assert "4.395 m" in out and " d" in out and "derived:modern-v1 (derived)" in out
    assert main(["catalog", "show", R50, "--catalog", "modern", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["alone"]
    t4 = next(r for r in rows if r["gpu_type"] == "T4" and r["scale"] == 1)
    assert t4["derived"] and t4["source"] == "derived:modern-v1"
    assert main(["catalog", "show", "GPT-7"]) == 2
    assert "`model` = 'GPT-7': unknown model" in capsys.readouterr().err


def test_validate_good_and_merged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = _write(tmp_path, MINE)
    assert main(["catalog", "validate", str(mine), str(DATA_DIR / CATALOG_FILES["h200"])]) == 0
    out = capsys.readouterr().out
    assert "ok, measured part 'our-rtx': 1 GPU types (RTX6000), 2 workloads" in out and "part 'h200'" in out
    assert main(["catalog", "validate", str(mine), "--catalog", "modern"]) == 0
    assert "merged over modern: ok, 13 GPU types, 33 workloads" in capsys.readouterr().out


@pytest.mark.parametrize("change, match", [
    ({"format": "x"}, r"`mine.json: format` = 'x': expected 'fairshare-catalog/1'"),
    ({"kind": "guessed"}, r"`mine.json: kind` = 'guessed'"),
    ({"alone": [{"model": R50, "scale": 1, "RTX6000": -1}]}, r"`mine.json: alone\[0\].RTX6000` = -1"),
    ({"alone": [{"model": "nope", "scale": 1, "RTX6000": 1}]}, r"`mine.json: alone\[0\].model` = 'nope'"),
    ({"alone": {"x": 1}}, r"`mine.json: alone` = 'dict': must be a list"),
    ({"source": {}}, r"`mine.json: source.description`"),
])
def test_validate_malformed_exits_2_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     change: dict, match: str) -> None:
    import re

    mine = _write(tmp_path, {**MINE, **change})
    assert main(["catalog", "validate", str(mine)]) == 2
    err = capsys.readouterr().err
    assert re.search(match, err), err
    assert err.count("\n") == 1


def test_validate_unreadable_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bin.json").write_bytes(b"\xff\x00\x01")
    assert main(["catalog", "validate", str(tmp_path / "bin.json")]) == 2
    assert "cannot be read as JSON" in capsys.readouterr().err
    assert main(["catalog", "validate", str(tmp_path / "missing.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["catalog", "validate", str(tmp_path)]) == 2
    assert "not a file" in capsys.readouterr().err
    assert main(["catalog", "--catalog", "nonesuch"]) == 2
    assert "`--catalog` = 'nonesuch': neither a known catalog" in capsys.readouterr().err


def test_calibration_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "calibration"]) == 0
    out = capsys.readouterr().out
    assert "alpha = 0" in out and "| CycleGAN (V100) -> cyclegan (H200) | 2.62 | 5.33 | +103% | yes |" in out


def test_own_measurements_from_the_cli_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The docs/catalog.md recipe: a measured file, merged over modern, used by trace and simulate."""
    mine = _write(tmp_path, MINE)
    trace = tmp_path / "t.csv"
    assert main(["trace", "-o", str(trace), "--jobs", "6", "--catalog", str(mine), "--gpu-types", "RTX6000",
                 "--jobs-per-hour", "60", "--single-gpu"]) == 0
    out = tmp_path / "res"
    assert main(["simulate", "--trace", str(trace), "--catalog", "modern", "--catalog", str(mine),
                 "--cluster", "RTX6000=2,A100-80GB=1", "--policy", "fifo", "--out", str(out), "--no-plots"]) == 0
    text = (out / "results.md").read_text()
    assert "| fifo |" in text and "Derived figures:" in text
    rec = json.loads((out / "records.json").read_text())
    assert rec["catalog"] == ["modern", str(mine)]
    assert {s["name"] for s in rec["runs"][0]["catalog"]["sources"]} >= {"our-rtx"}


def test_list_names_every_other_named_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 32: a new user learns from `fairshare catalog` that `modern` (T4 ... H100) exists."""
    from fairshare.sim.catalog import CATALOGS

    assert main(["catalog"]) == 0
    out = capsys.readouterr().out
    block = out.split("named catalogs")[1].split("\nderivations")[0].splitlines()[1:]
    assert [line.split()[0].lstrip("*") for line in block] == list(CATALOGS)
    listed = [line for line in block if line.lstrip().startswith("*")]
    assert [line.split()[0] for line in listed] == ["*default"]
    modern = next(line for line in block if line.split()[0].lstrip("*") == "modern")
    assert "T4" in modern and "H100" in modern and "derived" in modern
    assert "measured only" in next(line for line in block if line.split()[0] == "*default")
    assert main(["catalog", "--catalog", "modern", "--json"]) == 0
    named = json.loads(capsys.readouterr().out)["named_catalogs"]
    assert named["modern"]["derived"] and not named["default"]["derived"]
    assert named["modern"]["parts"] == list(CATALOGS["modern"]) and "A10" in named["modern"]["gpu_types"]
