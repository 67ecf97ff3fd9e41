"""PNG figures comparing policies: JCT CDF, rho CDF, utilization (E/C) over time, solver time against jobs.

Every function takes a mapping ``policy name -> records of its run`` and draws one series per policy, in
mapping order (so a policy keeps its colour across figures built from mappings in the same order), with axis
labels in units, a legend, and writes a PNG. matplotlib is imported inside the functions and drawn through
the Agg canvas directly (no ``pyplot``, no GUI backend, no global state), so importing :mod:`fairshare`
never needs matplotlib.

The quantities are those of :mod:`fairshare.sim.metrics`: JCT over finished jobs (the legend counts unfinished
jobs), finish-time fairness ``rho`` over finished jobs, per-round ``E / C`` over rounds with active jobs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from fairshare.errors import InvalidInputError
from fairshare.sim.metrics import UNFAIR_RHO, finish_time_fairness, job_completion_times
from fairshare.sim.records import JobRecord, RoundRecord

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_jct_cdf", "plot_rho_cdf", "plot_solver_time_vs_jobs",
           "plot_utilization_over_time", "rolling_window"]

#: Figure size (inches) and resolution of every figure: 960 x 600 pixels.
FIGSIZE = (6.4, 4.0)
DPI = 150


def _new_axes() -> tuple[Figure, Axes]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=FIGSIZE, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.grid(True, which="major", alpha=0.3)
    return fig, ax


def _save(fig: Figure, path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    fig.savefig(p, format="png", dpi=DPI)
    return p


def _check_results(results: Mapping[str, object]) -> None:
    if len(results) == 0:
        raise InvalidInputError("results", dict(results), "needs at least one policy")


def _cdf(ax: Axes, x: np.ndarray, label: str) -> None:
    """Empirical CDF as a step line: fraction of values <= x."""
    if x.size == 0:
        ax.plot([], [], label=label)
        return
    xs = np.sort(x)
    ys = np.arange(1, xs.size + 1) / xs.size
    ax.step(np.concatenate([[xs[0]], xs]), np.concatenate([[0.0], ys]), where="post", label=label)


def _job_label(name: str, jobs: Sequence[JobRecord], finished: int) -> str:
    """The legend entry: the policy, and how many jobs the CDF leaves out (unfinished, censored)."""
    unfinished = sum(1 for j in jobs if not np.isfinite(j.finish))
    censored = sum(1 for j in jobs if getattr(j, "censored", False))
    out = [f"{unfinished} unfinished"] if unfinished else []
    out += [f"{censored} censored"] if censored else []
    return f"{name} ({', '.join(out)})" if out else name


def _jct_cdf_figure(results: Mapping[str, Sequence[JobRecord]]) -> Figure:
    _check_results(results)
    fig, ax = _new_axes()
    positive = True
    for name, jobs in results.items():
        jct_h = job_completion_times(jobs) / 3600.0
        positive &= bool((jct_h > 0).all())
        _cdf(ax, jct_h, _job_label(name, jobs, jct_h.size))
    if positive and ax.has_data():
        ax.set_xscale("log")
    ax.set_xlabel("job completion time (h)")
    ax.set_ylabel("fraction of finished jobs")
    ax.set_ylim(0.0, 1.02)
    ax.set_title("JCT CDF")
    ax.legend(loc="lower right")
    return fig


def plot_jct_cdf(results: Mapping[str, Sequence[JobRecord]], path: str | os.PathLike[str]) -> Path:
    """CDF of job completion time (h, log axis) of the finished jobs, one step line per policy.

    Parameters
    ----------
    results : mapping of str to sequence of JobRecord
        Policy name -> job records of its run. A policy with unfinished jobs says how many in the legend.
    path : str or path-like
        Where to write the PNG (the directory must exist).

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    InvalidInputError
        If ``results`` is empty or a record is invalid (see :func:`fairshare.sim.metrics.compute_metrics`).

    Examples
    --------
    >>> import tempfile, os
    >>> from fairshare.sim.records import JobRecord
    >>> jobs = [JobRecord("a", "m", "", 1, 1.0, 0.0, 3600.0, 36.0, 36.0, 0.01, 3600.0)]
    >>> with tempfile.TemporaryDirectory() as d:
    ...     os.path.getsize(plot_jct_cdf({"fifo": jobs}, os.path.join(d, "jct.png"))) > 0
    True
    """
    return _save(_jct_cdf_figure(results), path)


def _rho_cdf_figure(results: Mapping[str, Sequence[JobRecord]]) -> Figure:
    _check_results(results)
    fig, ax = _new_axes()
    positive = True
    for name, jobs in results.items():
        rho = finish_time_fairness(jobs)
        positive &= bool((rho > 0).all())
        _cdf(ax, rho, _job_label(name, jobs, rho.size))
    ax.axvline(1.0, color="0.3", linewidth=0.8, linestyle=":")
    ax.axvline(UNFAIR_RHO, color="0.3", linewidth=0.8, linestyle="--", label=f"unfair above {UNFAIR_RHO:g}")
    if positive and ax.has_data():
        ax.set_xscale("log")        # a long tail (rho in the hundreds) would squash every other policy at 0
    ax.set_xlabel("finish-time fairness rho = JCT / (iterations / fair throughput), log axis")
    ax.set_ylabel("fraction of finished jobs")
    ax.set_ylim(0.0, 1.02)
    ax.set_title("Finish-time fairness CDF")
    ax.legend(loc="lower right")
    return fig


def plot_rho_cdf(results: Mapping[str, Sequence[JobRecord]], path: str | os.PathLike[str]) -> Path:
    """CDF of finish-time fairness ``rho`` (dimensionless, log axis) of the finished jobs, one line per policy.

    Dotted line at ``rho = 1`` (the fair-share finish time), dashed line at the unfairness threshold 1.05.
    The x axis is logarithmic, so that a tail of very late jobs does not squash the other policies.

    Parameters
    ----------
    results : mapping of str to sequence of JobRecord
        Policy name -> job records of its run.
    path : str or path-like
        Where to write the PNG.

    Returns
    -------
    Path
        ``path``.

    Examples
    --------
    >>> import tempfile, os
    >>> from fairshare.sim.records import JobRecord
    >>> jobs = [JobRecord("a", "m", "", 1, 1.0, 0.0, 3600.0, 36.0, 36.0, 0.01, 3600.0)]
    >>> with tempfile.TemporaryDirectory() as d:
    ...     os.path.getsize(plot_rho_cdf({"fifo": jobs}, os.path.join(d, "rho.png"))) > 0
    True
    """
    return _save(_rho_cdf_figure(results), path)


def _round_columns(rounds: Sequence[RoundRecord], *names: str) -> list[np.ndarray]:
    return [np.array([float(getattr(r, n)) for r in rounds], dtype=np.float64) for n in names]


def rolling_window(rounds: int) -> int:
    """Rounds averaged by the utilization figure's rolling mean: 1/50 of the rounds, from 1 to 200.

    >>> rolling_window(30), rolling_window(5000), rolling_window(10**6)
    (1, 100, 200)
    """
    return max(1, min(200, rounds // 50))


def _rolling_mean(y: np.ndarray, window: int) -> np.ndarray:
    """Trailing mean of the last ``window`` finite values at each point (nan where all are missing)."""
    if window <= 1:
        return y
    ok = np.isfinite(y)
    csum = np.concatenate([[0.0], np.cumsum(np.where(ok, y, 0.0))])
    ccnt = np.concatenate([[0], np.cumsum(ok)])
    hi = np.arange(1, y.size + 1)
    lo = np.maximum(0, hi - window)
    n = ccnt[hi] - ccnt[lo]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, (csum[hi] - csum[lo]) / np.maximum(n, 1), np.nan)


def _utilization_figure(results: Mapping[str, Sequence[RoundRecord]]) -> Figure:
    _check_results(results)
    fig, ax = _new_axes()
    windows = set()
    for i, (name, rounds) in enumerate(results.items()):
        start, length, active, util = _round_columns(rounds, "start", "length", "active_jobs", "utilization")
        if not start.size:
            ax.plot([], [], label=name)
            continue
        # Each round's E/C holds over [start, start + length); rounds without active jobs are gaps.
        y = np.where(active > 0, util, np.nan)
        mid = (start + length / 2) / 3600.0
        colour = f"C{i % 10}"
        ax.plot(mid, y, linestyle="none", marker=".", markersize=2, alpha=0.25, color=colour)
        w = rolling_window(int(np.isfinite(y).sum()))
        windows.add(w)
        ax.plot(mid, np.where(np.isfinite(y), _rolling_mean(y, w), np.nan), color=colour, linewidth=1.2, label=name)
    ax.set_xlabel("simulated time (h)")
    ax.set_ylabel("utilization E / C (best-GPU equivalents per GPU)")
    ax.set_ylim(bottom=0.0)
    smooth = ", ".join(str(w) for w in sorted(windows))
    ax.set_title(f"Utilization E / C: rounds (dots), rolling mean of {smooth} round(s) (lines)")
    ax.legend(loc="lower right")
    return fig


def plot_utilization_over_time(
    results: Mapping[str, Sequence[RoundRecord]], path: str | os.PathLike[str]
) -> Path:
    """Per-round utilization ``E / C`` against simulated time (h): raw rounds as dots, a rolling mean as a line.

    Each round is a faint dot at its middle; the line is the trailing mean over :func:`rolling_window` rounds
    (1/50 of the rounds with active jobs, from 1 to 200; the title says how many), so a run whose rounds
    alternate between two levels reads as its level, not as a solid band. Rounds without active jobs are
    left blank.

    Parameters
    ----------
    results : mapping of str to sequence of RoundRecord
        Policy name -> round records of its run.
    path : str or path-like
        Where to write the PNG.

    Returns
    -------
    Path
        ``path``.

    Examples
    --------
    >>> import tempfile, os
    >>> from fairshare.sim.records import RoundRecord
    >>> rounds = [RoundRecord(0, 0.0, 360.0, 2, 2, 0.9, 700.0, 720.0, 0.01, "optimal")]
    >>> with tempfile.TemporaryDirectory() as d:
    ...     os.path.getsize(plot_utilization_over_time({"fifo": rounds}, os.path.join(d, "u.png"))) > 0
    True
    """
    return _save(_utilization_figure(results), path)


def _solver_figure(results: Mapping[str, Sequence[RoundRecord]]) -> Figure:
    _check_results(results)
    fig, ax = _new_axes()
    markers = "os^Dv<>pPX*h"
    for i, (name, rounds) in enumerate(results.items()):
        active, secs = _round_columns(rounds, "active_jobs", "solver_seconds")
        keep = (active > 0) & (secs > 0)  # a log axis cannot show 0 s
        ax.scatter(active[keep], secs[keep], s=10, alpha=0.6, marker=markers[i % len(markers)], label=name,
                   linewidths=0)
    ax.set_yscale("log")
    ax.set_xlabel("active jobs in the round")
    ax.set_ylabel("solver wall time per round (s)")
    ax.set_title("Solver time against round size")
    ax.legend(loc="upper left", markerscale=2.0)
    return fig


def plot_solver_time_vs_jobs(
    results: Mapping[str, Sequence[RoundRecord]], path: str | os.PathLike[str]
) -> Path:
    """Solver wall time per round (s, log axis) against the number of active jobs, one scatter per policy.

    Rounds without active jobs and rounds with a solver time of 0 (which a log axis cannot show) are left out.

    Parameters
    ----------
    results : mapping of str to sequence of RoundRecord
        Policy name -> round records of its run.
    path : str or path-like
        Where to write the PNG.

    Returns
    -------
    Path
        ``path``.

    Examples
    --------
    >>> import tempfile, os
    >>> from fairshare.sim.records import RoundRecord
    >>> rounds = [RoundRecord(0, 0.0, 360.0, 2, 2, 0.9, 700.0, 720.0, 0.01, "optimal")]
    >>> with tempfile.TemporaryDirectory() as d:
    ...     os.path.getsize(plot_solver_time_vs_jobs({"fifo": rounds}, os.path.join(d, "t.png"))) > 0
    True
    """
    return _save(_solver_figure(results), path)
