"""Smoke tests of examples/priority_rules.py and priority_tradeoff.py at ``--quick`` size."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from _examples import PNG, load_example, read_csv


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
