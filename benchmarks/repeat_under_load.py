"""Does a simulation repeat exactly when the machine is busy? The same run, alone and with others at once.

Runs one setting of the main comparison (by default its loaded setting: 300 Gavel-recipe jobs at 4 jobs/h on
36 V100 + 36 P100 + 36 K80, the ``fairshare`` policy with equal priorities, seed 2) as separate processes:
``--alone`` times one after the other, then ``--together`` at once (on a 2-core machine, four at once keep
both cores busy), once with HiGHS's default thread pool and once with one HiGHS thread
(``options={"threads": 1}``). It prints the mean JCT, unfair jobs and max rho of every run, and writes
``repeat_under_load.md``.

Usage::

    python benchmarks/repeat_under_load.py                 # about 8 minutes on 2 cores
    python benchmarks/repeat_under_load.py --quick         # 40 jobs, about 30 s
    python benchmarks/repeat_under_load.py --threads 1     # only the one-thread runs
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fairshare.sim.metrics import compute_metrics
from fairshare.sim.sweep import RunSpec, run_spec

if __package__:  # python -m benchmarks.repeat_under_load
    from ._common import current_argument, policy_settings, sim_settings, write_report
else:  # python benchmarks/repeat_under_load.py
    from _common import current_argument, policy_settings, sim_settings, write_report


#: the thread settings compared: label -> the fairshare policy's solve options
THREADS: dict[str, dict[str, Any]] = {"HiGHS default pool": {}, "threads=1": {"threads": 1}}


def summary(res: Any) -> tuple[float, int, float, float]:
    """(mean JCT h, unfair jobs, max rho, wall s) of one simulation's result."""
    m = compute_metrics(res.jobs, res.rounds)
    return m.mean_jct / 3600.0, int(round(m.unfair_fraction * len(res.jobs))), m.max_rho, res.wall_seconds


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=300)
    ap.add_argument("--jobs-per-hour", type=float, default=4.0)
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--cluster", default="V100=36,P100=36,K80=36")
    ap.add_argument("--alone", type=int, default=2, help="runs one after the other (default 2)")
    ap.add_argument("--together", type=int, default=4, help="runs at once (default 4)")
    ap.add_argument("--quick", action="store_true", help="40 jobs, 2 runs at once")
    ap.add_argument("--threads", choices=("all", "default", "1"), default="all",
                    help="which thread settings to run (default all)")
    ap.add_argument("--out", type=Path, default=Path("docs/results"))
    current_argument(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.jobs, args.together = 40, 2
    trace = {"num_jobs": args.jobs, "jobs_per_hour": args.jobs_per_hour, "seed": args.seed}
    sim = {**sim_settings(args.current), "round_length": 360.0, "max_rounds": None}
    ctx = multiprocessing.get_context("spawn")  # fresh processes: nothing of this one's HiGHS state
    rows: list[tuple[str, str, tuple[float, int, float, float]]] = []
    chosen = {k: v for k, v in THREADS.items()
              if args.threads == "all" or (args.threads == "1") == ("threads" in v)}
    for label, options in chosen.items():
        spec = RunSpec("fairshare", args.cluster, trace,
                       policy_settings("fairshare", {"mode": "fast", "priority": "none", "options": options},
                                       args.current), sim, f"repeat/{label}")
        for _ in range(args.alone):
            with ctx.Pool(1, maxtasksperchild=1) as pool:
                rows.append((label, "alone", summary(pool.map(run_spec, [spec])[0])))
            print(f"[repeat_under_load] {label}, alone: {rows[-1][2][0]:.6f} h", file=sys.stderr, flush=True)
        with ctx.Pool(args.together, maxtasksperchild=1) as pool:
            for res in pool.map(run_spec, [spec] * args.together):
                rows.append((label, f"{args.together} at once", summary(res)))
        print(f"[repeat_under_load] {label}, {args.together} at once: "
              + ", ".join(f"{r[2][0]:.6f}" for r in rows[-args.together:]), file=sys.stderr, flush=True)
    lines = [f"# The same simulation alone and {args.together} at once", "",
             f"{args.jobs} Gavel-recipe jobs at {args.jobs_per_hour:g} jobs/h, seed {args.seed}, {args.cluster}; "
             "policy fairshare (fast, priority none); each run a fresh process.", "",
             "| HiGHS threads | how run | mean JCT (h) | unfair jobs (rho > 1.05) | max rho | wall s |",
             "|---|---|---:|---:|---:|---:|"]
    lines += [f"| {label} | {how} | {r[0]:.6f} | {r[1]} | {r[2]:.4f} | {r[3]:.0f} |" for label, how, r in rows]
    for label in chosen:
        values = {f"{r[0]:.9f}" for lab, _how, r in rows if lab == label}
        lines.append("")
        lines.append(f"{label}: {len(values)} distinct mean JCT{'s' if len(values) > 1 else ''} in "
                     f"{sum(1 for lab, _h, _r in rows if lab == label)} runs.")
    write_report(args.out, "repeat_under_load.md", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
