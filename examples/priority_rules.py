r"""Priority rules for the ``fairshare`` policy, measured on the main comparison's setting.

Each rule of :mod:`fairshare.priority` (``none``, ``remaining`` and ``finish-time`` with several exponents) runs
as the ``fairshare`` policy (mode ``fast``) on the main comparison's traces (300 Gavel-recipe jobs per trace,
seeds 0-2): loads 2 and 4 jobs/h on 36 V100 + 36 P100 + 36 K80, and 4 jobs/h with 8 H200 added (derived
H200 throughputs, as in ``main_comparison.py``), at ``epsilon`` 0 and 0.5. Reported per rule, setting and
epsilon (mean over seeds): mean JCT, unfair fraction (rho > 1.05), max rho, and the policy time per round.
The winner is the default of the ``fairshare`` policy and the Engine (docs/results-priority.md).

Usage::

    python examples/priority_rules.py                 # full: 8 rules x 3 settings x 2 epsilons x 3 seeds
    python examples/priority_rules.py --quick         # smoke test: 2 rules, 20 jobs, one seed
    python examples/priority_rules.py --rules none "remaining p=1" --epsilons 0 0.25 0.5 --loads 4 \
        --name priority_rules_eps                     # two rules along epsilon, for the trade-off figure
"""

from __future__ import annotations

import argparse
import csv
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fairshare.sim.catalog import load_catalog
from fairshare.sim.metrics import compute_metrics
from fairshare.sim.sweep import RunSpec, run_sweep

if __package__:  # python -m examples.priority_rules
    from ._common import current_argument, policy_settings, sim_settings
else:  # python examples/priority_rules.py
    from _common import current_argument, policy_settings, sim_settings

BASE_CLUSTER = "V100=36,P100=36,K80=36"
H200_CLUSTER = "V100=36,P100=36,K80=36,H200=8"

#: (label, policy options)
RULES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("none", {"priority": "none"}),
    ("remaining p=0.5", {"priority": "remaining", "priority_exponent": 0.5}),
    ("remaining p=1", {"priority": "remaining", "priority_exponent": 1.0}),
    ("remaining p=2", {"priority": "remaining", "priority_exponent": 2.0}),
    ("remaining p=1 clip 0.01-100", {"priority": "remaining", "priority_clip": [0.01, 100.0]}),
    ("finish-time p=1", {"priority": "finish-time", "priority_exponent": 1.0}),
    ("finish-time p=2", {"priority": "finish-time", "priority_exponent": 2.0}),
    ("finish-time p=4", {"priority": "finish-time", "priority_exponent": 4.0}),
)
FIELDS = ("mean_jct_h", "unfair_fraction", "max_rho", "jain", "utilization", "mean_solver_ms")


def _row(m: Any) -> dict[str, float]:
    """The reported numbers of one run's :class:`~fairshare.sim.metrics.RunMetrics`."""
    return {"mean_jct_h": m.mean_jct / 3600.0, "unfair_fraction": m.unfair_fraction, "max_rho": m.max_rho,
            "jain": m.jain, "utilization": m.utilization, "mean_solver_ms": 1000.0 * m.mean_solver_seconds}


def build(args: argparse.Namespace) -> list[tuple[tuple[str, str, float, float], int, RunSpec]]:
    h200 = load_catalog(derive=["gavel-on-h200"])
    settings = [("het108", BASE_CLUSTER, load, {}) for load in args.loads]
    if not args.no_h200:
        settings.append(("het108+h200", H200_CLUSTER, max(args.loads), {"catalog": h200}))
    rules = [r for r in RULES if args.rules is None or r[0] in args.rules]
    runs = []
    for cname, cluster, load, extra in settings:
        for eps in args.epsilons:
            for label, opts in rules:
                for seed in args.seeds:
                    trace = {"num_jobs": args.num_jobs, "jobs_per_hour": load, "seed": seed}
                    sim = {**sim_settings(args.current), "round_length": 360.0, "epsilon": eps,
                           "max_rounds": args.max_rounds, **extra}
                    popt = policy_settings("fairshare", {"mode": "fast", **opts}, args.current)
                    runs.append(((cname, label, load, eps), seed,
                                 RunSpec("fairshare", cluster, trace, popt, sim,
                                         f"{cname}/{label}/{load:g}jph/eps{eps:g}/s{seed}")))
    return runs


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/results"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rules", nargs="+", default=None, help="labels of the rules to run (default: all)")
    ap.add_argument("--epsilons", nargs="+", type=float, default=[0.0, 0.5])
    ap.add_argument("--loads", nargs="+", type=float, default=[2.0, 4.0],
                    help="loads of het108 in jobs/h (het108+h200 runs at the highest)")
    ap.add_argument("--name", default="priority_rules", help="stem of the output files (default priority_rules)")
    current_argument(ap)
    args = ap.parse_args(argv)
    args.num_jobs, args.seeds, args.max_rounds = 300, [0, 1, 2], None
    args.no_h200 = False
    if args.quick:
        args.num_jobs, args.loads, args.seeds, args.max_rounds, args.no_h200 = 20, [6.0], [0], 40, True
        args.rules = args.rules or ["none", "remaining p=1"]
        args.epsilons = [0.0]
    args.out.mkdir(parents=True, exist_ok=True)
    runs = build(args)
    print(f"[priority_rules] {len(runs)} simulations on {args.workers} workers", flush=True)
    t0 = time.perf_counter()
    results = run_sweep([r[-1] for r in runs], max_workers=args.workers, show_progress=True)
    by_key: dict[tuple[str, str, float, float], list[dict[str, float]]] = defaultdict(list)
    for (key, _seed, _spec), res in zip(runs, results):
        by_key[key].append(_row(compute_metrics(res.jobs, res.rounds)))
    rows = []
    for (cname, label, load, eps), ms in by_key.items():
        rows.append({"cluster": cname, "load": load, "epsilon": eps, "rule": label,
                     **{f: float(np.mean([m[f] for m in ms])) for f in FIELDS}})
    path = args.out / f"{args.name}.csv"
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    lines = ["| cluster | load | epsilon | rule | mean JCT (h) | unfair (rho>1.05) | max rho | Jain | E/C | "
             "policy ms/round |", "|:---|---:|---:|:---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['cluster']} | {r['load']:g} | {r['epsilon']:g} | {r['rule']} | {r['mean_jct_h']:.2f} | "
                     f"{100 * r['unfair_fraction']:.1f} % | {r['max_rho']:.2f} | {r['jain']:.3f} | "
                     f"{r['utilization']:.3f} | {r['mean_solver_ms']:.1f} |")
    (args.out / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"[priority_rules] wrote {path} and {args.name}.md in {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
