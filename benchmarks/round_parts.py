"""Where a simulated round's wall time goes once the queue is long: timers around the parts of a round.

Replays the long trace of ``bench_long_trace.py`` (``fairshare trace --jobs 100000``: Gavel's recipe, seed 0)
with the ``fairshare`` policy in ``fast`` mode, ``--no-polish --warm-start`` by default, and times, for the
rounds ``--first`` to ``--last`` only, the parts of a round: the round's problem (``RoundProblem``), its
co-location candidates, its model, the LP solved by pricing (HiGHS's own run, building the restricted LPs,
the warm state), the greedy rounding, the rest of the policy, and the simulator's execution of the round and
starts between rounds. Timers are plain ``perf_counter`` pairs around module functions (no profiler: a
profiler inflates Python code against compiled code); a part called inside another is counted in both, so
the report gives each part in ms per round and as a share of the whole round, not a sum.

A second table breaks HiGHS's runs down by pricing pass (pass 1 solves the first restricted LP, each later
pass the LP with the columns and rows priced in after the pass before): runs per round, HiGHS's own ms per
run, simplex iterations per run and the restricted LP's size. Rounds with fewer columns than
``fairshare.methods.warm.PRICING_MIN_COLUMNS`` are solved as one LP, not by pricing, and do not appear there.

Usage::

    python benchmarks/round_parts.py                            # rounds 12,000-14,000 (1,400-1,600 waiting jobs)
    python benchmarks/round_parts.py --first 2000 --last 3000   # a shorter queue
    python benchmarks/round_parts.py --quick                    # 2,000 jobs, rounds 100-150 (seconds)
    python benchmarks/round_parts.py --name round_parts_highs_passes   # the same into another report file
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import fairshare.methods.fast as fast_method
import fairshare.methods.relax as relax_method
import fairshare.methods.warm as warm_method
import fairshare.policies.fairshare as fairshare_policy
import fairshare.sim.ledger as ledger
import fairshare.sim.simulator as simulator
import fairshare.solvers.highs as highs_solver
from fairshare.formulation import RoundModel
from fairshare.sim.traces import generate_trace

if __package__:  # python -m benchmarks.round_parts
    from ._common import long_trace_arguments, policy_settings, sim_settings, write_report
else:  # python benchmarks/round_parts.py
    from _common import long_trace_arguments, policy_settings, sim_settings, write_report

PARTS: tuple[tuple[Any, str, str], ...] = (
    (fairshare_policy.FairsharePolicy, "allocate", "policy (allocate)"),
    (ledger._Ledger, "problem", "round problem (RoundProblem)"),
    (ledger._PairCache, "get", "co-location candidates"),
    (simulator, "build_model", "model (build_model)"),
    (RoundModel, "tightened_lp", "LP matrix (tightened_lp)"),
    (fast_method, "round_relaxation", "LP and rounding"),
    (relax_method, "solve_priced", "LP by pricing (solve_priced)"),
    (highs_solver, "_run_by", "HiGHS run"),
    (highs_solver.IncrementalLP, "__init__", "restricted LP handed to HiGHS"),
    (warm_method.WarmStart, "_keep", "warm state kept"),
    (relax_method, "greedy_round", "greedy rounding"),
    (simulator, "_execute_round", "simulator: execute the round"),
    (simulator, "_between_rounds", "simulator: starts between rounds"),
)
"""``(owner, attribute, label)`` of every timed part: a function of a module or a method of a class."""


class PricingRun(NamedTuple):
    """One HiGHS run of a round solved by pricing."""

    pricing_pass: int   # 1: the first restricted LP of its round
    iterations: int     # HiGHS's simplex iterations in the run
    columns: int        # of the restricted LP solved
    rows: int
    seconds: float      # HiGHS's own time


@contextlib.contextmanager
def pricing_runs(timed: dict[str, float]) -> Iterator[list[PricingRun]]:
    """HiGHS's pricing runs inside :func:`timed_parts`'s window, one :class:`PricingRun` each.

    ``timed`` is the dict that :func:`timed_parts` yields; the window opens when it gets a ``"start"``.
    """
    runs: list[PricingRun] = []
    original = highs_solver.IncrementalLP.run

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if "start" not in timed:
            return original(self, *args, **kwargs)
        before, cols, rows = self.iterations, self.highs.getNumCol(), self.highs.getNumRow()
        out = original(self, *args, **kwargs)
        runs.append(PricingRun(self.passes, self.iterations - before, cols, rows, out.seconds))
        return out

    highs_solver.IncrementalLP.run = run  # type: ignore[method-assign]
    try:
        yield runs
    finally:
        highs_solver.IncrementalLP.run = original  # type: ignore[method-assign]


def pass_table(runs: list[PricingRun], n_rounds: int, warm: bool = True) -> list[str]:
    """The report's lines on HiGHS's runs by pricing pass (``runs`` from :func:`pricing_runs`).

    Runs per round count over every round of the window (``n_rounds``), priced or not: the first pass's
    figure is the share of the window's rounds solved by pricing.
    """
    if not runs:
        why = ("rounds without --warm-start are solved as one LP" if not warm else
               f"every LP had fewer than {warm_method.PRICING_MIN_COLUMNS:,} columns")
        return [f"No round of the window was solved by pricing ({why})."]
    by_pass: dict[int, list[PricingRun]] = defaultdict(list)
    for r in runs:
        by_pass[min(r.pricing_pass, 4)].append(r)
    total = sum(r.seconds for r in runs)
    lines = [f"HiGHS's runs in pricing: {len(runs) / n_rounds:.2f} per round of the window, "
             f"{total / len(runs) * 1e3:.3f} ms each on average (HiGHS's own time).", "",
             "| pricing pass | runs per round | HiGHS ms per run | simplex iterations per run | restricted LP "
             "(columns x rows, mean) |", "|:---|---:|---:|---:|---:|"]
    for k in sorted(by_pass):
        rs = by_pass[k]
        m = len(rs)
        lines.append(f"| {k if k < 4 else '4 and later'} | {m / n_rounds:.2f} | "
                     f"{sum(r.seconds for r in rs) / m * 1e3:.3f} | {sum(r.iterations for r in rs) / m:.1f} | "
                     f"{sum(r.columns for r in rs) / m:,.0f} x {sum(r.rows for r in rs) / m:,.0f} |")
    return lines


@contextlib.contextmanager
def timed_parts(first: int) -> Iterator[dict[str, float]]:
    """Seconds per part from the ``first``-th round (1-based) on; ``"start"`` and ``"end"``: the window.

    A round starts when the simulator builds its problem (once per round) and the window ends when the last
    timed part returns (the last round's starts between rounds).
    """
    seconds: dict[str, float] = defaultdict(float)
    rounds = [0]
    saved = [(owner, attr, getattr(owner, attr)) for owner, attr, _ in PARTS]

    def timer(f: Callable[..., Any], label: str, counts_rounds: bool) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            if counts_rounds:
                rounds[0] += 1
                if rounds[0] == first:
                    seconds["start"] = t
            if rounds[0] < first:
                return f(*args, **kwargs)
            try:
                return f(*args, **kwargs)
            finally:
                seconds["end"] = time.perf_counter()
                seconds[label] += seconds["end"] - t
        return timed

    for (owner, attr, label), (_, _, original) in zip(PARTS, saved, strict=True):
        setattr(owner, attr, timer(original, label, counts_rounds=owner is ledger._Ledger))
    try:
        yield seconds
    finally:
        for owner, attr, original in saved:
            setattr(owner, attr, original)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    long_trace_arguments(ap)
    ap.add_argument("--first", type=int, default=12_000, help="first timed round (1-based)")
    ap.add_argument("--last", type=int, default=14_000, help="last round replayed")
    ap.add_argument("--cold", action="store_true", help="without --warm-start")
    ap.add_argument("--quick", action="store_true", help="2,000 jobs, rounds 100-150")
    ap.add_argument("--out", type=Path, default=Path("docs/results"))
    ap.add_argument("--name", default="round_parts", help="report file name in --out, without .md")
    args = ap.parse_args(argv)
    if args.quick:
        args.jobs, args.first, args.last = 2000, 100, 150
    if not 1 <= args.first <= args.last:
        ap.error(f"--first ({args.first}) must be between 1 and --last ({args.last})")
    trace = generate_trace(args.jobs, jobs_per_hour=args.jobs_per_hour, seed=args.seed)
    options = {"polish": False, "warm_start": not args.cold}
    with timed_parts(args.first) as seconds, pricing_runs(seconds) as runs:
        res = simulator.simulate(trace, args.cluster, "fairshare",
                                 policy_options=policy_settings("fairshare", {"options": options}, args.current),
                                 max_rounds=args.last, show_progress=False, **sim_settings(args.current))
    if "start" not in seconds:
        print(f"[round_parts] the run ended after {len(res.rounds)} rounds, before round {args.first}",
              file=sys.stderr)
        return 1
    n = len(res.rounds) - args.first + 1
    whole = seconds.pop("end") - seconds.pop("start")
    active = [r.active_jobs for r in res.rounds[args.first - 1:]]
    lines = [f"# Where a round's time goes: rounds {args.first:,}-{len(res.rounds):,} of {args.jobs:,} Gavel-recipe "
             f"jobs at {args.jobs_per_hour:g} jobs/h, seed {args.seed}, {args.cluster}", "",
             f"fairshare fast, `polish=False`, `warm_start={not args.cold}`; {min(active):,}-{max(active):,} active "
             f"jobs; {whole / n * 1e3:.2f} ms per round ({n:,} rounds, {whole:.1f} s). A part called inside "
             "another counts in both.", "", "| part | ms per round | share of the round |", "|:---|---:|---:|"]
    for _, _, label in PARTS:
        lines.append(f"| {label} | {seconds[label] / n * 1e3:.2f} | {seconds[label] / whole:.2f} |")
    lines += ["", *pass_table(runs, n, warm=not args.cold)]
    write_report(args.out, f"{args.name}.md", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
