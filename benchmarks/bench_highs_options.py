"""HiGHS's options on the restricted LPs of warm rounds with a long queue: does any make pricing faster.

A warm round of at least ``fairshare.methods.warm.PRICING_MIN_COLUMNS`` columns is solved by pricing: HiGHS
solves a small restricted LP, columns and rows that price out are added, and HiGHS solves again (about 2.4
runs per round once 1,400 jobs wait, see ``round_parts.py``). This script replays a window of the long
trace of ``bench_long_trace.py`` (Gavel's recipe, seed 0, 36 V100 + 36 P100 + 36 K80, ``--no-polish
--warm-start``), keeps every priced round of the window with the warm state it started from, then solves
each kept round again by pricing (:func:`fairshare.methods.warm.solve_priced`) with HiGHS's options as in
fairshare and with each variant below, the variants in turn, ``--repeats`` times, and reports the mean ms
per round (median over the repeats), HiGHS runs and simplex iterations per round, and in how many rounds
the LP point is the same bit for bit as with fairshare's options. The variants run in a rotating order
(each first in one repeat).

Each replayed round gets a new HiGHS object (the simulation reuses one), the same for every variant. The
script reads the warm state through its private helpers (``WarmStart._copy``, ``_fetch_basis``): a
benchmark harness, not an example of the API.

Usage::

    python benchmarks/bench_highs_options.py --repeats 7   # rounds 12,000-12,300 at 6 jobs/h (~1,400 waiting; ~90 s)
    python benchmarks/bench_highs_options.py --quick       # 2,000 jobs, rounds 100-120 (seconds; small rounds)
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

import fairshare.methods.relax as relax_method
import fairshare.methods.warm as warm_method
import fairshare.sim.ledger as ledger
import fairshare.sim.simulator as simulator
import fairshare.solvers.highs as highs_solver
from fairshare.formulation import LinearProgram, RoundModel
from fairshare.methods.options import SolveOptions
from fairshare.methods.warm import WarmStart
from fairshare.sim.traces import generate_trace

if __package__:  # python -m benchmarks.bench_highs_options
    from ._common import log, long_trace_arguments, policy_settings, sim_settings, write_report
else:  # python benchmarks/bench_highs_options.py
    from _common import log, long_trace_arguments, policy_settings, sim_settings, write_report

Kept = tuple[RoundModel, LinearProgram, SolveOptions, WarmStart]
"""A kept round: its model, LP, options and (a copy of) the warm state it started from."""

VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("fairshare's options", {}),
    ("Devex dual edge weights", {"simplex_dual_edge_weight_strategy": 1}),
    ("Dantzig dual pricing", {"simplex_dual_edge_weight_strategy": 0}),
    ("no scaling", {"simplex_scale_strategy": 0}),
)
"""``(label, HiGHS options set on top of fairshare's)``; the first is the reference."""


@contextlib.contextmanager
def priced_rounds(first: int) -> Iterator[list[Kept]]:
    """Every priced round of a simulation from its ``first``-th round (1-based) on, as :data:`Kept`.

    Rounds are counted as the simulator builds their problems (once per round). The warm state is a copy of
    the one the round started from, its previous basis read from HiGHS first (a kept state must not refer to
    the HiGHS object that the next round reuses).
    """
    kept: list[Kept] = []
    rounds = [0]
    original, original_problem = relax_method.solve_priced, ledger._Ledger.problem

    def problem(self: Any, *args: Any, **kwargs: Any) -> Any:
        rounds[0] += 1
        return original_problem(self, *args, **kwargs)

    def keep(model: Any, lp: Any, opts: Any, warm: Any = None, **kw: Any) -> Any:
        if rounds[0] >= first and warm is not None and model.columns.num >= warm_method.PRICING_MIN_COLUMNS:
            if not warm.empty:
                warm._fetch_basis()
            kept.append((model, lp, opts, warm._copy()))
        return original(model, lp, opts, warm, **kw)

    relax_method.solve_priced = keep  # type: ignore[assignment]
    ledger._Ledger.problem = problem  # type: ignore[method-assign]
    try:
        yield kept
    finally:
        relax_method.solve_priced = original
        ledger._Ledger.problem = original_problem  # type: ignore[method-assign]


@contextlib.contextmanager
def highs_options(options: dict[str, Any]) -> Iterator[None]:
    """Set ``options`` on every restricted LP's HiGHS object made inside (after fairshare's own)."""
    original = highs_solver.IncrementalLP.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        for key, value in options.items():
            if self.highs.setOptionValue(key, value) == highspy.HighsStatus.kError:
                raise RuntimeError(f"HiGHS refused the option {key} = {value!r}")

    highs_solver.IncrementalLP.__init__ = init  # type: ignore[method-assign]
    try:
        yield
    finally:
        highs_solver.IncrementalLP.__init__ = original  # type: ignore[method-assign]


def replay(kept: list[Kept], repeats: int) -> list[dict[str, Any]]:
    """Every kept round solved again under each variant, the variants in turn (order rotating), ``repeats`` times."""
    seconds = np.zeros((len(VARIANTS), repeats))
    runs = np.zeros(len(VARIANTS))
    iterations = np.zeros(len(VARIANTS))
    points: list[list[Any]] = [[] for _ in VARIANTS]
    for rep in range(repeats):
        for v in np.roll(np.arange(len(VARIANTS)), -rep).tolist():
            with highs_options(VARIANTS[v][1]):
                for model, lp, opts, warm in kept:
                    state = warm._copy()
                    state.passes = state.iterations = 0  # what this solve reports (a failed pricing falls back)
                    t = time.perf_counter()
                    out = warm_method.solve_priced(model, lp, opts, state)
                    seconds[v, rep] += time.perf_counter() - t
                    if rep == 0:
                        runs[v] += state.passes
                        iterations[v] += state.iterations
                        points[v].append(out.x)
    n = max(len(kept), 1)
    ms = np.median(seconds, axis=1) / n * 1e3
    return [{"label": label, "ms": float(ms[v]), "ratio": float(ms[v] / ms[0]) if ms[0] > 0 else float("nan"),
             "runs": float(runs[v] / n), "iterations": float(iterations[v] / n),
             "same": sum(bool(np.array_equal(a, b)) for a, b in zip(points[v], points[0], strict=True))}
            for v, (label, _) in enumerate(VARIANTS)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    long_trace_arguments(ap)
    ap.add_argument("--first", type=int, default=12_000, help="first kept round (1-based)")
    ap.add_argument("--last", type=int, default=12_300, help="last round replayed")
    ap.add_argument("--repeats", type=int, default=3, help="solves of each round under each variant")
    ap.add_argument("--quick", action="store_true", help="2,000 jobs, rounds 100-120")
    ap.add_argument("--out", type=Path, default=Path("docs/results"))
    args = ap.parse_args(argv)
    if args.quick:
        args.jobs, args.first, args.last = 2000, 100, 120
    if not 1 <= args.first <= args.last:
        ap.error(f"--first ({args.first}) must be between 1 and --last ({args.last})")
    trace = generate_trace(args.jobs, jobs_per_hour=args.jobs_per_hour, seed=args.seed)
    with priced_rounds(args.first) as kept:
        res = simulator.simulate(trace, args.cluster, "fairshare", max_rounds=args.last, show_progress=False,
                                 policy_options=policy_settings(
                                     "fairshare", {"options": {"polish": False, "warm_start": True}}, args.current),
                                 **sim_settings(args.current))
    if len(res.rounds) < args.first:
        log(f"[bench_highs_options] the run ended after {len(res.rounds)} rounds, before round {args.first}")
        return 1
    active = [r.active_jobs for r in res.rounds[args.first - 1:]]
    log(f"[bench_highs_options] {len(kept)} priced rounds kept")
    lines = [f"# HiGHS's options on warm rounds' restricted LPs ({args.jobs:,} Gavel-recipe jobs at "
             f"{args.jobs_per_hour:g} jobs/h, seed {args.seed}, {args.cluster})", ""]
    if not kept:
        lines.append(f"No round of rounds {args.first:,}-{args.last:,} was solved by pricing (every LP had fewer "
                     f"than {warm_method.PRICING_MIN_COLUMNS:,} columns).")
    else:
        rows = replay(kept, args.repeats)
        lines += [f"Rounds {args.first:,}-{len(res.rounds):,} ({min(active):,}-{max(active):,} active jobs): "
                  f"{len(kept)} rounds solved by pricing, each solved again under every variant, the variants in "
                  f"turn, {args.repeats} times; mean ms per round (median over the repeats):", "",
                  "| HiGHS options | ms per round | ratio | HiGHS runs per round | simplex iterations per round | "
                  "same point |", "|:---|---:|---:|---:|---:|---:|"]
        for r in rows:
            lines.append(f"| {r['label']} | {r['ms']:.3f} | {r['ratio']:.3f} | {r['runs']:.2f} | "
                         f"{r['iterations']:.1f} | {r['same']} of {len(kept)} |")
    write_report(args.out, "bench_highs_options_quick.md" if args.quick else "bench_highs_options.md", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
