"""What a simulation loses without fast's polish: fairshare with and without it on the main comparison's setting.

The main comparison's loaded setting (``examples/main_comparison.py``): 300 Gavel-recipe jobs at 4 jobs/h,
360 s rounds, seeds 0, 1 and 2, on 36 V100 + 36 P100 + 36 K80 and on the same plus 8 H200. The ``fairshare``
policy runs with its defaults and with ``options={"polish": False}`` (CLI ``--no-polish``) on the same traces.
Reports mean JCT, unfair fraction, max rho, E/C and policy time per round, per seed and as means, and the
no-polish / default ratios of JCT and policy time.

Usage::

    python benchmarks/no_polish_quality.py                # 12 simulations, about 10 minutes on 2 workers
    python benchmarks/no_polish_quality.py --quick        # 30 jobs, seed 0, 100 rounds (seconds)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from fairshare.sim.catalog import load_catalog
from fairshare.sim.sweep import RunSpec, run_sweep

if __package__:  # python -m benchmarks.no_polish_quality
    from ._common import current_argument, policy_settings, sim_settings, write_report
else:  # python benchmarks/no_polish_quality.py
    from _common import current_argument, policy_settings, sim_settings, write_report


CLUSTERS = {"het108": "V100=36,P100=36,K80=36", "het108+h200": "V100=36,P100=36,K80=36,H200=8"}
VARIANTS = {"default": {}, "no-polish": {"options": {"polish": False}}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--num-jobs", type=int, default=300)
    ap.add_argument("--jobs-per-hour", type=float, default=4.0)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--max-rounds", type=int, default=None)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="30 jobs, seed 0, at most 100 rounds")
    ap.add_argument("--out", type=Path, default=Path("docs/results"))
    current_argument(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.num_jobs, args.seeds, args.max_rounds = 30, [0], 100
    h200 = load_catalog(derive=["gavel-on-h200"])
    keys, specs = [], []
    for cname, cluster in CLUSTERS.items():
        for variant, opts in VARIANTS.items():
            for seed in args.seeds:
                sim = {**sim_settings(args.current), "max_rounds": args.max_rounds,
                       **({"catalog": h200} if "H200" in cluster else {})}
                trace = {"num_jobs": args.num_jobs, "jobs_per_hour": args.jobs_per_hour, "seed": seed}
                keys.append((cname, variant, seed))
                specs.append(RunSpec("fairshare", cluster, trace,
                                     policy_settings("fairshare", {"mode": "fast", **opts}, args.current), sim,
                                     f"{cname}/{variant}/s{seed}"))
    results = run_sweep(specs, max_workers=args.workers)
    rows = {}
    for key, res in zip(keys, results):
        m = res.metrics()
        policy_ms = 1e3 * float(np.mean([r.solver_seconds for r in res.rounds]))
        rows[key] = (m.mean_jct / 3600, m.unfair_fraction, m.max_rho, m.utilization, policy_ms, res.wall_seconds)
    lines = [f"# fairshare with and without fast's polish: {args.num_jobs} Gavel-recipe jobs at "
             f"{args.jobs_per_hour:g} jobs/h, seeds {', '.join(map(str, args.seeds))}", "",
             "| cluster | variant | mean JCT (h) | unfair (rho>1.05) | max rho | E/C | policy ms per round | "
             "wall (s) |",
             "|:---|:---|---:|---:|---:|---:|---:|---:|"]
    for cname in CLUSTERS:
        for variant in VARIANTS:
            vals = np.array([rows[(cname, variant, s)] for s in args.seeds])
            mean = vals.mean(axis=0)
            lines.append(f"| {cname} | {variant} | {mean[0]:.2f} | {mean[1]:.3f} | {mean[2]:.2f} | "
                         f"{mean[3]:.3f} | {mean[4]:.1f} | {vals[:, 5].sum():.0f} |")
    lines += ["", "No-polish against default, seed by seed (same trace):", "",
              "| cluster | seed | mean JCT ratio | policy time ratio | unfair default / no-polish | "
              "max rho default / no-polish |", "|:---|---:|---:|---:|---:|---:|"]
    for cname in CLUSTERS:
        for s in args.seeds:
            d, n = rows[(cname, "default", s)], rows[(cname, "no-polish", s)]
            lines.append(f"| {cname} | {s} | {n[0] / d[0]:.4f} | {n[4] / d[4]:.3f} | {d[1]:.3f} / {n[1]:.3f} | "
                         f"{d[2]:.2f} / {n[2]:.2f} |")
    write_report(args.out, "no_polish_quality.md", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
