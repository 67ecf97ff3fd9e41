"""Benchmark of a whole simulation: 1,000 Gavel-recipe jobs on 36 V100 + 36 P100 + 36 K80 with fairshare.

The issue's target: under 2 minutes on a 2-core machine with the ``fast`` mode. Reports wall time, rounds,
policy time per round (mean, p50, p99) and how it grows with the number of active jobs.

Usage::

    python benchmarks/bench_simulation.py                    # 1,000 jobs at 6 jobs/h, seed 0 (about 100 s)
    python benchmarks/bench_simulation.py --quick            # 100 jobs (seconds)
    python benchmarks/bench_simulation.py --jobs-per-hour 4 --policy gavel
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from fairshare.sim.simulator import simulate
from fairshare.sim.traces import generate_trace

if __package__:  # python -m benchmarks.bench_simulation
    from ._common import current_argument, policy_settings, sim_settings, write_report
else:  # python benchmarks/bench_simulation.py
    from _common import current_argument, policy_settings, sim_settings, write_report



def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--jobs-per-hour", type=float, default=6.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cluster", default="V100=36,P100=36,K80=36")
    ap.add_argument("--policy", default="fairshare")
    ap.add_argument("--mode", default="fast", help="fairshare policy mode")
    ap.add_argument("--quick", action="store_true", help="100 jobs")
    ap.add_argument("--out", type=Path, default=Path("docs/results"))
    current_argument(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.jobs = 100
    trace = generate_trace(args.jobs, jobs_per_hour=args.jobs_per_hour, seed=args.seed)
    opts = {"mode": args.mode} if args.policy == "fairshare" else {}
    t = time.perf_counter()
    res = simulate(trace, args.cluster, args.policy, policy_options=policy_settings(args.policy, opts, args.current),
                   **sim_settings(args.current))
    wall = time.perf_counter() - t
    st = np.array([r.solver_seconds for r in res.rounds])
    aj = np.array([r.active_jobs for r in res.rounds])
    m = res.metrics()
    lines = [(f"# Simulation benchmark: {args.jobs} jobs at {args.jobs_per_hour} jobs/h, seed {args.seed}, "
             f"{args.cluster}, policy {args.policy} ({args.mode if args.policy == 'fairshare' else 'default'})"),
             "",
             f"- wall time: {wall:.1f} s for {len(res.rounds)} rounds ({m.finished} of {m.jobs} jobs finished)",
             (f"- policy time per round: mean {st.mean() * 1e3:.1f} ms, p50 {np.median(st) * 1e3:.1f} ms, "
             f"p99 {np.percentile(st, 99) * 1e3:.1f} ms, max {st.max() * 1e3:.1f} ms"),
             f"- active jobs per round: mean {aj.mean():.0f}, max {aj.max()}",
             (f"- mean JCT {m.mean_jct / 3600:.2f} h, makespan {m.makespan / 3600:.1f} h, E/C {m.utilization:.3f}, "
             f"GPU busy {m.gpu_busy_fraction:.3f}"), "",
             "| active jobs | rounds | mean policy ms |", "|---|---:|---:|"]
    for lo in range(0, int(aj.max()) + 1, 100):
        sel = (aj >= lo) & (aj < lo + 100)
        if sel.any():
            lines.append(f"| {lo}-{lo + 99} | {int(sel.sum())} | {st[sel].mean() * 1e3:.1f} |")
    write_report(args.out, "bench_simulation.md", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
