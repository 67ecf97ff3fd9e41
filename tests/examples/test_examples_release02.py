"""The scripts of published tables run with release 0.2's settings unless ``--current`` (examples/_common.py)."""

from __future__ import annotations

import argparse

import pytest

from tests._examples import load_example


def test_policy_and_sim_settings_pin_release_02_unless_current() -> None:
    common = load_example("priority_rules")  # it imports both helpers from examples._common
    assert common.sim_settings() == {"starts": "idle", "restart_overhead": 0.0, "wait_is_owed": False}
    assert common.sim_settings(current=True) == {"restart_overhead": 30.0}
    assert common.policy_settings("fairshare", {"mode": "fast"}) == {"shortfall_price": "none", "restart_aware": False,
                                                                     "mode": "fast"}
    assert common.policy_settings("fairshare", {"shortfall_price": "finish-time"}) == {"shortfall_price": "finish-time",
                                                                                       "restart_aware": False}
    assert common.policy_settings("fairshare", {"mode": "fast"}, current=True) == {"mode": "fast"}
    assert common.policy_settings("gavel", {}) == {}


@pytest.mark.parametrize("current", [False, True])
def test_priority_rules_and_tradeoff_specs(current: bool) -> None:
    rules = load_example("priority_rules")
    args = argparse.Namespace(loads=[4.0], no_h200=True, rules=["none"], epsilons=[0.0], seeds=[0], num_jobs=10,
                              max_rounds=5, current=current)
    specs = [spec for *_, spec in rules.build(args)]
    eps = load_example("tradeoff_epsilon")
    specs += [eps.specs_for(e, "V100=4", {"num_jobs": 5, "seed": 0}, 360.0, current) for e in (0.0, 1.0)]
    for spec in specs:
        if current:
            assert "starts" not in spec.sim_options and spec.sim_options["restart_overhead"] == 30.0
            assert "shortfall_price" not in spec.policy_options
        else:
            assert spec.sim_options["starts"] == "idle" and spec.sim_options["restart_overhead"] == 0.0
            assert spec.policy_options.get("shortfall_price") == ("none" if spec.policy == "fairshare" else None)


def test_real_trace_passes_release_02_options_to_compare() -> None:
    mod = load_example("real_trace")
    assert mod.RELEASE_02_OPTIONS == ("--restart-overhead", "0", "--starts", "idle", "--shortfall-price", "none",
                                      "--no-owed-wait")
