"""examples/fairness_real_traces.py: its rows are the runs' own metrics, and the verdict applies the targets."""

from pathlib import Path

import pytest
from _examples import load_example, table_rows

from fairshare.sim import simulate
from fairshare.sim.metrics import compute_metrics
from fairshare.sim.traces import generate_trace, read_trace, write_trace

mod = load_example("fairness_real_traces")


def test_rows_are_the_runs_metrics(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    write_trace(generate_trace(15, jobs_per_hour=30, seed=2), path)
    assert mod.main(["--trace", f"day={path}", "--restarts", "30", "--no-colocation-at", "-1", "--until", "24",
                     "--policies", "fairshare", "gavel", "--workers", "1", "--out", str(tmp_path / "o"),
                     "--name", "r"]) == 0
    md = (tmp_path / "o" / "r.md").read_text()
    rows = {r[0]: r for r in table_rows(md, "policy")}
    assert set(rows) == {"fairshare", "gavel"}
    setup = mod.SETUPS["day"]
    ref = simulate(read_trace(path), setup.cluster, "fairshare", restart_overhead=30.0, until=24 * 3600.0,
                   show_progress=False)
    m = compute_metrics(ref.jobs, ref.rounds)
    assert float(rows["fairshare"][1]) == pytest.approx(m.mean_jct / 3600.0, abs=0.006)
    assert "Verdict" in md and (tmp_path / "o" / "r.csv").exists()


def test_the_verdict_applies_the_targets() -> None:
    base = {"mean_jct_h": 2.0, "unfair": 0.05, "max_rho": 2.0}
    rows = {p: dict(base) for p in mod.FAIR_PEERS}
    rows["fairshare"] = {"mean_jct_h": 1.69, "unfair": 0.05, "max_rho": 2.0}
    v = mod.verdict(rows)
    assert v["unfair"][3] and v["max_rho"][3] and v["jct"][3]        # ties count; 15.5 % below
    rows["fairshare"]["mean_jct_h"] = 1.71
    assert not mod.verdict(rows)["jct"][3]                             # 14.5 % below
    rows["ftf"]["max_rho"] = 1.5
    assert mod.verdict(rows)["max_rho"][1:] == ("ftf", 1.5, False)


def test_the_philly_setup_replays_its_16_gpu_gangs(tmp_path: Path) -> None:
    from fairshare.sim.traces import Trace

    path = tmp_path / "p.json"
    write_trace(Trace(id=["gang", "one"], arrival=[0.0, 60.0], model=["ResNet-18 (batch size 32)"] * 2,
                      scale=[16, 1], iterations=[2e4, 2e3]), path)
    assert mod.SETUPS["philly"].catalog == ("scale-out",)   # gangs beyond 8 GPUs need the derived scales
    assert mod.main(["--trace", f"philly={path}", "--restarts", "30", "--no-colocation-at", "-1", "--until", "2",
                     "--policies", "fairshare", "--workers", "1", "--out", str(tmp_path / "o"), "--name", "r"]) == 0
    rows = {r[0]: r for r in table_rows((tmp_path / "o" / "r.md").read_text(), "policy")}
    assert rows["fairshare"][8] == "0"                        # both jobs finished: the gang ran
