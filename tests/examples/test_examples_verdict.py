"""examples/comparison_verdict.py: the dominance check and the JCT gap, on runs whose answer is known."""

from __future__ import annotations

from pathlib import Path

import pytest
from _examples import load_example

HEADER = ("cluster,load_jobs_per_hour,policy,seed,mean_jct_h,p99_jct_h,makespan_h,unfair_fraction,max_rho,jain,"
          "utilization,gpu_busy_fraction,solver_ms,unfinished,sim_wall_s\n")


def _row(cluster: str, policy: str, seed: int, jct: float, unfair: float, rho: float) -> str:
    return f"{cluster},4,{policy},{seed},{jct},{2 * jct},100,{unfair},{rho},0.9,0.4,0.5,1.0,0,1.0\n"


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    rows = []
    for seed, d in ((0, 0.0), (1, 1.0)):
        # a: fairshare wins on JCT against every peer in seed 0 only; nobody dominates it
        rows += [_row("a", "fairshare", seed, 10 + 2 * d, 0.01, 1.1), _row("a", "gavel", seed, 11, 0.0, 1.2),
                 _row("a", "ftf", seed, 12, 0.0, 1.0), _row("a", "fifo", seed, 30, 0.5, 9.0)]
        # b: gavel-ss is at least as good everywhere and better on max rho: it dominates fairshare
        rows += [_row("b", "fairshare", seed, 10, 0.0, 1.1), _row("b", "gavel-ss", seed, 10, 0.0, 1.0)]
    path = tmp_path / "runs.csv"
    path.write_text(HEADER + "".join(rows))
    return path


def test_verdict_finds_dominance_gap_and_paired_seeds(runs: Path, tmp_path: Path) -> None:
    mod = load_example("comparison_verdict")
    data = mod.read_runs(runs)
    a = mod.verdict(data[("a", "4")], "fairshare")
    assert a["dominated_by"] == []
    assert a["best_fair"] == "gavel"                       # fifo is not a fair peer, ftf is slower
    assert a["gap"] == pytest.approx((11.0 - 11.0) / 11.0)  # mean of 10 and 12 against 11
    assert a["seeds_below"]["gavel"] == (1, 2)
    b = mod.verdict(data[("b", "4")], "fairshare")
    assert b["dominated_by"] == ["gavel-ss"]
    assert mod.main(["--runs", str(runs), "--out", str(tmp_path / "o")]) == 0
    md = (tmp_path / "o" / "main_comparison_verdict.md").read_text()
    assert "- dominated by: `gavel-ss`" in md and "- dominated by: no peer" in md
    assert md.index("| `fairshare` | 11.00") < md.index("| `fifo` | 30.00")  # sorted by mean JCT


def test_verdict_refuses_an_absent_policy(runs: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as e:
        load_example("comparison_verdict").main(["--runs", str(runs), "--out", str(tmp_path), "--policy", "nope"])
    assert e.value.code == 2
