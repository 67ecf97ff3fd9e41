"""Main comparison: every policy on continuous Gavel-recipe traces, several loads, 3 seeds, two clusters.

Setup
    Traces from :func:`fairshare.sim.traces.generate_trace` (Gavel's recipe: Poisson arrivals at ``load`` jobs/hour,
    Gavel's duration distribution, scales 1/2/4/8 with 70/10/15/5 %, models uniform over Gavel's 26 workloads,
    work computed on the fastest of K80/P100/V100), seeds 0, 1, 2. Round length 360 s (the simulator's
    default), co-location candidates capped at 4 per job. By default the settings of release 0.2, with which
    the published tables were made: jobs start at round boundaries and on idle GPUs between them, no restart
    overhead, fairshare without shortfall prices. ``--current`` runs today's defaults instead (fairshare plans
    again at events with finish-time shortfall prices) with a restart overhead of 30 s.

    * Cluster ``het108`` = 36 V100 + 36 P100 + 36 K80, with the measured catalog, at every load.
    * Cluster ``het108+h200`` = the same plus 8 H200, at the highest load only, on the *same* traces, with the
      catalog's opt-in derived model ``load_catalog(derive=["gavel-on-h200")``: the H200 throughputs of
      Gavel's workloads are **derived** (nearest measured H200 workload x ratio, see ``docs/catalog.md``),
      not measured. Transformer, LM, Recommendation and A3C have no H200 data and never run there.

Policies
    fairshare (fast, its default ``remaining`` priority rule), fairshare with every ``pi_j = 1``
    (``fairshare-none``, the default before the priority measurement), gavel, gavel
    with space sharing (``gavel-ss``), las (Gavel's agnostic max-min), las-tiresias, ftf, gandiva-fair,
    max-throughput, fifo; fairshare (exact) only with ``--exact`` (its per-round MILP is too slow for the full grid on 2
    cores; see ``docs/results-comparison.md``).

Outputs (under ``--out``, default ``docs/results/``)
    ``main_comparison.md`` / ``.csv`` (one row per cluster x load x policy: mean over seeds with [min–max]),
    ``main_comparison_runs.csv`` (one row per simulation, to pair policies seed by seed),
    ``main_comparison_jct_cdf.png`` (JCT CDF per policy at the highest load, jobs of all seeds pooled),
    ``main_comparison_jct_vs_load.png`` (mean JCT vs load per policy, min–max band over seeds) and
    ``main_comparison_h200_jct_cdf.png``.

Sizes
    ``--quick``: 10 jobs, load 6 jobs/h, seed 0, 1800-s rounds, at most 30 rounds (smoke test only: long
    jobs stay unfinished; ~10-20 s).
    Full (default): 300 jobs per trace, loads 1, 2, 4 jobs/h, seeds 0-2: 8 policies x 3 loads x 3 seeds on
    ``het108`` plus 8 x 3 seeds on ``het108+h200`` = 96 simulations: 795 s on 2 workers (measured, quiet
    2-core machine; ``docs/results-comparison.md``).

Run::

    python examples/main_comparison.py --workers 2            # full size
    python examples/main_comparison.py --quick --out /tmp/q   # smoke test
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from fairshare.sim.catalog import load_catalog
from fairshare.sim.metrics import compute_metrics
from fairshare.sim.plots import plot_jct_cdf
from fairshare.sim.records import JobRecord
from fairshare.sim.sweep import RunSpec, run_sweep

if __package__:  # python -m examples.main_comparison
    from ._common import (
        RELEASE_02_FAIRSHARE,
        RELEASE_02_SIM,
        Column,
        aggregate,
        log,
        plot_vs_load,
        resolve_size,
        size_arguments,
        write_run_csv,
        write_tables,
    )
else:  # python examples/main_comparison.py
    from _common import (
        RELEASE_02_FAIRSHARE,
        RELEASE_02_SIM,
        Column,
        aggregate,
        log,
        plot_vs_load,
        resolve_size,
        size_arguments,
        write_run_csv,
        write_tables,
    )

BASE_CLUSTER = "V100=36,P100=36,K80=36"
H200_CLUSTER = "V100=36,P100=36,K80=36,H200=8"

#: (label, registered policy, constructor options)
POLICIES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("fairshare", "fairshare", {"mode": "fast"}),
    ("fairshare-none", "fairshare", {"mode": "fast", "priority": "none", "shortfall_price": "none"}),
    ("gavel", "gavel", {}),
    ("gavel-ss", "gavel-ss", {}),
    ("las", "las", {}),
    ("las-tiresias", "las-tiresias", {}),
    ("ftf", "ftf", {}),
    ("gandiva-fair", "gandiva-fair", {}),
    ("max-throughput", "max-throughput", {}),
    ("fifo", "fifo", {}),
)
EXACT = ("fairshare-exact", "fairshare", {"mode": "exact"})

FULL = {"num_jobs": 300, "loads": (1.0, 2.0, 4.0), "seeds": (0, 1, 2), "round_length": 360.0, "max_rounds": None}
#: smoke test: 30-minute rounds and at most 30 of them (15 h), so long jobs may stay unfinished
QUICK = {"num_jobs": 10, "loads": (6.0,), "seeds": (0,), "round_length": 1800.0, "max_rounds": 30}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    size_arguments(ap, FULL, QUICK)
    ap.add_argument("--exact", action="store_true", help="also run fairshare mode='exact' (slow)")
    ap.add_argument("--no-h200", action="store_true", help="skip the cluster with H200s")
    ap.add_argument("--current", action="store_true",
                    help="today's defaults and a 30 s restart overhead instead of release 0.2's settings")
    return resolve_size(ap.parse_args(argv), FULL, QUICK)


def build_specs(args: argparse.Namespace) -> list[tuple[str, float, str, int, RunSpec]]:
    """(cluster label, load, policy label, seed, spec) of every simulation."""
    policies = list(POLICIES) + ([EXACT] if args.exact else [])
    runs = []
    base = {"round_length": args.round_length, "max_rounds": args.max_rounds,
            **({"restart_overhead": 30.0} if args.current else RELEASE_02_SIM)}
    clusters: list[tuple[str, str, tuple[float, ...], dict[str, Any]]] = [("het108", BASE_CLUSTER, args.loads, base)]
    if not args.no_h200:
        h200 = load_catalog(derive=["gavel-on-h200"])
        clusters.append(("het108+h200", H200_CLUSTER, args.loads[-1:], {**base, "catalog": h200}))
    for cname, cluster, loads, sim in clusters:
        for load in loads:
            for label, pol, given in policies:
                opts = given if args.current or pol != "fairshare" else {**RELEASE_02_FAIRSHARE, **given}
                for seed in args.seeds:
                    trace = {"num_jobs": args.num_jobs, "jobs_per_hour": load, "seed": seed}
                    runs.append((cname, load, label, seed, RunSpec(pol, cluster, trace, dict(opts), dict(sim),
                                                                   f"{cname}/{label}/{load:g}jph/s{seed}")))
    return runs


def _pooled(jobs_by_seed: dict[int, Sequence[JobRecord]]) -> list[JobRecord]:
    """Jobs of several seeds in one list, ids made unique by a seed prefix."""
    return [dataclasses.replace(j, id=f"s{seed}:{j.id}") for seed, jobs in jobs_by_seed.items() for j in jobs]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    runs = build_specs(args)
    log(f"main_comparison: {len(runs)} simulations, {args.num_jobs} jobs/trace, loads {list(args.loads)} jobs/h, "
        f"seeds {list(args.seeds)}, rounds {args.round_length:g} s (max {args.max_rounds}), {args.workers} workers")
    t0 = time.perf_counter()
    results = run_sweep([r[-1] for r in runs], max_workers=args.workers, show_progress=True)
    wall = time.perf_counter() - t0
    log(f"sweep done in {wall:.0f} s")

    groups: dict[tuple[str, float, str], dict[int, Any]] = defaultdict(dict)
    for (cname, load, label, seed, _), res in zip(runs, results, strict=True):
        groups[(cname, load, label)][seed] = res
    rows = []
    for (cname, load, label), by_seed in groups.items():
        ms = [compute_metrics(r.jobs, r.rounds) for r in by_seed.values()]
        rows.append({"cluster": cname, "load (jobs/h)": f"{load:g}", "policy": label, "agg": aggregate(ms),
                     "unfinished": sum(m.unfinished for m in ms),
                     "sim_s": sum(r.wall_seconds for r in by_seed.values()) / len(by_seed)})
    extra = (Column("unfinished_jobs", "unfinished", lambda r: r["unfinished"]),
             Column("sim_wall_s", "sim wall (s)", lambda r: r["sim_s"], ".1f"))
    md_path, csv_path, _ = write_tables(rows, ("cluster", "load (jobs/h)", "policy"), args.out, "main_comparison",
                                        extra=extra)
    per_run = [({"cluster": cname, "load_jobs_per_hour": f"{load:g}", "policy": label, "seed": seed},
                compute_metrics(res.jobs, res.rounds), res.wall_seconds)
               for (cname, load, label, seed, _), res in zip(runs, results, strict=True)]
    runs_path = write_run_csv(args.out / "main_comparison_runs.csv", per_run)
    log(f"wrote {md_path}, {csv_path} and {runs_path}")

    top = args.loads[-1]
    labels = list(dict.fromkeys(r[2] for r in runs))
    cdf = {label: _pooled({s: res.jobs for s, res in groups[("het108", top, label)].items()}) for label in labels}
    p = plot_jct_cdf(cdf, args.out / "main_comparison_jct_cdf.png")
    log(f"wrote {p}")
    if ("het108+h200", top, labels[0]) in groups:
        cdf = {label: _pooled({s: res.jobs for s, res in groups[("het108+h200", top, label)].items()})
               for label in labels}
        p = plot_jct_cdf(cdf, args.out / "main_comparison_h200_jct_cdf.png")
        log(f"wrote {p}")
    by_policy = {label: (list(args.loads),
                         [next(r["agg"]["mean_jct_h"] for r in rows
                               if r["cluster"] == "het108" and r["policy"] == label
                               and r["load (jobs/h)"] == f"{load:g}") for load in args.loads])
                 for label in labels}
    p = plot_vs_load(by_policy, args.out / "main_comparison_jct_vs_load.png", ylabel="mean JCT (h)",
                     title=f"36 V100 + 36 P100 + 36 K80, {args.num_jobs} jobs/trace, "
                           f"{len(args.seeds)} seed(s): mean [min-max]", logy=True)
    log(f"wrote {p}")
    log(f"total {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
