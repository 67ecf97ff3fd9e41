"""Old import paths of fairshare 0.1 keep working for one release (CHANGELOG.md), with a DeprecationWarning."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fairshare import RoundProblem, build_model

ROOT = Path(__file__).resolve().parents[1]
SHIMS = sorted(
    (".".join(p.relative_to(ROOT).with_suffix("").parts), re.search(r'alias_module\(__name__, "([\w.]+)"\)',
                                                                   p.read_text()).group(1))  # type: ignore[union-attr]
    for p in (ROOT / "fairshare").rglob("*.py") if "alias_module(__name__" in p.read_text())


def test_the_moves_of_0_2_are_all_aliased():
    old = {o for o, _ in SHIMS}
    for name in ("fairshare.rounding", "fairshare.solvers.pyomo_model", "fairshare.simulator", "fairshare.catalog",
                 "fairshare.traces", "fairshare.metrics", "fairshare.simulate_cli", "fairshare.testing.rounds",
                 "fairshare.policies.fairshare_policy"):
        assert name in old


@pytest.mark.parametrize(("old", "new"), SHIMS)
def test_old_path_is_the_new_module_and_warns(old, new):
    # a fresh interpreter, so that the warning is raised on the first import
    code = (f"import warnings, importlib\n"
            f"with warnings.catch_warnings(record=True) as w:\n"
            f"    warnings.simplefilter('always')\n"
            f"    old = importlib.import_module({old!r})\n"
            f"new = importlib.import_module({new!r})\n"
            f"assert old is new, (old, new)\n"
            f"assert any(issubclass(x.category, DeprecationWarning) and {new!r} in str(x.message) for x in w), w\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_from_import_of_a_public_name_through_an_old_path(monkeypatch):
    monkeypatch.delitem(sys.modules, "fairshare.rounding", raising=False)  # imported earlier in the run
    with pytest.warns(DeprecationWarning):
        mod = importlib.import_module("fairshare.rounding")
    from fairshare.methods.rounding import greedy_round

    assert mod.greedy_round is greedy_round


def test_evaluation_key_access_still_works_and_warns():
    m = build_model(RoundProblem.from_dict({"gpus": {"A": 1}, "jobs": [
        {"id": "a", "scale": 1, "throughput": {"A": 1.0}}]}))
    ev = m.evaluate(np.ones(1))
    with pytest.warns(DeprecationWarning, match="use attributes"):
        assert ev["objective"] == ev.objective
    with pytest.raises(KeyError):
        ev["nothing"]  # noqa: B018
