"""Smoke tests of examples/tradeoff_epsilon.py and examples/ablations.py at their ``--quick`` size.

Each script runs once (module-scoped fixture) and the tests check its files, its table rows and invariants
that a broken script or library would violate.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from _examples import load_example, read_csv, table_rows


@pytest.fixture(scope="module")
def tradeoff_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tradeoff")
    assert load_example("tradeoff_epsilon").main(["--quick", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def ablations_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ablations")
    assert load_example("ablations").main(["--quick", "--out", str(out)]) == 0
    return out


# ---------------------------------------------------------------------------------------------- tradeoff


def test_tradeoff_files(tradeoff_out: Path) -> None:
    for name in ("tradeoff_epsilon.md", "tradeoff_epsilon.csv", "tradeoff_epsilon_runs.csv",
                 "tradeoff_epsilon_efficiency.png", "tradeoff_epsilon_ratios.png"):
        assert (tradeoff_out / name).stat().st_size > 0, name
    for name in ("tradeoff_epsilon_efficiency.png", "tradeoff_epsilon_ratios.png"):
        assert (tradeoff_out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_tradeoff_one_row_per_epsilon(tradeoff_out: Path) -> None:
    rows = read_csv(tradeoff_out / "tradeoff_epsilon.csv")
    assert [float(r["epsilon"]) for r in rows] == [0.0, 0.05, 0.1, 0.2, 0.4, 1.0]
    assert "max-throughput" in rows[-1]["label"]
    md_rows = table_rows((tradeoff_out / "tradeoff_epsilon.md").read_text(), "epsilon")
    assert [r[0] for r in md_rows] == [r["label"] for r in rows]
    runs = read_csv(tradeoff_out / "tradeoff_epsilon_runs.csv")
    assert len(runs) == 6  # one seed at --quick
    # with one seed the summary is the run itself
    for s, r in zip(rows, runs, strict=True):
        assert float(s["utilization"]) == pytest.approx(float(r["utilization"]))
        assert float(s["ratio_median"]) == pytest.approx(float(r["ratio_median"]))


def test_tradeoff_invariants(tradeoff_out: Path) -> None:
    rows = {float(r["epsilon"]): {k: (float(v) if k != "label" else v) for k, v in r.items()}
            for r in read_csv(tradeoff_out / "tradeoff_epsilon.csv")}
    for eps, r in rows.items():
        assert 0 < r["utilization"] <= 2.0, eps  # E/C can exceed 1 only through co-location
        assert 0 < r["gpu_busy_fraction"] <= 1.0 + 1e-9, eps
        assert 0 <= r["ratio_p5"] <= r["ratio_median"] <= r["ratio_p95"], eps
        assert 0 <= r["ratio_below_095"] <= 1 and 0 <= r["unfair_fraction"] <= 1, eps
        assert r["mean_jct_h"] > 0 and math.isfinite(r["mean_jct_h"]), eps
    # The fair end keeps (almost) every job at its fair share over its life: deficits carry what a round
    # could not give. Only gang/integer effects and jobs that leave before catching up fall short.
    assert rows[0.0]["ratio_p5"] >= 0.9
    # max-throughput maximises E in every round it plans, so over a run it cannot be far behind fairshare.
    # It need not be ahead: the runs see different active sets (a greedy round can leave hard-to-place jobs
    # for a tail of poorly used rounds), so the mean over rounds is not monotone in epsilon.
    assert rows[1.0]["utilization"] >= rows[0.0]["utilization"] - 0.05


# ---------------------------------------------------------------------------------------------- ablations

VARIANTS = ["full", "no-colocation", "type-blind", "no-deficits", "exact"]


def test_ablations_files(ablations_out: Path) -> None:
    for name in ("ablations.md", "ablations.csv", "ablations_runs.csv", "ablations_jct_cdf.png",
                 "ablations_rho_cdf.png"):
        assert (ablations_out / name).stat().st_size > 0, name


def test_ablations_one_row_per_variant(ablations_out: Path) -> None:
    rows = read_csv(ablations_out / "ablations.csv")
    assert [r["variant"] for r in rows] == VARIANTS
    md = (ablations_out / "ablations.md").read_text()
    assert [r[0] for r in table_rows(md, "variant")] == VARIANTS  # main table
    assert "## Change vs full" in md
    change = md.split("## Change vs full", 1)[1]
    assert [r[0] for r in table_rows(change, "variant")] == VARIANTS[1:]
    assert [r["variant"] for r in read_csv(ablations_out / "ablations_runs.csv")] == VARIANTS  # one seed


def test_ablations_invariants(ablations_out: Path) -> None:
    rows = {r["variant"]: {k: float(v) for k, v in r.items() if k != "variant"}
            for r in read_csv(ablations_out / "ablations.csv")}
    assert rows["full"]["d_mean_jct_pct"] == 0.0
    for v in VARIANTS[1:]:
        expected = 100 * (rows[v]["mean_jct_h"] / rows["full"]["mean_jct_h"] - 1)
        assert rows[v]["d_mean_jct_pct"] == pytest.approx(expected, rel=1e-9, abs=1e-9), v
    for v, r in rows.items():
        assert 0 < r["gpu_busy_fraction"] <= 1.0 + 1e-9, v
        assert 0 <= r["unfair_fraction"] <= 1 and 0 < r["jain"] <= 1, v
        assert (r["unfair_fraction"] > 0) == (r["max_rho"] > 1.05), v  # both count rho > 1.05
    # Without co-location every placement runs alone, so E <= C in every round (spec section 3).
    assert rows["no-colocation"]["utilization"] <= 1.0 + 1e-9
    # exact proves optimality of (nearly) every small round within its 10 s limit.
    assert rows["exact"]["optimal_rounds"] >= 0.9 * rows["exact"]["active_rounds"] > 0
