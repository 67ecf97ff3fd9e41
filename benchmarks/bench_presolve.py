"""HiGHS's presolve on the whole LPs of small warm rounds: what it costs and whether it changes the answer.

Warm rounds (``SolveOptions(warm_start=True)``) solve a round of fewer than
``fairshare.methods.warm.PRICING_MIN_COLUMNS`` columns as one LP, with HiGHS's presolve off. This script
replays windows of the long traces of ``bench_long_trace.py`` (Gavel's recipe, seed 0, 36 V100 + 36 P100 +
36 K80, ``--no-polish --warm-start``), keeps the LPs of the window's small rounds, then solves each of them
with and without presolve, alternately, ``--repeats`` times, and reports the median time of each, their
ratio, whether presolve removed anything (HiGHS's presolve status) and whether the point and the duals are
the same bit for bit.

Usage::

    python benchmarks/bench_presolve.py            # two windows: about 140 and about 500 active jobs (about 80 s)
    python benchmarks/bench_presolve.py --quick    # 2,000 jobs, a few rounds (seconds)
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import highspy
import numpy as np

import fairshare.methods.warm as warm_method
import fairshare.solvers.highs as highs_solver
from fairshare.methods.lp import solve_relaxation
from fairshare.sim.simulator import simulate
from fairshare.sim.traces import generate_trace

if __package__:  # python -m benchmarks.bench_presolve
    from ._common import current_argument, policy_settings, sim_settings, write_report
else:  # python benchmarks/bench_presolve.py
    from _common import current_argument, policy_settings, sim_settings, write_report

WINDOWS = ((3.0, 15_000, 15_300), (6.0, 3_700, 4_000))
"""``(jobs per hour, first round, last round)`` of the windows replayed (1-based rounds, inclusive)."""

CLUSTER = "V100=36,P100=36,K80=36"


@contextlib.contextmanager
def small_rounds(first: int) -> Iterator[list[tuple[Any, Any, Any]]]:
    """The ``(model, lp, options)`` of every small warm round from the ``first``-th whole-LP solve on.

    Solves are counted, not rounds: a round whose priced solve failed and fell back to the whole LP counts
    twice, so the window's first round is approximate where that happened (never in the windows measured).
    """
    kept: list[tuple[Any, Any, Any]] = []
    seen = [0]
    original = warm_method.solve_relaxation

    def keep(model: Any, lp: Any, opts: Any, **kw: Any) -> Any:
        seen[0] += 1
        if seen[0] >= first and kw.get("presolve") is False:
            kept.append((model, lp, opts))
        return original(model, lp, opts, **kw)

    warm_method.solve_relaxation = keep  # type: ignore[assignment]
    try:
        yield kept
    finally:
        warm_method.solve_relaxation = original


@contextlib.contextmanager
def presolve_statuses() -> Iterator[list[str]]:
    """HiGHS's presolve status of every run of :func:`fairshare.solvers.highs.solve_highs` inside."""
    statuses: list[str] = []
    original = highs_solver._run_by

    def run_by(h: Any, threads: Any, deadline: Any) -> Any:
        ran = original(h, threads, deadline)
        statuses.append(h.getModelPresolveStatus().name)
        return ran

    highs_solver._run_by = run_by  # type: ignore[assignment]
    try:
        yield statuses
    finally:
        highs_solver._run_by = original


def window(jobs: int, jph: float, first: int, last: int, repeats: int, current: bool = False) -> dict[str, Any]:
    """Replay to round ``last``, keep the small rounds from ``first`` on, time both ways alternately.

    Release 0.2's settings (with which the published tables were made) unless ``current``.
    """
    trace = generate_trace(jobs, jobs_per_hour=jph, seed=0)
    t = time.perf_counter()
    with small_rounds(first) as kept:
        res = simulate(trace, CLUSTER, "fairshare", max_rounds=last, show_progress=False,
                       policy_options=policy_settings(
                           "fairshare", {"options": {"polish": False, "warm_start": True}}, current),
                       **sim_settings(current))
    replay = time.perf_counter() - t
    active = [r.active_jobs for r in res.rounds[first - 1:]]
    on = np.zeros((repeats, len(kept)))
    off = np.zeros((repeats, len(kept)))
    same_x = same_duals = not_reduced = 0
    with presolve_statuses() as statuses:
        for rep in range(repeats):
            for k, (model, lp, opts) in enumerate(kept):
                t = time.perf_counter()
                a = solve_relaxation(model, lp, opts)
                on[rep, k] = time.perf_counter() - t
                status = statuses[-1]  # the last HiGHS run of the solve with presolve (after any fallback)
                t = time.perf_counter()
                b = solve_relaxation(model, lp, opts, presolve=False)
                off[rep, k] = time.perf_counter() - t
                if rep == 0:
                    not_reduced += status == highspy.HighsPresolveStatus.kNotReduced.name
                    same_x += bool(np.array_equal(a.x, b.x))
                    same_duals += bool(np.array_equal(a.row_dual, b.row_dual)
                                       and np.array_equal(a.col_dual, b.col_dual))
    cols = [lp.cost.shape[0] for _, lp, _ in kept]
    return {"jph": jph, "first": first, "last": last, "replay": replay, "lps": len(kept),
            "active": (min(active, default=0), max(active, default=0)),
            "cols": (min(cols, default=0), max(cols, default=0)),
            "on": float(np.median(on)) if kept else float("nan"),
            "off": float(np.median(off)) if kept else float("nan"),
            "not_reduced": not_reduced, "same_x": same_x, "same_duals": same_duals}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3, help="solves of each LP each way")
    ap.add_argument("--quick", action="store_true", help="2,000 jobs, rounds 100-120 at 6 jobs/h")
    ap.add_argument("--out", type=Path, default=Path("docs/results"))
    current_argument(ap)
    args = ap.parse_args(argv)
    jobs, windows = (2000, ((6.0, 100, 120),)) if args.quick else (100_000, WINDOWS)
    rows = []
    for jph, first, last in windows:
        rows.append(window(jobs, jph, first, last, args.repeats, args.current))
        print(f"[bench_presolve] {jph:g} jobs/h rounds {first}-{last}: {rows[-1]['lps']} LPs", file=sys.stderr)
    lines = [f"# HiGHS's presolve on small warm rounds ({jobs:,} Gavel-recipe jobs, seed 0, {CLUSTER})", "",
             "The whole LP of every small warm round in each window (fewer than "
             f"{warm_method.PRICING_MIN_COLUMNS:,} columns), solved with and without presolve, alternately, "
             f"{args.repeats} times each; median ms per LP:", "",
             "| jobs/h | rounds | active jobs | columns | LPs | with presolve | without | ratio | "
             "presolve removed nothing | same point | same duals |",
             "|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['jph']:g} | {r['first']:,}-{r['last']:,} | {r['active'][0]}-{r['active'][1]} | "
                     f"{r['cols'][0]:,}-{r['cols'][1]:,} | {r['lps']} | {r['on'] * 1e3:.3f} | "
                     f"{r['off'] * 1e3:.3f} | {r['off'] / r['on']:.2f} | {r['not_reduced']} | {r['same_x']} | "
                     f"{r['same_duals']} |")
    write_report(args.out, "bench_presolve_quick.md" if args.quick else "bench_presolve.md", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
