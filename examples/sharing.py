r"""A cluster that shares GPUs by request: fairshare against its peers, and what sharing and binding buy or cost.

The cluster is modern and mixed, given as nodes of 8 GPUs (default two nodes each of T4, A10, A100-80GB and H100,
64 GPUs; ``--nodes``). Its throughputs are the ``modern`` catalog's, which are **derived** on every one of these
types (rule ``modern-v1``, docs/catalog.md): no figure the runs use is measured.

**Trace** (the rule, per seed): ``generate_trace(num_jobs, jobs_per_hour, seed, catalog=modern,
gpu_types=<the cluster's types>)`` (Gavel's recipe: gangs 1/2/4/8 with probability 70/10/15/5 %), then
``round(share_fraction * num_jobs)`` of its 1-GPU jobs, drawn without replacement by
``numpy.random.default_rng(SHARE_SEED_OFFSET + seed)``, ask for part of one GPU: 1/2 or 1/4 with equal
probability (drawn by the same generator). A job that asks for a share ``s`` keeps its drawn duration *on its
share*: its iterations are ``max(1, round(s * iterations))``, so that alone on the fastest type, at the
simulator's derived rule for shares (``s`` times the one-GPU throughput), it takes as long as the recipe drew.

**Variants.** Every policy of :func:`fairshare.policies.policy_names` runs that trace on the nodes (binding on:
each round's placements are bound to nodes and GPUs, sticky; a job whose GPUs change is a migration). Besides:

- ``rounded up``: the same trace with every share rounded up to one whole GPU, what a cluster without sharing
  does. The job's iterations are the generator's (its scale-1 work), so alone on its fastest type it still takes
  the drawn duration: every job's ideal duration is the same in both traces, only the capacity it holds differs
  (``gpus`` keeps the request). Run for ``fairshare`` and, as a check that the effect is not fairshare's own,
  for ``gavel`` and ``fifo``.
- ``no binding``: ``fairshare`` on the sharing trace with the cluster given as GPU counts per type (no nodes: no
  migrations or split gangs are counted, and only changes of type or partner pay the restart overhead).

Every run: rounds of 360 s, a restart overhead of ``--restart-overhead`` s (default 30) whenever a job's
placement (type, partner or, with nodes, GPUs) changes, the policies' default options.

Reported per row (mean over seeds, with min-max): mean and p99 JCT, the mean JCT and the mean slowdown (JCT over
the job's ideal duration, alone on its fastest type) of the part-of-a-GPU jobs and of the whole-GPU jobs (the
same job ids in every variant), unfair fraction (rho > 1.05), max rho, GPU busy
fraction, E/C, migrations, split gangs, policy ms per round, unfinished jobs. Outputs in ``--out``:
``sharing.md``, ``sharing.csv`` (one row per policy/variant), ``sharing_runs.csv`` (one per run),
``sharing.png`` (mean JCT and unfair fraction) and ``sharing_groups.png`` (slowdown of part-GPU and whole-GPU
jobs).

Usage::

    python examples/sharing.py                # full: 160 jobs at 8 jobs/h, seeds 0 1, 13 runs per seed (~1,000 s)
    python examples/sharing.py --quick        # smoke test: 12 jobs, one seed, 40 rounds, 4 nodes
"""

from __future__ import annotations

import argparse
import csv
import math
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fairshare.cluster import Cluster
from fairshare.policies import policy_names
from fairshare.sim.catalog import load_catalog
from fairshare.sim.metrics import RunMetrics, compute_metrics
from fairshare.sim.records import JobRecord
from fairshare.sim.result import SimulationResult
from fairshare.sim.sweep import RunSpec, run_spec, run_sweep
from fairshare.sim.traces import Trace, generate_trace, write_trace

if __package__:  # python -m examples.sharing
    from ._common import Agg, current_argument, log, policy_settings, sim_settings
else:  # python examples/sharing.py
    from _common import Agg, current_argument, log, policy_settings, sim_settings

#: seed offset of the generator that picks the part-of-a-GPU jobs and their shares (independent of the trace's)
SHARE_SEED_OFFSET = 1000
SHARES = (0.5, 0.25)
CATALOG = "modern"
FULL: dict[str, Any] = {"num_jobs": 160, "jobs_per_hour": 8.0, "seeds": (0, 1), "max_rounds": None,
        "nodes": "2xT4:8,2xA10:8,2xA100-80GB:8,2xH100:8"}
QUICK: dict[str, Any] = {"num_jobs": 12, "jobs_per_hour": 12.0, "seeds": (0,), "max_rounds": 40,
         "nodes": "1xT4:8,1xA10:8,1xA100-80GB:8,1xH100:8"}
#: policies that also run the rounded-up trace
ROUNDED_POLICIES = ("fairshare", "gavel", "fifo")


@dataclass(frozen=True)
class Variant:
    """One row of the table: a policy on a trace (``shares`` or ``rounded``) and a cluster (``nodes``/``counts``)."""

    label: str
    policy: str
    trace: str
    cluster: str


def variants(policies: Sequence[str]) -> list[Variant]:
    """Every policy on the sharing trace with nodes, then the rounded-up and no-binding variants."""
    rows = [Variant(p, p, "shares", "nodes") for p in policies]
    rows += [Variant(f"{p}, rounded up", p, "rounded", "nodes") for p in ROUNDED_POLICIES if p in policies]
    if "fairshare" in policies:
        rows.append(Variant("fairshare, no binding", "fairshare", "shares", "counts"))
    return rows


def sharing_trace(num_jobs: int, jobs_per_hour: float, seed: int, gpu_types: Sequence[str],
                  share_fraction: float) -> tuple[Trace, Trace]:
    """The trace with part-of-a-GPU requests and the same trace rounded up to whole GPUs (the rule above)."""
    cat = load_catalog(CATALOG)
    base = generate_trace(num_jobs, jobs_per_hour=jobs_per_hour, seed=seed, catalog=cat, gpu_types=gpu_types)
    rng = np.random.default_rng(SHARE_SEED_OFFSET + seed)
    ones = np.flatnonzero(base.scale == 1)
    k = min(len(ones), int(round(share_fraction * len(base))))
    pick = np.sort(rng.choice(ones, size=k, replace=False))
    share = np.asarray(SHARES, dtype=np.float64)[rng.integers(0, len(SHARES), size=k)]
    scale = base.scale.astype(np.float64)
    scale[pick] = share
    iterations = base.iterations.copy()
    iterations[pick] = np.maximum(1.0, np.rint(share * iterations[pick]))
    shared = Trace(id=base.id, arrival=base.arrival, model=base.model, scale=scale, iterations=iterations,
                   weight=base.weight, tenant=base.tenant)
    rounded = Trace(id=base.id, arrival=base.arrival, model=base.model, scale=base.scale, iterations=base.iterations,
                    weight=base.weight, tenant=base.tenant, gpus=scale)
    return shared, rounded


def counts_spec(nodes: str) -> str:
    """The same cluster as GPU counts per type (``"T4=16,..."``): no nodes, no binding."""
    gpus = Cluster.parse(nodes).by_type()
    return ",".join(f"{g}={n}" for g, n in gpus.items())


#: reported fields: name -> (markdown header, format)
FIELDS: dict[str, tuple[str, str]] = {
    "mean_jct_h": ("mean JCT (h)", ".2f"),
    "p99_jct_h": ("p99 JCT (h)", ".1f"),
    "part_jct_h": ("JCT part-GPU jobs (h)", ".2f"),
    "whole_jct_h": ("JCT whole-GPU jobs (h)", ".2f"),
    "unfair_fraction": ("unfair (rho>1.05)", ".3f"),
    "part_slowdown": ("slowdown part-GPU jobs", ".2f"),
    "whole_slowdown": ("slowdown whole-GPU jobs", ".2f"),
    "part_unfair_fraction": ("unfair, part-GPU jobs", ".3f"),
    "max_rho": ("max rho", ".2f"),
    "gpu_busy_fraction": ("GPU busy", ".3f"),
    "utilization": ("E/C", ".3f"),
    "migrations": ("migrations", ".0f"),
    "split_gangs": ("split gangs", ".0f"),
    "policy_ms": ("policy ms/round", ".1f"),
    "unfinished": ("unfinished", ".0f"),
}


def mean_slowdown(jobs: Sequence[JobRecord]) -> float:
    """Mean of ``JCT / ideal_seconds`` over the finished jobs (``ideal``: alone on the fastest type; nan if none)."""
    x = [(j.finish - j.arrival) / j.ideal_seconds for j in jobs
         if math.isfinite(j.finish) and j.ideal_seconds > 0 and not j.censored]
    return float(np.mean(x)) if x else math.nan


def run_row(res: SimulationResult, part_ids: frozenset[str]) -> dict[str, float]:
    """The reported numbers of one run; the groups are the jobs that ask for part of a GPU in the sharing trace."""
    part_jobs = [j for j in res.jobs if j.id in part_ids]
    whole_jobs = [j for j in res.jobs if j.id not in part_ids]
    m: RunMetrics = compute_metrics(res.jobs, res.rounds)
    part = compute_metrics(part_jobs, res.rounds)
    whole = compute_metrics(whole_jobs, res.rounds)
    return {"mean_jct_h": m.mean_jct / 3600.0, "p99_jct_h": m.p99_jct / 3600.0,
            "part_jct_h": part.mean_jct / 3600.0, "whole_jct_h": whole.mean_jct / 3600.0,
            "part_slowdown": mean_slowdown(part_jobs), "whole_slowdown": mean_slowdown(whole_jobs),
            "unfair_fraction": m.unfair_fraction, "part_unfair_fraction": part.unfair_fraction,
            "max_rho": m.max_rho, "gpu_busy_fraction": m.gpu_busy_fraction, "utilization": m.utilization,
            "migrations": float(m.migrations), "split_gangs": float(m.split_gangs),
            "policy_ms": 1000.0 * m.mean_solver_seconds, "unfinished": float(m.unfinished),
            "fractional_jobs": float(sum(1 for j in res.jobs if 0 < float(j.scale) < 1)),
            "jobs": float(m.jobs), "rounds": float(m.rounds)}


def _figure(rows: list[dict[str, Any]], path: Path) -> None:
    """Mean JCT and unfair fraction per row (bars: mean over seeds; whiskers: min-max)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 5.2), dpi=150, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, 1, sharex=True)
    x = np.arange(len(rows))
    colours = ["C0" if r["trace"] == "shares" and r["cluster"] == "nodes" else
               ("C1" if r["trace"] == "rounded" else "C2") for r in rows]
    for ax, key, ylabel in ((axes[0], "mean_jct_h", "mean JCT (h)"),
                            (axes[1], "unfair_fraction", "unfair fraction (rho > 1.05)")):
        mean = np.array([r["agg"][key].mean for r in rows])
        lo = mean - np.array([r["agg"][key].min for r in rows])
        hi = np.array([r["agg"][key].max for r in rows]) - mean
        ax.bar(x, mean, color=colours, yerr=np.vstack([lo, hi]), capsize=2, error_kw={"linewidth": 0.8})
        ax.set_ylabel(ylabel, fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
        ax.tick_params(labelsize=7)
    axes[1].set_xticks(x, [r["label"] for r in rows], rotation=40, ha="right", fontsize=7)
    axes[0].set_title("Shared GPUs by request: sharing trace on nodes (blue), rounded up to whole GPUs "
                      "(orange), no binding (green)", fontsize=7)
    fig.savefig(path, format="png", dpi=150)


def _groups_figure(rows: list[dict[str, Any]], path: Path) -> None:
    """Mean slowdown (JCT / ideal duration) of the part-of-a-GPU jobs and of the whole-GPU jobs per row."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.0), dpi=150, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    x = np.arange(len(rows))
    w = 0.4
    for off, key, name in ((-w / 2, "part_slowdown", "jobs asking for part of a GPU"),
                           (w / 2, "whole_slowdown", "jobs asking for whole GPUs")):
        ax.bar(x + off, [r["agg"][key].mean for r in rows], width=w, label=name)
    ax.axhline(1.0, color="k", linewidth=0.8, linestyle="--")
    ax.set_xticks(x, [r["label"] for r in rows], rotation=40, ha="right", fontsize=7)
    ax.set_ylabel("mean slowdown (JCT / alone on the fastest type)", fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title("Who pays: mean slowdown by request (same job ids and ideal durations in every variant)",
                 fontsize=8)
    fig.savefig(path, format="png", dpi=150)


def _cell(a: Agg, spec: str) -> str:
    return a.md(spec)


def write_outputs(rows: list[dict[str, Any]], runs: list[dict[str, Any]], out: Path, meta: dict[str, Any]) -> str:
    """``sharing.md``, ``sharing.csv``, ``sharing_runs.csv`` and the two figures; returns the Markdown table."""
    keys = ("label", "policy", "trace", "cluster")
    with (out / "sharing.csv").open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow([*keys, "seeds", "fractional_jobs",
                    *(f"{k}_{s}" for k in FIELDS for s in ("mean", "min", "max"))])
        for r in rows:
            w.writerow([*(r[k] for k in keys), r["seeds"], repr(r["fractional_jobs"]),
                        *(repr(getattr(r["agg"][k], s)) for k in FIELDS for s in ("mean", "min", "max"))])
    with (out / "sharing_runs.csv").open("w", newline="") as f:
        cols = list(runs[0])
        dw = csv.DictWriter(f, fieldnames=cols, lineterminator="\n")
        dw.writeheader()
        dw.writerows({k: (repr(v) if isinstance(v, float) else v) for k, v in r.items()} for r in runs)
    head = ["policy / variant", *(FIELDS[k][0] for k in FIELDS)]
    lines = ["| " + " | ".join(head) + " |", "|:---|" + "---:|" * len(FIELDS)]
    for r in rows:
        lines.append("| " + " | ".join([r["label"], *(_cell(r["agg"][k], FIELDS[k][1]) for k in FIELDS)]) + " |")
    table = "\n".join(lines) + "\n"
    notes = [f"Size: {meta['size']}: {meta['num_jobs']} jobs per trace at {meta['jobs_per_hour']:g} jobs/h, "
             f"seeds {' '.join(str(s) for s in meta['seeds'])}; nodes `{meta['nodes']}` ({meta['gpus']} GPUs; "
             f"no binding: `{meta['counts']}`); rounds of 360 s, restart overhead {meta['restart_overhead']:g} s"
             + (f", at most {meta['max_rounds']} rounds per run" if meta["max_rounds"] else "") + ".",
             f"Trace: {meta['fractional']} of {meta['num_jobs']} jobs per seed ask for part of one GPU "
             "(1/2 or 1/4); the rest whole GPUs (1, 2, 4 or 8).",
             f"Throughputs: catalog `{CATALOG}`; {meta['derived']} of the {meta['figures']} alone figures the runs "
             "could use are derived (rule modern-v1), and a share's throughput is derived too (share x one-GPU "
             "throughput).",
             "Cells: mean over seeds [min–max]. The part-GPU and whole-GPU groups are the same job ids in every "
             "variant. E/C of the rounded-up rows counts a rounded job as a whole GPU of work (not comparable).",
             f"Wall time {meta['wall_s']:.0f} s on {meta['workers']} worker(s)."]
    (out / "sharing.md").write_text("# Shared GPUs by request (examples/sharing.py)\n\n" + table + "\n"
                                    + "\n".join(f"- {n}" for n in notes) + "\n")
    _figure(rows, out / "sharing.png")
    _groups_figure(rows, out / "sharing_groups.png")
    return table


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/results"), help="output directory (default docs/results)")
    ap.add_argument("--workers", type=int, default=1, help="parallel simulations (default 1: in this process)")
    ap.add_argument("--quick", action="store_true", help="smoke-test size (12 jobs, one seed, 40 rounds)")
    ap.add_argument("--num-jobs", type=int, help="jobs per trace (default 160; quick 12)")
    ap.add_argument("--jobs-per-hour", type=float, help="arrival rate (default 8; quick 12)")
    ap.add_argument("--seeds", type=int, nargs="+", help="trace seeds (default 0 1; quick 0)")
    ap.add_argument("--nodes", help="cluster as nodes, COUNTxTYPE:GPUS groups (default 2 nodes of 8 GPUs per type)")
    ap.add_argument("--share-fraction", type=float, default=0.4,
                    help="fraction of all jobs that ask for part of a GPU (default 0.4)")
    ap.add_argument("--restart-overhead", type=float, default=30.0, help="seconds lost per placement change")
    ap.add_argument("--policies", nargs="+", help="policies (default: every registered policy)")
    current_argument(ap)
    a = ap.parse_args(argv)
    size = QUICK if a.quick else FULL
    num_jobs = a.num_jobs or size["num_jobs"]
    jph = a.jobs_per_hour or size["jobs_per_hour"]
    seeds = tuple(a.seeds if a.seeds is not None else size["seeds"])
    nodes = a.nodes or size["nodes"]
    if not 0 <= a.share_fraction <= 1:
        ap.error(f"--share-fraction must be in [0, 1], got {a.share_fraction}")
    policies = tuple(a.policies or policy_names())
    unknown = sorted(set(policies) - set(policy_names()))
    if unknown:
        ap.error(f"unknown policies {unknown}; known: {list(policy_names())}")
    gpus = Cluster.parse(nodes).by_type()
    counts = counts_spec(nodes)
    a.out.mkdir(parents=True, exist_ok=True)
    rows_v = variants(policies)
    sim = {**sim_settings(a.current), "round_length": 360.0, "restart_overhead": a.restart_overhead,
           "max_rounds": size["max_rounds"]}
    t0 = time.perf_counter()
    runs: list[dict[str, Any]] = []
    fractional: list[int] = []
    derived = figures = 0
    with tempfile.TemporaryDirectory() as tmp:
        specs: list[tuple[Variant, int, RunSpec]] = []
        part_ids: dict[int, frozenset[str]] = {}
        for seed in seeds:
            shared, rounded = sharing_trace(num_jobs, jph, seed, list(gpus), a.share_fraction)
            part_ids[seed] = frozenset(i for i, s in zip(shared.id, shared.scale.tolist()) if s < 1)
            fractional.append(len(part_ids[seed]))
            paths = {"shares": Path(tmp) / f"shares_{seed}.csv", "rounded": Path(tmp) / f"rounded_{seed}.csv"}
            write_trace(shared, paths["shares"])
            write_trace(rounded, paths["rounded"])
            for v in rows_v:
                cluster = nodes if v.cluster == "nodes" else counts
                specs.append((v, seed, RunSpec(v.policy, cluster, {"path": str(paths[v.trace])},
                                               policy_settings(v.policy, {}, a.current), dict(sim),
                                               f"{v.label}/s{seed}", (CATALOG,))))
        log(f"sharing: {len(specs)} simulations on {a.workers} worker(s)")
        if a.workers > 1:
            results = run_sweep([s for *_, s in specs], max_workers=a.workers, show_progress=True)
        else:
            results = []
            for *_, s in specs:
                results.append(run_spec(s))
                log(f"{s.label}: {results[-1].wall_seconds:.1f} s")
    for (v, seed, _), res in zip(specs, results, strict=True):
        runs.append({"label": v.label, "policy": v.policy, "trace": v.trace, "cluster": v.cluster, "seed": seed,
                     **run_row(res, part_ids[seed]), "sim_wall_s": res.wall_seconds})
        if v.trace == "shares" and v.cluster == "nodes" and v.policy == policies[0]:
            derived += int(res.catalog.get("derived", 0))
            figures += int(res.catalog.get("figures", 0))
    rows: list[dict[str, Any]] = []
    for v in rows_v:
        mine = [r for r in runs if r["label"] == v.label]
        rows.append({"label": v.label, "policy": v.policy, "trace": v.trace, "cluster": v.cluster,
                     "seeds": " ".join(str(r["seed"]) for r in mine),
                     "fractional_jobs": float(np.mean([r["fractional_jobs"] for r in mine])),
                     "agg": {k: Agg.of([r[k] for r in mine]) for k in FIELDS}})
    wall = time.perf_counter() - t0
    meta = {"size": "quick" if a.quick else ("full" if (num_jobs, jph, seeds, nodes) == (
        FULL["num_jobs"], FULL["jobs_per_hour"], FULL["seeds"], FULL["nodes"]) else "custom"),
            "num_jobs": num_jobs, "jobs_per_hour": jph, "seeds": seeds, "nodes": nodes, "gpus": sum(gpus.values()),
            "counts": counts, "restart_overhead": a.restart_overhead, "max_rounds": size["max_rounds"],
            "fractional": "/".join(str(f) for f in fractional), "derived": derived, "figures": figures,
            "wall_s": wall, "workers": a.workers}
    table = write_outputs(rows, runs, a.out, meta)
    print(table, end="")
    log(f"sharing: wrote {a.out / 'sharing.md'}, .csv, _runs.csv, .png, _groups.png in {wall:.0f} s")
    return 0 if all(math.isfinite(r["agg"]["gpu_busy_fraction"].mean) for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
