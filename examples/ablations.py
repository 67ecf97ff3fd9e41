"""Ablations of fairshare: what each ingredient of the round problem contributes.

Variants, each run on the same traces (Gavel recipe, multi-GPU, on 36 V100 + 36 P100 + 36 K80), with the same
epsilon (default 0) and fairness weight (100):

* ``full``: fairshare ``fast`` with co-location candidates (4 per job), type-aware throughputs and carried
  deficits (the contribution as shipped);
* ``no-colocation``: the simulator offers no co-location candidates (``colocation=False``);
* ``type-blind``: ``policy_options={"heterogeneity_aware": False}``: the policy plans with each job's
  throughputs averaged over the GPU types (fair shares, efficiency and fairness rows cannot tell a V100 from a
  K80), and the plan is executed with the true throughputs;
* ``no-deficits``: ``carry_deficits=False``: every round starts with zero deficits, so fairness is spatial
  only (each round tries to give each job its fair share, but a job left out is not owed anything later);
* ``exact``: fairshare ``exact`` (HiGHS on the round MILP) with a per-round time limit (default 10 s); the
  table counts the rounds HiGHS proved optimal.

Metrics (:mod:`fairshare.sim.metrics`): mean, p99 JCT, finish-time-unfair fraction (rho > 1.05), max rho, Jain's
index of normalised throughputs, mean round E/C (utilization), GPU busy fraction, mean and p99 policy time per
round, proven optimal rounds; means over seeds. The change table gives each variant minus ``full`` (relative % for
times and rho, absolute for fractions), seed by seed on the same trace, then averaged.

Usage::

    python examples/ablations.py             # full: 200 jobs x 3 seeds x 5 variants (281 s on 2 idle cores)
    python -m examples.ablations --quick     # the same script as a module, from the repository root
    python examples/ablations.py --quick     # 24 jobs on 8+8+8 GPUs, 1-hour rounds, 1 seed (~6 s)
    python examples/ablations.py --variants full exact --jobs 200 --seeds 0

Outputs under ``--out`` (default ``docs/results/``): ``ablations.md``, ``ablations.csv`` (one row per
variant), ``ablations_runs.csv`` (one row per run), ``ablations_jct_cdf.png`` and ``ablations_rho_cdf.png``
(first seed). Progress lines go to stderr.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import numpy as np

from fairshare.sim.plots import plot_jct_cdf, plot_rho_cdf
from fairshare.sim.result import SimulationResult
from fairshare.sim.sweep import RunSpec, run_sweep

if __package__:  # python -m examples.ablations
    from ._common import config_arguments, policy_settings, resolve_config, sim_settings, write_dict_csv
else:  # python examples/ablations.py
    from _common import config_arguments, policy_settings, resolve_config, sim_settings, write_dict_csv

VARIANTS: dict[str, tuple[dict, dict]] = {  # name -> (policy_options, sim_options)
    "full": ({"mode": "fast"}, {}),
    "no-colocation": ({"mode": "fast"}, {"colocation": False}),
    "type-blind": ({"mode": "fast", "heterogeneity_aware": False}, {}),
    "no-deficits": ({"mode": "fast"}, {"carry_deficits": False}),
    "exact": ({"mode": "exact"}, {}),
}
FULL = {"jobs": 200, "jobs_per_hour": 6.0, "cluster": "V100=36,P100=36,K80=36", "seeds": [0, 1, 2],
        "round_length": 360.0}
QUICK = {"jobs": 24, "jobs_per_hour": 12.0, "cluster": "V100=8,P100=8,K80=8", "seeds": [0],
         "round_length": 3600.0}

# (key, markdown header, format, kind of change vs full: "rel" %, "abs" difference, "" none)
COLS = (("mean_jct_h", "mean JCT (h)", ".2f", "rel"), ("p99_jct_h", "p99 JCT (h)", ".2f", "rel"),
        ("unfair_fraction", "unfair (rho>1.05)", ".3f", "abs"), ("max_rho", "max rho", ".2f", "rel"),
        ("jain", "Jain", ".3f", "abs"), ("utilization", "E/C", ".3f", "abs"),
        ("gpu_busy_fraction", "GPU busy", ".3f", "abs"), ("mean_solver_ms", "mean solver (ms)", ".1f", "rel"),
        ("p99_solver_ms", "p99 solver (ms)", ".1f", "rel"), ("optimal_rounds", "optimal rounds", ".0f", ""),
        ("active_rounds", "rounds", ".0f", ""))


def log(msg: str) -> None:
    print(f"[ablations] {msg}", file=sys.stderr, flush=True)


def run_row(res: SimulationResult, variant: str, seed: int) -> dict:
    m = res.metrics()
    return {"variant": variant, "seed": seed, "jobs": m.jobs, "finished": m.finished,
            "mean_jct_h": m.mean_jct / 3600, "p99_jct_h": m.p99_jct / 3600,
            "unfair_fraction": m.unfair_fraction,
            "max_rho": m.max_rho, "jain": m.jain, "utilization": m.utilization,
            "gpu_busy_fraction": m.gpu_busy_fraction,
            "mean_solver_ms": m.mean_solver_seconds * 1e3, "p99_solver_ms": m.p99_solver_seconds * 1e3,
            "optimal_rounds": m.optimal_rounds, "active_rounds": m.active_rounds, "wall_s": res.wall_seconds}


def change(kind: str, v: float, ref: float) -> float:
    if kind == "rel":
        return 100.0 * (v - ref) / ref if ref else float("nan")
    return v - ref


def summarise(rows: list[dict], variants: Sequence[str]) -> tuple[list[dict], list[dict]]:
    """Means over seeds per variant, and per-variant changes vs ``full`` (seed by seed, then averaged)."""
    summary, changes = [], []
    for v in variants:
        mine = [r for r in rows if r["variant"] == v]
        s = {"variant": v, "seeds": len(mine)}
        s.update({k: float(np.mean([r[k] for r in mine])) for k, *_ in COLS})
        s["optimal_share"] = s["optimal_rounds"] / s["active_rounds"] if s["active_rounds"] else float("nan")
        summary.append(s)
        if "full" in variants and v != "full":
            ref = {r["seed"]: r for r in rows if r["variant"] == "full"}
            c = {"variant": v}
            for k, _, _, kind in COLS:
                if kind:
                    c[k] = float(np.mean([change(kind, r[k], ref[r["seed"]][k]) for r in mine]))
            changes.append(c)
    for s in summary:  # the one change column of the main table
        c = next((c for c in changes if c["variant"] == s["variant"]), None)
        s["d_mean_jct_pct"] = c["mean_jct_h"] if c else 0.0
    return summary, changes


def fmt(v: float, f: str) -> str:
    return "nan" if isinstance(v, float) and np.isnan(v) else format(v, f)


def md_table(rows: list[dict], cols: Sequence[tuple[str, str, str]]) -> str:
    lines = ["| " + " | ".join(c[1] for c in cols) + " |", "|:---|" + "---:|" * (len(cols) - 1)]
    lines += ["| " + " | ".join(fmt(r[k], f) for k, _, f in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    config_arguments(p)
    p.add_argument("--epsilon", type=float, default=0.0, help="fairness slack of every variant")
    p.add_argument("--exact-time-limit", type=float, default=10.0, help="seconds per round for exact")
    p.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    a = p.parse_args(argv)
    cfg, size = resolve_config(a, FULL, QUICK)
    variants = list(dict.fromkeys(a.variants))
    a.out.mkdir(parents=True, exist_ok=True)

    specs, keys = [], []
    for seed in cfg["seeds"]:
        trace = {"num_jobs": cfg["jobs"], "jobs_per_hour": cfg["jobs_per_hour"], "seed": seed}
        for v in variants:
            popt, sopt = VARIANTS[v]
            if popt["mode"] == "exact":
                popt = {**popt, "options": {"time_limit": a.exact_time_limit}}
            specs.append(RunSpec(policy="fairshare", cluster=cfg["cluster"], trace=trace,
                                 policy_options=policy_settings("fairshare", popt, a.current),
                                 sim_options={**sim_settings(a.current), **sopt, "epsilon": a.epsilon,
                                              "round_length": cfg["round_length"]},
                                 label=f"{v} (seed {seed})"))
            keys.append((v, seed))
    log(f"{len(specs)} runs: {cfg['jobs']} jobs at {cfg['jobs_per_hour']:g} jobs/h on {cfg['cluster']}, "
        f"{cfg['round_length']:g} s rounds, seeds {cfg['seeds']}, variants {variants}, {a.workers} workers")
    # exact runs are the slowest: submit them first so they do not end up alone at the end of the sweep
    order = sorted(range(len(specs)), key=lambda i: keys[i][0] != "exact")
    t0 = time.perf_counter()
    out = run_sweep([specs[i] for i in order], max_workers=a.workers)
    wall = time.perf_counter() - t0
    results = [None] * len(specs)
    for i, res in zip(order, out, strict=True):
        results[i] = res

    rows = [run_row(res, v, seed) for res, (v, seed) in zip(results, keys, strict=True)]
    summary, changes = summarise(rows, variants)
    write_dict_csv(a.out / "ablations.csv", summary)
    write_dict_csv(a.out / "ablations_runs.csv", rows)
    first = cfg["seeds"][0]
    by_variant = {v: res for res, (v, seed) in zip(results, keys, strict=True) if seed == first}
    plot_jct_cdf({v: r.jobs for v, r in by_variant.items()}, a.out / "ablations_jct_cdf.png")
    plot_rho_cdf({v: r.jobs for v, r in by_variant.items()}, a.out / "ablations_rho_cdf.png")

    main_cols = (("variant", "variant", "s"), *((k, h, f) for k, h, f, _ in COLS),
                 ("d_mean_jct_pct", "mean JCT vs full (%)", "+.1f"))
    change_cols = (("variant", "variant", "s"),
                   *((k, h + (" %" if kind == "rel" else " diff"), "+.1f" if kind == "rel" else "+.3f")
                     for k, h, _, kind in COLS if kind))
    run_cols = (("variant", "variant", "s"), ("seed", "seed", "d"), *((k, h, f) for k, h, f, _ in COLS),
                ("wall_s", "wall (s)", ".0f"))
    md = [f"# Ablations of fairshare ({size} size)", "",
          (f"Gavel-recipe traces, {cfg['jobs']} jobs at {cfg['jobs_per_hour']:g} jobs/h on {cfg['cluster']}, "
          f"{cfg['round_length']:g} s rounds, epsilon {a.epsilon:g}, seeds {cfg['seeds']}; exact with a "
          f"{a.exact_time_limit:g} s limit per round. Means over seeds. Sweep wall time {wall:.0f} s with "
          f"{a.workers} workers."), "", md_table(summary, main_cols)]
    if changes:
        md += ["## Change vs full (seed by seed, averaged)", "", md_table(changes, change_cols)]
    md += ["## Per run", "", md_table(rows, run_cols)]
    (a.out / "ablations.md").write_text("\n".join(md))
    log(f"done in {wall:.1f} s; wrote ablations.md/.csv, ablations_runs.csv and 2 PNGs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
