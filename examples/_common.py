"""Shared helpers of the scripts in ``examples/`` and (through ``benchmarks/_common.py``) ``benchmarks/``.

Aggregation over seeds (mean, min, max, std of one metric), Markdown/CSV table writers, a mean-JCT-vs-load
figure, progress lines on stderr, and the size arguments of the scripts. Not part of the library API.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from fairshare.sim.metrics import METRIC_COLUMNS, MetricColumn, RunMetrics

__all__ = ["CURRENT_SIM", "METRICS", "RELEASE_02_FAIRSHARE", "RELEASE_02_SIM", "Agg", "Column", "aggregate",
           "config_arguments", "current_argument", "log", "long_trace_arguments", "plot_vs_load", "policy_settings",
           "resolve_config", "sim_settings", "write_dict_csv", "write_run_csv", "write_tables"]

_T0 = time.perf_counter()


def log(msg: str) -> None:
    """One progress line on stderr, with the seconds since the script started."""
    print(f"[{time.perf_counter() - _T0:7.1f} s] {msg}", file=sys.stderr, flush=True)


_LIBRARY = {c.name: c for c in METRIC_COLUMNS}

#: The metrics of the sweep tables: columns of :data:`fairshare.sim.metrics.METRIC_COLUMNS`, with one decimal
#: for long times and the mean solver time per round as ``solver_ms``.
METRICS: tuple[MetricColumn, ...] = (
    _LIBRARY["mean_jct_h"],
    replace(_LIBRARY["p99_jct_h"], spec=".1f"),
    replace(_LIBRARY["makespan_h"], spec=".1f"),
    _LIBRARY["unfair_fraction"],
    _LIBRARY["max_rho"],
    _LIBRARY["jain"],
    _LIBRARY["utilization"],
    _LIBRARY["gpu_busy_fraction"],
    replace(_LIBRARY["mean_solver_ms"], name="solver_ms", header="solver/round (ms)", spec=".1f"),
)


@dataclass(frozen=True)
class Agg:
    """Mean, min, max and (population) std of one metric over seeds; nan values are ignored."""

    mean: float
    min: float
    max: float
    std: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Agg:
        a = np.asarray(values, dtype=np.float64)
        a = a[np.isfinite(a)]
        if a.size == 0:
            return cls(math.nan, math.nan, math.nan, math.nan, 0)
        return cls(float(a.mean()), float(a.min()), float(a.max()), float(a.std()), int(a.size))

    def md(self, spec: str) -> str:
        """``mean [min–max]`` (just ``mean`` for one value)."""
        if self.n == 0:
            return "nan"
        if self.n == 1 or self.min == self.max:
            return format(self.mean, spec)
        return f"{format(self.mean, spec)} [{format(self.min, spec)}–{format(self.max, spec)}]"


def aggregate(metrics: Sequence[RunMetrics]) -> dict[str, Agg]:
    """Every metric of :data:`METRICS` aggregated over the runs (one per seed)."""
    return {c.name: Agg.of([c.value(m) for m in metrics]) for c in METRICS}


@dataclass(frozen=True)
class Column:
    """A table column: csv name, markdown header, value of a row, markdown format (``""``: as is)."""

    name: str
    header: str
    get: Callable[[Mapping[str, Any]], Any]
    spec: str = ""


def write_tables(rows: Sequence[Mapping[str, Any]], keys: Sequence[str], out: Path, stem: str,
                 *, extra: Sequence[Column] = ()) -> tuple[Path, Path, str]:
    """Write ``stem.md`` and ``stem.csv``: key columns, then every metric (mean [min–max]), then ``extra``.

    A row holds its key values (``keys``) and ``"agg"`` (the result of :func:`aggregate`). The CSV has
    ``<metric>_mean``, ``_min``, ``_max`` and ``_std`` per metric, at full precision.
    """
    md_head = [*keys, *(c.header for c in METRICS), *(c.header for c in extra)]
    lines = ["| " + " | ".join(md_head) + " |",
             "|" + "|".join([":---"] * len(keys) + ["---:"] * (len(md_head) - len(keys))) + "|"]
    for r in rows:
        cells = [str(r[k]).replace("|", "\\|") for k in keys]
        cells += [r["agg"][c.name].md(c.spec) for c in METRICS]
        cells += [format(c.get(r), c.spec) if c.spec else str(c.get(r)) for c in extra]
        lines.append("| " + " | ".join(cells) + " |")
    md = "\n".join(lines) + "\n"
    md_path, csv_path = out / f"{stem}.md", out / f"{stem}.csv"
    md_path.write_text(md)
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow([*keys, *(f"{c.name}_{s}" for c in METRICS for s in ("mean", "min", "max", "std")),
                    *(c.name for c in extra)])
        for r in rows:
            w.writerow([*(r[k] for k in keys),
                        *(repr(getattr(r["agg"][c.name], s)) for c in METRICS
                          for s in ("mean", "min", "max", "std")),
                        *(c.get(r) for c in extra)])
    return md_path, csv_path, md


def write_run_csv(path: Path, runs: Sequence[tuple[Mapping[str, Any], RunMetrics, float]]) -> Path:
    """One CSV row per simulation, to pair policies seed by seed (same trace).

    Columns: its key columns, every metric of :data:`METRICS` at full precision, ``unfinished`` and
    ``sim_wall_s``. ``runs`` holds ``(keys, metrics, wall seconds)``; every run has the same keys.
    """
    runs = list(runs)
    keys = list(runs[0][0]) if runs else []
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow([*keys, *(c.name for c in METRICS), "unfinished", "sim_wall_s"])
        for k, m, wall in runs:
            w.writerow([*(k[c] for c in keys), *(repr(float(col.value(m))) for col in METRICS), m.unfinished,
                        repr(float(wall))])
    return path


def plot_vs_load(series: Mapping[str, tuple[Sequence[float], Sequence[Agg]]], path: str | os.PathLike[str], *,
                 ylabel: str, title: str, logy: bool = False, hline: float | None = None) -> Path:
    """One line per series (``name -> (loads, Agg per load)``) with a min–max band; PNG at ``path``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.0), dpi=150, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.grid(True, alpha=0.3)
    for name, (loads, aggs) in series.items():
        x = np.asarray(loads, dtype=float)
        y = np.array([a.mean for a in aggs])
        (line,) = ax.plot(x, y, marker="o", label=name)
        lo, hi = np.array([a.min for a in aggs]), np.array([a.max for a in aggs])
        ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.12, linewidth=0)
    if hline is not None:
        ax.axhline(hline, color="k", linestyle="--", linewidth=1, label=f"published {hline:g}x")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("input load (jobs/hour)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    p = Path(path)
    fig.savefig(p, format="png", dpi=150)
    return p


def size_arguments(ap: argparse.ArgumentParser, full: Mapping[str, Any], quick: Mapping[str, Any]) -> None:
    """The arguments every sweep script shares: output, workers, and the size of the sweep."""
    def fmt(v: Any) -> str:
        return " ".join(f"{x:g}" for x in v) if isinstance(v, tuple) else ("none" if v is None else f"{v:g}")

    ap.add_argument("--out", type=Path, default=Path("docs/results"), help="output directory")
    ap.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--quick", action="store_true", help="smoke-test size (few jobs, one load, capped rounds)")
    ap.add_argument("--num-jobs", type=int,
                    help=f"jobs per trace (default {full['num_jobs']}; quick {quick['num_jobs']})")
    ap.add_argument("--loads", type=float, nargs="+",
                    help=f"loads in jobs/hour (default {fmt(full['loads'])}; quick {fmt(quick['loads'])})")
    ap.add_argument("--seeds", type=int, nargs="+",
                    help=f"trace seeds (default {fmt(full['seeds'])}; quick {fmt(quick['seeds'])})")
    ap.add_argument("--round-length", type=float,
                    help=f"round length in s (default {fmt(full['round_length'])}; quick {fmt(quick['round_length'])})")
    ap.add_argument("--max-rounds", type=int,
                    help=f"stop each run after this many rounds (default {fmt(full['max_rounds'])}; "
                         f"quick {fmt(quick['max_rounds'])})")


def resolve_size(args: argparse.Namespace, full: Mapping[str, Any], quick: Mapping[str, Any]) -> argparse.Namespace:
    """Fill the size arguments left unset from the full or the quick size."""
    size = quick if args.quick else full
    args.num_jobs = args.num_jobs or size["num_jobs"]
    args.loads = tuple(sorted(args.loads or size["loads"]))
    args.seeds = tuple(args.seeds if args.seeds is not None else size["seeds"])
    args.round_length = args.round_length or size["round_length"]
    args.max_rounds = args.max_rounds if args.max_rounds is not None else size["max_rounds"]
    return args


#: the trace/cluster settings :func:`config_arguments` adds and :func:`resolve_config` overrides
CONFIG_KEYS = ("jobs", "jobs_per_hour", "cluster", "seeds", "round_length")


def long_trace_arguments(ap: argparse.ArgumentParser) -> None:
    """``--jobs``, ``--jobs-per-hour``, ``--seed`` and ``--cluster`` of the long-replay scripts.

    Their defaults are the trace of ``fairshare trace --jobs 100000`` (Gavel's recipe, 6 jobs/h, seed 0) on
    36 V100 + 36 P100 + 36 K80. Also ``--current`` (:func:`current_argument`).
    """
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--jobs-per-hour", type=float, default=6.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cluster", default="V100=36,P100=36,K80=36")
    current_argument(ap)


def config_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``tradeoff_epsilon.py`` and ``ablations.py``: size, output, workers, trace settings."""
    p.add_argument("--quick", action="store_true", help="small smoke-test size")
    p.add_argument("--out", type=Path, default=Path("docs/results"), help="output directory")
    p.add_argument("--workers", type=int, default=2, help="parallel simulations")
    p.add_argument("--jobs", type=int, help="jobs per trace")
    p.add_argument("--jobs-per-hour", type=float, help="arrival rate")
    p.add_argument("--cluster", help='e.g. "V100=36,P100=36,K80=36"')
    p.add_argument("--seeds", type=int, nargs="+", help="trace seeds")
    p.add_argument("--round-length", type=float, help="seconds per round")
    current_argument(p)


def resolve_config(a: argparse.Namespace, full: Mapping[str, Any],
                   quick: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The full or quick config with the settings given on the command line, and its size label."""
    cfg = dict(quick if a.quick else full)
    for k in CONFIG_KEYS:
        if getattr(a, k) is not None:
            cfg[k] = getattr(a, k)
    return cfg, "quick" if a.quick else ("full" if cfg == full else "custom")


def write_dict_csv(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """``rows`` (dicts with the same keys) as CSV, header from the first row."""
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def write_report(out: Path, name: str, lines: Sequence[str]) -> str:
    """Write ``lines`` (one Markdown report) to ``out/name``, creating ``out``; print it and return its text."""
    text = "\n".join(lines) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / name).write_text(text)
    print(text)
    return text


#: The settings the published studies of release 0.2 were made with, before the third release changed the
#: defaults (issue "fair to every job on real workloads"): jobs start at round boundaries and on idle GPUs between
#: them (no re-planning at events), no restart overhead, and fairshare without shortfall prices. Scripts that
#: reproduce those tables pass them explicitly, so that their published numbers stay reproducible.
RELEASE_02_SIM = {"starts": "idle", "restart_overhead": 0.0, "wait_is_owed": False}
RELEASE_02_FAIRSHARE = {"shortfall_price": "none", "restart_aware": False}

#: Today's defaults as ``fairshare simulate/compare`` runs them: the simulator's and the policies' defaults with a
#: restart overhead of 30 s (what ``--current`` of the scripts runs).
CURRENT_SIM = {"restart_overhead": 30.0}


def current_argument(ap: argparse.ArgumentParser) -> None:
    """``--current``: today's defaults instead of release 0.2's settings (:data:`RELEASE_02_SIM`)."""
    ap.add_argument("--current", action="store_true",
                    help="today's defaults and a 30 s restart overhead instead of release 0.2's settings, with "
                         "which the published tables were made")


def sim_settings(current: bool = False) -> dict[str, Any]:
    """Simulator options under a script's own: release 0.2's, or (``current``) :data:`CURRENT_SIM`."""
    return dict(CURRENT_SIM if current else RELEASE_02_SIM)


def policy_settings(policy: str, options: Mapping[str, Any] | None = None, current: bool = False) -> dict[str, Any]:
    """``options`` of ``policy``, under them release 0.2's fairshare settings unless ``current``."""
    given = dict(options or {})
    return given if current or policy != "fairshare" else {**RELEASE_02_FAIRSHARE, **given}
