"""Smoke tests of examples/sharing.py at ``--quick`` size, and the rule that builds its sharing trace."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _examples import EXAMPLES, PNG, load_example, read_csv
from hypothesis import given, settings
from hypothesis import strategies as st

from fairshare.policies import policy_names

TYPES = ["T4", "A10", "A100-80GB", "H100"]


@pytest.fixture(scope="module")
def quick_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sharing")
    assert load_example("sharing").main(["--quick", "--out", str(out)]) == 0
    return out


def _f(row: dict[str, str], key: str) -> float:
    return float(row[key])


def test_every_policy_and_variant_has_a_row(quick_out: Path) -> None:
    rows = read_csv(quick_out / "sharing.csv")
    labels = [r["label"] for r in rows]
    expected = [*policy_names(), "fairshare, rounded up", "gavel, rounded up", "fifo, rounded up",
                "fairshare, no binding"]
    assert labels == expected
    runs = read_csv(quick_out / "sharing_runs.csv")
    assert sorted(r["label"] for r in runs) == sorted(expected)      # one seed at quick size
    md = (quick_out / "sharing.md").read_text()
    for label in expected:
        assert f"| {label} |" in md
    for name in ("sharing.png", "sharing_groups.png"):
        assert (quick_out / name).read_bytes()[:8] == PNG


def test_fractions_and_counts_are_in_range(quick_out: Path) -> None:
    for r in read_csv(quick_out / "sharing.csv"):
        for key in ("unfair_fraction", "gpu_busy_fraction", "part_unfair_fraction"):
            for s in ("mean", "min", "max"):
                v = _f(r, f"{key}_{s}")
                assert math.isnan(v) or 0.0 <= v <= 1.0, (r["label"], key, v)
        assert _f(r, "gpu_busy_fraction_mean") > 0
        assert _f(r, "migrations_mean") >= 0 and _f(r, "split_gangs_mean") >= 0
        assert _f(r, "policy_ms_mean") > 0
        assert _f(r, "mean_jct_h_min") <= _f(r, "mean_jct_h_mean") <= _f(r, "mean_jct_h_max")


def test_rounded_trace_has_no_fractional_job_and_only_nodes_count_migrations(quick_out: Path) -> None:
    rows = {r["label"]: r for r in read_csv(quick_out / "sharing.csv")}
    for label, r in rows.items():
        if r["trace"] == "rounded":
            assert _f(r, "fractional_jobs") == 0, label
        else:
            assert _f(r, "fractional_jobs") == round(0.4 * 12), label     # 40 % of the 12 quick jobs
    unbound = rows["fairshare, no binding"]
    assert unbound["cluster"] == "counts"
    assert _f(unbound, "migrations_max") == 0 and _f(unbound, "split_gangs_max") == 0
    # jobs do move between GPUs in the quick runs, and binding to nodes counts those moves
    assert sum(_f(r, "migrations_mean") for r in rows.values() if r["cluster"] == "nodes") > 0


def test_binding_changes_nothing_but_gpu_choice_without_restart_overhead(tmp_path: Path) -> None:
    """With no restart overhead a migration costs nothing: nodes and counts give the same schedule."""
    assert load_example("sharing").main(["--quick", "--out", str(tmp_path), "--policies", "fairshare",
                                         "--restart-overhead", "0"]) == 0
    rows = {r["label"]: r for r in read_csv(tmp_path / "sharing.csv")}
    assert list(rows) == ["fairshare", "fairshare, rounded up", "fairshare, no binding"]
    for key in ("mean_jct_h_mean", "unfair_fraction_mean", "max_rho_mean", "gpu_busy_fraction_mean",
                "unfinished_mean"):
        a, b = _f(rows["fairshare"], key), _f(rows["fairshare, no binding"], key)
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-12), key


def test_unknown_policy_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as e:
        load_example("sharing").main(["--quick", "--out", str(tmp_path), "--policies", "nope"])
    assert e.value.code == 2


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16), fraction=st.sampled_from([0.0, 0.2, 0.4, 0.7, 1.0]),
       num_jobs=st.integers(1, 40))
def test_sharing_trace_follows_its_rule(seed: int, fraction: float, num_jobs: int) -> None:
    mod = load_example("sharing")
    shared, rounded = mod.sharing_trace(num_jobs, 8.0, seed, TYPES, fraction)
    assert shared.id == rounded.id and np.array_equal(shared.arrival, rounded.arrival)
    assert shared.model == rounded.model
    part = np.asarray(shared.scale) < 1
    ones = int((np.asarray(rounded.scale) == 1).sum())
    assert int(part.sum()) == min(ones, round(fraction * num_jobs))
    assert set(np.asarray(shared.scale)[part].tolist()) <= set(mod.SHARES)
    assert rounded.scale.dtype.kind == "i" and (np.asarray(rounded.scale)[part] == 1).all()
    assert np.array_equal(rounded.gpus, np.asarray(shared.scale, dtype=np.float64))    # the request is kept
    # whole-GPU jobs are untouched; a share keeps its ideal duration: s * iterations, rounded
    assert np.array_equal(shared.iterations[~part], rounded.iterations[~part])
    s = np.asarray(shared.scale)[part]
    assert np.allclose(shared.iterations[part], np.maximum(1.0, np.rint(s * rounded.iterations[part])))


@pytest.mark.parametrize("how", ["script", "module"])
def test_starts_as_a_script_and_as_a_module(how: str) -> None:
    args = [str(EXAMPLES / "sharing.py")] if how == "script" else ["-m", "examples.sharing"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, *args, "--help"], cwd=EXAMPLES.parent, env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("usage:") and "--quick" in run.stdout
