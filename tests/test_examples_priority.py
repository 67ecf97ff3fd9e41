"""Smoke tests of examples/priority_rules.py, priority_tradeoff.py and worst_jobs.py at ``--quick`` size."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pytest
from _examples import PNG, load_example, read_csv, table_rows


@pytest.fixture(scope="module")
def rules_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("priority_rules")
    assert load_example("priority_rules").main(["--quick", "--out", str(out)]) == 0
    return out


def test_priority_rules_has_a_row_per_rule_with_plausible_numbers(rules_out: Path) -> None:
    rows = read_csv(rules_out / "priority_rules.csv")
    assert sorted(r["rule"] for r in rows) == ["none", "remaining p=1"]
    for r in rows:
        assert float(r["mean_jct_h"]) > 0
        assert 0.0 <= float(r["unfair_fraction"]) <= 1.0
        assert float(r["max_rho"]) > 0
        assert 0.0 < float(r["utilization"]) <= 1.0 + 1e-9


def test_tradeoff_figure_and_table_show_every_policy_and_rule(rules_out: Path, tmp_path: Path) -> None:
    main_csv = tmp_path / "main.csv"
    header = "cluster,load (jobs/h),policy,mean_jct_h_mean,unfair_fraction_mean,max_rho_mean\n"
    main_csv.write_text(header + "het108,6,gavel,20.5,0.01,1.2\nhet108,6,fifo,30,0.4,9\n"
                        "het108,4,gavel,99,0.5,5\n")
    mod = load_example("priority_tradeoff")
    out = tmp_path / "fig"
    assert mod.main(["--main", str(main_csv), "--rules", str(rules_out / "priority_rules.csv"),
                     "--out", str(out), "--settings", "het108@6"]) == 0
    assert (out / "priority_tradeoff.png").read_bytes()[:8] == PNG
    md = (out / "priority_tradeoff.md").read_text()
    assert "| het108 | 6 | gavel | (its own) | 20.50 | 1.0 % | 1.20 |" in md
    assert "99.00" not in md                                   # another load's row is not drawn
    rules = read_csv(rules_out / "priority_rules.csv")
    for r in rules:                                           # every rule's point, with its own numbers
        assert f"fairshare, {r['rule']} | {float(r['epsilon']):g} | {float(r['mean_jct_h']):.2f} |" in md
    curves = mod.read_curves([rules_out / "priority_rules.csv"])
    assert all(math.isfinite(p[1]) for pts in curves[("het108", 6.0)].values() for p in pts)


def test_tradeoff_refuses_a_setting_with_no_rows(rules_out: Path, tmp_path: Path) -> None:
    main_csv = tmp_path / "main.csv"
    main_csv.write_text("cluster,load (jobs/h),policy,mean_jct_h_mean,unfair_fraction_mean,max_rho_mean\n")
    with pytest.raises(SystemExit) as e:
        load_example("priority_tradeoff").main(["--main", str(main_csv), "--rules",
                                                str(rules_out / "priority_rules.csv"), "--settings", "nowhere@1",
                                                "--out", str(tmp_path / "o")])
    assert e.value.code == 2


def _job(scale: int = 1, finish: float = 7200.0) -> SimpleNamespace:
    # 3,600 iterations at 1 it/s fair throughput: ideal 1 h; finish at 2 h gives rho 2.
    return SimpleNamespace(id="j", model="m", scale=scale, arrival=0.0, finish=finish, iterations=3600.0,
                           fair_throughput=1.0)


@pytest.mark.parametrize(("job", "history", "cause"), [
    # waited 3,500 s for its first round, then ran at its fair share: the wait explains it all
    (_job(finish=7200.0), [(3500.0, True, 1.0, 0.0)], "boundary"),
    # a gang left out of a round while active
    (_job(scale=4), [(0.0, True, 1.0, 0.0), (360.0, False, 0.0, 0.5)], "gang"),
    # placed every round but finished owing
    (_job(), [(0.0, True, 0.5, 0.0), (360.0, True, 0.5, 0.4)], "unpaid"),
    # placed every round below its fair progress, nothing owed at the end
    (_job(), [(0.0, True, 0.5, 0.0), (360.0, True, 0.5, 0.0)], "shared"),
])
def test_worst_jobs_explains_each_cause(job: SimpleNamespace, history: list, cause: str) -> None:
    row = load_example("worst_jobs").explain(job, history, 360.0)
    assert row["cause"] == cause
    assert row["rho"] == pytest.approx((job.finish - job.arrival) / 3600.0)


def test_worst_jobs_counts_a_start_between_rounds_as_the_first_start() -> None:
    mod = load_example("worst_jobs")
    history = [(3500.0, True, 1.0, 0.0)]    # first planned at 3,500 s ...
    row = mod.explain(_job(finish=7200.0), history, 360.0, first_start=0.0)   # ... but started at its arrival
    assert row["first_wait_s"] == 0.0 and row["cause"] != "boundary"
    assert mod.explain(_job(finish=7200.0), history, 360.0)["cause"] == "boundary"


def test_worst_jobs_quick_writes_consistent_tables(tmp_path: Path) -> None:
    mod = load_example("worst_jobs")
    assert mod.main(["--quick", "--out", str(tmp_path)]) == 0
    rows = read_csv(tmp_path / "worst_jobs.csv")
    md = (tmp_path / "worst_jobs.md").read_text()
    for r in rows:
        assert float(r["rho"]) > 1.05
        assert r["cause"] in mod.CAUSES
    counts = {c: sum(r["cause"] == c for r in rows) for c in mod.CAUSES}
    assert "causes: " + ", ".join(f"{c} {n}" for c, n in counts.items()) + f" (of {len(rows)} unfair jobs)" in md


def test_tradeoff_anchor_starts_a_curve_at_the_policys_point(rules_out: Path, tmp_path: Path) -> None:
    main_csv = tmp_path / "main.csv"
    header = "cluster,load (jobs/h),policy,mean_jct_h_mean,unfair_fraction_mean,max_rho_mean\n"
    main_csv.write_text(header + "het108,6,fairshare-x,17.5,0.02,1.3\n")
    mod = load_example("priority_tradeoff")
    points = mod.read_points(main_csv)
    curves = mod.read_curves([rules_out / "priority_rules.csv"])
    before = list(curves[("het108", 6.0)]["none"])
    assert all(q[0] == 0.0 for q in before)                      # the quick run is at epsilon 0 already
    mod.anchor(points, curves, "none", "fairshare-x")
    assert curves[("het108", 6.0)]["none"] == before             # an existing epsilon-0 point is kept
    mod.anchor(points, curves, "new rule", "fairshare-x")
    assert curves[("het108", 6.0)]["new rule"] == [(0.0, 17.5, 0.02, 1.3)]
    with pytest.raises(SystemExit):
        mod.main(["--main", str(main_csv), "--rules", str(rules_out / "priority_rules.csv"), "--out",
                  str(tmp_path / "o"), "--settings", "het108@6", "--anchor", "no-separator"])


def test_worst_jobs_on_a_trace_file(tmp_path: Path) -> None:
    """--trace: one simulation of an imported trace; the class table counts the same unfair jobs as the rows."""
    from fairshare.sim.catalog import load_catalog
    from fairshare.sim.importers import CsvColumns, import_trace
    from fairshare.sim.traces import format_trace

    data = Path(__file__).resolve().parent / "data" / "traces" / "generic" / "my_cluster.csv"
    cols = CsvColumns(arrival="submitted", gpus="gpus", duration="runtime_min", time_unit="min", id="job")
    res = import_trace([data], "csv", catalog=load_catalog("modern"), columns=cols, fractional="whole",
                       gpu_types=("T4", "A10"), window=(0, 12))
    trace = tmp_path / "t.json"
    trace.write_text(format_trace(res.trace, "json"))
    mod = load_example("worst_jobs")
    assert mod.main(["--priority", "remaining", "--trace", str(trace), "--catalog", "modern", "--cluster",
                     "T4=8,A10=2", "--until", "24", "--name", "w", "--out", str(tmp_path)]) == 0
    rows = read_csv(tmp_path / "w.csv")
    md = (tmp_path / "w.md").read_text()
    assert rows and all(float(r["rho"]) > 1.05 and r["seed"] == "0" for r in rows)
    assert "the trace t.json on T4=8,A10=2 (catalog modern, until 24 h)" in md
    table = {r[0]: r for r in table_rows(md, "duration class (alone on the fastest type)")}
    for cls, row in table.items():
        assert int(row[-1]) == sum(r["class"] == cls for r in rows)
        assert sum(int(x) for x in row[1:-1]) == int(row[-1])
    assert sum(int(r[-1]) for r in table.values()) == len(rows)
    with pytest.raises(SystemExit):
        mod.main(["--cluster", "T4=2", "--out", str(tmp_path)])          # --cluster without --trace
