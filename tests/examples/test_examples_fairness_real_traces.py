"""examples/fairness_real_traces.py: its rows are the runs' own metrics, and the verdict applies the targets."""

import math
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
    assert rows["fairshare"][9] == "0"                        # both jobs finished: the gang ran
    assert rows["fairshare"][7] == "0"                        # and every job started


def test_a_job_never_started_is_counted_and_waits_up_to_the_horizon() -> None:
    from fairshare.sim.traces import Trace

    # one GPU held by a long job from t=0 under fifo: the gang that arrives at 60 s never starts before 1 h
    trace = Trace(id=["long", "gang"], arrival=[0.0, 60.0], model=["ResNet-18 (batch size 32)"] * 2,
                  scale=[1, 2], iterations=[1e9, 1e9])
    res = simulate(trace, "V100=2", "fifo", until=3600.0, record_holds=True, show_progress=False)
    long_, gang = res.jobs
    assert gang.ideal_seconds >= mod.LONG_GANG_HOURS * 3600.0 and math.isnan(gang.first_start)
    r = mod.row(res, res.config.round_length)
    assert r["never_started"] == 1
    assert r["delay_long_gang_s"] == pytest.approx(3600.0 - 60.0)   # its wait up to the horizon
    assert r["delay_one_gpu_s"] == pytest.approx(long_.first_start - long_.arrival)
    assert math.isnan(r["delay_gang_s"])                              # no short gang in the trace
    assert r["mean_delay_s"] == pytest.approx(long_.first_start)      # the delay columns: started jobs only


def test_rows_of_an_older_csv_lack_the_new_columns(tmp_path: Path) -> None:
    old = {"mean_jct_h": "1.5", "unfair": "0.1", "max_rho": "2", "short_unfair": "0.2", "mean_delay_s": "10",
           "p99_delay_s": "20", "moves_per_job_hour": "1", "unfinished": "3", "plans": "40", "wall_s": "9"}
    r = mod._csv_row(old)
    assert r["unfinished"] == 3 and r["plans"] == 40 and r["mean_jct_h"] == 1.5
    assert math.isnan(r["never_started"]) and math.isnan(r["delay_long_gang_s"])
