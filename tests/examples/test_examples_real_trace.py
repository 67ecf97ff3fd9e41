"""examples/real_trace.py on the shipped (synthetic) openb sample, and, when a downloaded copy of Alibaba's GPU 2023
trace is at hand (``FAIRSHARE_OPENB2023=<folder of its csv/>``), the importers on the real files."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from _examples import PNG, load_example, table_rows

from fairshare.sim.catalog import load_catalog
from fairshare.sim.importers import CsvColumns, import_trace

REAL = os.environ.get("FAIRSHARE_OPENB2023")


def _rows(md: str, header: str) -> dict[str, str]:
    return {r[0]: r[1] for r in table_rows(md, header)}


def test_sample_report(tmp_path: Path) -> None:
    mod = load_example("real_trace")
    assert mod.main(["--sample", "--out", str(tmp_path), "--policy", "fairshare", "--policy", "fifo",
                     "--until", "6"]) == 0
    md = (tmp_path / "real_trace_sample.md").read_text()
    assert "SYNTHETIC SAMPLE" in md and "describe no real cluster" in md
    imported = int(md.split("\nimported ", 1)[1].split(" jobs", 1)[0])
    check = {k: int(v.replace(",", "")) for k, v in _rows(md, "jobs").items()}
    assert check["built-in"] == check["csv"] == check["in both"] == imported
    assert check["differ in arrival, model, scale or work"] == 0 and check["censored (csv)"] == 0
    for label in ("built-in import", "generic CSV import"):
        section = md.split(f"Compare on the {label}\n", 1)[1]
        rows = table_rows(section, "policy")
        assert [r[0] for r in rows] == ["fairshare", "fifo"]
        assert all(r[-3] == str(imported) for r in rows)          # jobs column
    # the late short jobs: finished jobs of the "under one round" class, of which some may be late
    built = md.split("Compare on the built-in import\n", 1)[1]
    classes = {r[0]: r for r in table_rows(built, "policy / duration class (alone on the fastest type)")}
    for row in table_rows(built, "policy | finished jobs under one round"):
        cls = classes[f"{row[0]} / under one round"]
        assert int(row[1]) == int(cls[1]) - int(cls[-2]) and 0 <= int(row[2]) <= int(row[1])
    # shares: the same window imported with --fractional share, every asked policy compared on it
    section = md.split("Compare on the import with part-of-a-GPU requests as shares", 1)[1]
    assert "--fractional share" in section and "hold that share of one GPU" in section
    assert [r[0] for r in table_rows(section, "policy")] == ["fairshare", "fifo"]
    # shorter rounds: only the policies of SHORT_ROUND_POLICIES that were asked for
    section = md.split("Compare on the built-in import, rounds of 120 s", 1)[1]
    assert "--round-length 120" in section and [r[0] for r in table_rows(section, "policy")] == ["fairshare"]
    classes = table_rows(section, "policy / duration class (alone on the fastest type)")
    assert classes[0][0] == "fairshare / under one round"
    assert "are derived, not measured" in md
    for fig in ("jct_cdf", "rho_cdf"):
        assert (tmp_path / f"real_trace_sample_{fig}.png").read_bytes().startswith(PNG)
    assert "/tmp" not in md.split("## 1.", 1)[1]                   # paths as a reader types them


def test_steps_can_be_skipped(tmp_path: Path) -> None:
    mod = load_example("real_trace")
    assert mod.main(["--sample", "--out", str(tmp_path), "--policy", "fifo", "--until", "1", "--short-rounds", "0",
                     "--no-shares", "--name", "r"]) == 0
    md = (tmp_path / "r.md").read_text()
    assert "--short-rounds 0 --no-shares`" in md
    assert "rounds of" not in md and "as shares" not in md and "## 4. Compare on the generic CSV import" in md


def test_data_folder_without_the_trace_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mod = load_example("real_trace")
    with pytest.raises(SystemExit) as info:
        mod.main(["--data", str(tmp_path), "--out", str(tmp_path)])
    assert info.value.code == 2
    assert "no openb_pod_list_default.csv there" in capsys.readouterr().err


@pytest.mark.skipif(not REAL, reason="set FAIRSHARE_OPENB2023 to a downloaded cluster-trace-gpu-v2023/csv folder")
def test_real_openb2023_trace() -> None:
    """The real pod list (8,152 pods): counts as docs/real-traces.md shows, and the CSV mapping agrees."""
    data = Path(str(REAL))
    pods, nodes = data / "openb_pod_list_default.csv", data / "openb_node_list_all_node.csv"
    modern = load_catalog("modern")
    full = import_trace([pods, nodes], "openb2023", catalog=modern, fractional="whole")
    assert len(full.trace) == 6203 and full.skipped == {"no GPU": 1088, "never started": 861}
    assert int(full.trace.censored.sum()) == 32
    assert len(full.trace) + sum(full.skipped.values()) == 8152
    target = ("T4", "A10", "A100-80GB", "H100")
    week = import_trace([pods, nodes], "openb2023", catalog=modern, fractional="whole", gpu_types=target,
                        window=(3000, 3168))
    assert len(week.trace) == 1160 and int(week.trace.censored.sum()) == 2
    assert week.skipped == {"submitted before the window": 2208, "submitted after the window": 4427, "no GPU": 237,
                            "never started": 120}
    cols = CsvColumns(arrival="creation_time", gpus="num_gpu", start="scheduled_time", end="deletion_time", id="name",
                      gpu_type="gpu_spec")
    generic = import_trace([pods], "csv", catalog=modern, columns=cols, fractional="whole", gpu_types=target,
                           window=(3000, 3168))
    assert generic.trace.id == week.trace.id and generic.trace.model == week.trace.model
    for field in ("arrival", "scale", "iterations"):
        assert np.array_equal(getattr(generic.trace, field), getattr(week.trace, field)), field
