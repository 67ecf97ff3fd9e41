"""Warm rounds on a long queue with and without a cap on the columns a pricing pass adds.

Replays the first ``--rounds`` rounds of the long trace of ``bench_long_trace.py`` (``fairshare trace --jobs
100000``: Gavel's recipe, 6 jobs/h, seed 0, on 36 V100 + 36 P100 + 36 K80) with the ``fairshare`` policy,
``--no-polish --warm-start``, once per value of :data:`fairshare.methods.warm.PRICING_BATCH` (``0``: no cap),
one after the other in this process, and reports the policy time per round by number of waiting jobs and
the simulation's outcome (jobs finished: warm rounds may round another optimal LP point where there are ties).

Usage::

    python benchmarks/pricing_batch.py                  # no cap and 200, 11,000 rounds each (about 3 minutes)
    python benchmarks/pricing_batch.py --batches 0 50 200 400
    python benchmarks/pricing_batch.py --quick          # 2,000 jobs, 300 rounds (seconds)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import fairshare.methods.warm as warm_method
from fairshare.sim.simulator import simulate
from fairshare.sim.traces import generate_trace

if __package__:  # python -m benchmarks.pricing_batch
    from ._common import long_trace_arguments, policy_settings, sim_settings, write_report
else:  # python benchmarks/pricing_batch.py
    from _common import long_trace_arguments, policy_settings, sim_settings, write_report

BANDS = ((0, 500), (500, 1000), (1000, 10**9))
"""Waiting-job bands of the report's policy-time columns."""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    long_trace_arguments(ap)
    ap.add_argument("--rounds", type=int, default=11_000)
    ap.add_argument("--batches", type=int, nargs="+", default=[0, 200], help="caps to compare (0: no cap)")
    ap.add_argument("--quick", action="store_true", help="2,000 jobs, 300 rounds")
    ap.add_argument("--out", type=Path, default=Path("docs/results"))
    args = ap.parse_args(argv)
    if args.quick:
        args.jobs, args.rounds = 2000, 300
    if any(b < 0 for b in args.batches):
        ap.error(f"--batches must be >= 0, got {args.batches}")
    trace = generate_trace(args.jobs, jobs_per_hour=args.jobs_per_hour, seed=args.seed)
    saved = warm_method.PRICING_BATCH
    rows = []
    try:
        for batch in args.batches:
            warm_method.PRICING_BATCH = batch or 2**62  # 0: no cap
            t = time.perf_counter()
            res = simulate(trace, args.cluster, "fairshare", max_rounds=args.rounds, show_progress=False,
                           policy_options=policy_settings(
                               "fairshare", {"options": {"polish": False, "warm_start": True}}, args.current),
                           **sim_settings(args.current))
            wall = time.perf_counter() - t
            policy = np.array([r.solver_seconds for r in res.rounds])
            active = np.array([r.active_jobs for r in res.rounds])
            cells = []
            for lo, hi in BANDS:
                sel = (active >= lo) & (active < hi)
                cells.append(f"{policy[sel].mean() * 1e3:.2f} ({int(sel.sum()):,})" if sel.any() else "-")
            rows.append(f"| {'no cap' if batch == 0 else batch} | {wall:.1f} | {policy.mean() * 1e3:.2f} | "
                        + " | ".join(cells) + f" | {int(active.max()):,} | {res.metrics().finished:,} |")
            print(f"[pricing_batch] {batch}: {wall:.1f} s", file=sys.stderr)
    finally:
        warm_method.PRICING_BATCH = saved
    head = " | ".join(f"policy ms at {lo:,}-{hi - 1:,} waiting" if hi < 10**9 else f"policy ms at {lo:,}+ waiting"
                      for lo, hi in BANDS)
    lines = [f"# Pricing passes capped or not: the first {args.rounds:,} rounds of {args.jobs:,} Gavel-recipe jobs at "
             f"{args.jobs_per_hour:g} jobs/h, seed {args.seed}, {args.cluster}", "",
             "fairshare fast, `polish=False`, `warm_start=True`; a pass adds at most max(cap, GPUs of the round) "
             "columns. One run per cap, one after the other in one process; rounds in parentheses.", "",
             f"| cap | wall s | policy ms per round | {head} | most waiting jobs | jobs finished |",
             "|---:|---:|---:|" + "---:|" * len(BANDS) + "---:|---:|", *rows]
    write_report(args.out, "pricing_batch.md", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
