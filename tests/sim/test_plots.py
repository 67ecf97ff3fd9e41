"""Tests of fairshare.sim.plots: PNGs are written, have the expected size, and carry one series per policy."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fairshare.errors import InvalidInputError
from fairshare.sim import plots
from fairshare.sim.records import JobRecord, RoundRecord

NAN = float("nan")


def _jobs(slowdown: float, n: int = 30, unfinished: int = 0) -> list[JobRecord]:
    rng = np.random.default_rng(1)
    out = []
    for i in range(n):
        arrival = float(rng.uniform(0, 10 * 3600))
        fair = 0.1
        jct = float(1000.0 / fair * slowdown * rng.uniform(0.5, 1.5))
        if i < unfinished:
            out.append(JobRecord(f"j{i}", "m", "", 1, 1.0, arrival, NAN, 1000.0, 10.0, fair, 3600.0))
        else:
            out.append(JobRecord(f"j{i}", "m", "", 1, 1.0, arrival, arrival + jct, 1000.0, 1000.0, fair, jct))
    return out


def _rounds(util: float, n: int = 40) -> list[RoundRecord]:
    rng = np.random.default_rng(2)
    out = []
    for k in range(n):
        active = int(rng.integers(0, 50)) if k else 0  # round 0 is idle
        e = float(np.clip(util + rng.normal(0, 0.05), 0, 1)) if active else 0.0
        solver = float(10 ** rng.uniform(-3, 0)) if active else 0.0
        out.append(RoundRecord(k, 360.0 * k, 360.0, active, active, e, 2880.0 * e, 2880.0, solver, "optimal"))
    return out


JOB_RESULTS = {"fairshare": _jobs(1.0), "gavel": _jobs(1.4, unfinished=3), "fifo": _jobs(2.0)}
ROUND_RESULTS = {"fairshare": _rounds(0.8), "gavel": _rounds(0.6), "fifo": _rounds(0.5)}

CASES: list[tuple[Callable[..., Path], Callable[..., Any], dict[str, Any]]] = [
    (plots.plot_jct_cdf, plots._jct_cdf_figure, JOB_RESULTS),
    (plots.plot_rho_cdf, plots._rho_cdf_figure, JOB_RESULTS),
    (plots.plot_utilization_over_time, plots._utilization_figure, ROUND_RESULTS),
    (plots.plot_solver_time_vs_jobs, plots._solver_figure, ROUND_RESULTS),
]
IDS = ["jct_cdf", "rho_cdf", "utilization", "solver_time"]


@pytest.mark.parametrize(("plot", "figure", "results"), CASES, ids=IDS)
def test_png_is_written_and_non_trivial(
    plot: Callable[..., Path], figure: Any, results: Any, tmp_path: Path
) -> None:
    import matplotlib.image

    path = tmp_path / "figure.png"
    assert plot(results, path) == path
    assert path.stat().st_size > 10_000
    img = matplotlib.image.imread(path)
    w, h = plots.FIGSIZE
    assert img.shape[:2] == (round(h * plots.DPI), round(w * plots.DPI))
    assert img[..., :3].std() > 0.05  # not a blank canvas


@pytest.mark.parametrize(("plot", "figure", "results"), CASES, ids=IDS)
def test_one_labelled_series_per_policy(plot: Any, figure: Callable[..., Any], results: Any) -> None:
    ax = figure(results).axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert [lab.split(" (")[0] for lab in labels[: len(results)]] == list(results)
    assert ax.get_xlabel() and ax.get_ylabel()


def test_jct_legend_counts_unfinished_jobs() -> None:
    labels = [t.get_text() for t in plots._jct_cdf_figure(JOB_RESULTS).axes[0].get_legend().get_texts()]
    assert labels == ["fairshare", "gavel (3 unfinished)", "fifo"]


def test_axis_scales_and_units() -> None:
    ax = plots._jct_cdf_figure(JOB_RESULTS).axes[0]
    assert (ax.get_xscale(), ax.get_xlabel()) == ("log", "job completion time (h)")
    ax = plots._solver_figure(ROUND_RESULTS).axes[0]
    assert ax.get_yscale() == "log"
    assert ax.get_ylabel() == "solver wall time per round (s)"
    assert ax.get_xlabel() == "active jobs in the round"
    ax = plots._utilization_figure(ROUND_RESULTS).axes[0]
    assert ax.get_xlabel() == "simulated time (h)"
    assert ax.get_ylabel() == "utilization E / C (best-GPU equivalents per GPU)"
    ax = plots._rho_cdf_figure(JOB_RESULTS).axes[0]
    assert ax.get_xlabel().startswith("finish-time fairness rho")
    assert ax.get_ylabel() == "fraction of finished jobs"


def test_cdf_ends_at_one_over_finished_jobs() -> None:
    ax = plots._rho_cdf_figure({"fairshare": JOB_RESULTS["fairshare"]}).axes[0]
    y = ax.get_lines()[0].get_ydata()
    assert y[0] == 0.0 and y[-1] == pytest.approx(1.0)


def test_policy_without_data_still_listed(tmp_path: Path) -> None:
    results = {"fairshare": JOB_RESULTS["fairshare"], "stuck": [JOB_RESULTS["gavel"][0]]}  # no finished job
    labels = [t.get_text() for t in plots._jct_cdf_figure(results).axes[0].get_legend().get_texts()]
    assert labels == ["fairshare", "stuck (1 unfinished)"]
    assert plots.plot_utilization_over_time({"empty": []}, tmp_path / "e.png").exists()


@pytest.mark.parametrize(("plot", "figure", "results"), CASES, ids=IDS)
def test_empty_results_rejected(plot: Callable[..., Path], figure: Any, results: Any, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match=r"`results` = \{\}: needs at least one policy"):
        plot({}, tmp_path / "x.png")


def test_invalid_job_record_rejected(tmp_path: Path) -> None:
    bad = JobRecord("neg", "m", "", 1, 1.0, 100.0, 50.0, 10.0, 10.0, 0.1, 0.0)
    with pytest.raises(InvalidInputError, match=r"`jobs\['neg'\]\.finish` = 50\.0"):
        plots.plot_jct_cdf({"fifo": [bad]}, tmp_path / "x.png")


def test_import_does_not_load_matplotlib() -> None:
    code = "import sys, fairshare.sim.plots, fairshare.sim.metrics; assert 'matplotlib' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2])


def test_rho_cdf_has_a_log_axis_so_a_long_tail_does_not_squash_the_others() -> None:
    tail = _jobs(1.0)
    tail[0] = JobRecord("late", "m", "", 1, 1.0, 0.0, 976.0 * 10_000.0, 1000.0, 1000.0, 0.1, 976.0 * 10_000.0)
    ax = plots._rho_cdf_figure({"tail": tail, "fifo": _jobs(1.2)}).axes[0]
    assert ax.get_xscale() == "log" and "log axis" in ax.get_xlabel()
    lo, hi = ax.get_xlim()
    assert hi >= 976.0 and lo <= 0.5


def test_rho_and_jct_legends_count_censored_jobs_apart() -> None:
    jobs = _jobs(1.0, n=5)
    jobs[1] = JobRecord(**{**jobs[1].to_dict(), "censored": True})
    labels = [t.get_text() for t in plots._rho_cdf_figure({"p": jobs}).axes[0].get_legend().get_texts()]
    assert labels[0] == "p (1 censored)"


def test_utilization_is_a_rolling_mean_over_the_raw_rounds() -> None:
    alternating = [RoundRecord(k, 360.0 * k, 360.0, 5, 5, 1.0 if k % 2 else 0.2, 0.0, 2880.0, 0.01, "optimal")
                   for k in range(1000)]
    ax = plots._utilization_figure({"p": alternating}).axes[0]
    dots, line = ax.get_lines()[:2]
    assert dots.get_linestyle() == "None" and len(dots.get_ydata()) == 1000      # every raw round, as a dot
    w = plots.rolling_window(1000)
    assert w == 20 and f"rolling mean of {w} round(s)" in ax.get_title()
    y = np.asarray(line.get_ydata(), float)
    assert np.allclose(y[w:], 0.6)                                                 # the level, not a band
    assert y[0] == pytest.approx(0.2)


def test_rolling_mean_skips_idle_rounds() -> None:
    y = np.array([1.0, np.nan, 3.0, np.nan, np.nan, np.nan])
    np.testing.assert_allclose(plots._rolling_mean(y, 3), [1.0, 1.0, 2.0, 3.0, 3.0, np.nan])
    assert plots._rolling_mean(y, 1) is y
