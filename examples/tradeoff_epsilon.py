"""Efficiency against fairness: fairshare with slack epsilon in {0, 0.05, 0.1, 0.2, 0.4}, and no fairness.

The round problem requires ``rho_j + sigma_j >= (1 - epsilon) + D_j`` with
``epsilon < 1``, so "epsilon = 1.0 (no fairness)" cannot be a fairshare run. It is the ``max-throughput``
policy with ``objective="normalized"`` (fairshare's variant; Gavel's own objective is the raw sum of
iterations/s): each round it maximises ``E = sum_j s_j tau_j / Tmax_j`` over the same columns (alone and co-located
placements) with no fairness rows at all, which is exactly the objective of the round problem with
``lambda -> 0``. Every other row is fairshare ``fast`` with the simulator's ``epsilon`` set to the row's value
(deficits carried, co-location on, ``fairness_weight`` 100).

Reported per epsilon (means over seeds; per-job distributions pooled over seeds):

* ``E/C`` (``utilization``): mean over rounds with active jobs of the round's ``E / C`` (spec section 3);
* ``E/C sat.``: the same mean over *saturated* rounds only, those in which the active jobs ask for at least
  ``C`` GPUs (sum of their gangs >= C, computed from the job records). In the other rounds every job can run,
  so fairness costs nothing there; this is where the trade-off is visible;
* GPU busy fraction (busy GPU-seconds over capacity), mean JCT (h), finish-time-unfair fraction (rho > 1.05);
* the per-job long-run fair-share ratio ``n_j = (done_j / active seconds_j) / Tfair_j``
  (:func:`fairshare.sim.metrics.normalized_throughput`): median, p5, p95 and the fraction below 0.95.

Traces: Gavel's recipe (multi-GPU scales 1/2/4/8, Gavel durations) on 36 V100 + 36 P100 + 36 K80 at 6 jobs/h,
a load well above capacity (mean demand ~190 best-GPU-hours per hour), so most rounds are saturated.

Usage::

    python examples/tradeoff_epsilon.py            # full: 400 jobs x 3 seeds x 6 rows (648 s on 2 idle cores)
    python examples/tradeoff_epsilon.py --quick    # 20 jobs on 8+8+8 GPUs, 1-hour rounds, 1 seed (~4 s)
    python -m examples.tradeoff_epsilon --quick    # the same, as a module from the repository root
    python examples/tradeoff_epsilon.py --jobs 1000 --seeds 0 1 2 --workers 2

Outputs under ``--out`` (default ``docs/results/``): ``tradeoff_epsilon.md`` (tables),
``tradeoff_epsilon.csv`` (one row per epsilon), ``tradeoff_epsilon_runs.csv`` (one row per run),
``tradeoff_epsilon_efficiency.png`` and ``tradeoff_epsilon_ratios.png``. Progress lines go to stderr.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from fairshare.sim.metrics import normalized_throughput
from fairshare.sim.result import SimulationResult
from fairshare.sim.sweep import RunSpec, run_sweep

if __package__:  # python -m examples.tradeoff_epsilon
    from ._common import config_arguments, policy_settings, resolve_config, sim_settings, write_dict_csv
else:  # python examples/tradeoff_epsilon.py
    from _common import config_arguments, policy_settings, resolve_config, sim_settings, write_dict_csv

EPSILONS = (0.0, 0.05, 0.1, 0.2, 0.4)
NO_FAIRNESS = 1.0  # the max-throughput row
FULL = {"jobs": 400, "jobs_per_hour": 6.0, "cluster": "V100=36,P100=36,K80=36", "seeds": [0, 1, 2],
        "round_length": 360.0}
QUICK = {"jobs": 20, "jobs_per_hour": 12.0, "cluster": "V100=8,P100=8,K80=8", "seeds": [0],
         "round_length": 3600.0}
RATIO_LOW = 0.95


def log(msg: str) -> None:
    print(f"[tradeoff_epsilon] {msg}", file=sys.stderr, flush=True)


def label(eps: float) -> str:
    return "1.0 (no fairness: max-throughput)" if eps >= NO_FAIRNESS else f"{eps:g}"


def specs_for(eps: float, cluster: str, trace: dict, round_length: float, current: bool = False) -> RunSpec:
    sim = sim_settings(current)  # release 0.2's settings unless current
    if eps >= NO_FAIRNESS:
        return RunSpec(policy="max-throughput", cluster=cluster, trace=trace,
                       policy_options={"objective": "normalized"}, sim_options={**sim, "round_length": round_length},
                       label=f"eps={label(eps)}")
    return RunSpec(policy="fairshare", cluster=cluster, trace=trace,
                   policy_options=policy_settings("fairshare", {"mode": "fast"}, current),
                   sim_options={**sim, "epsilon": eps, "round_length": round_length}, label=f"eps={eps:g}")


def saturated_utilization(res: SimulationResult, capacity: int) -> tuple[float, float]:
    """Mean ``E / C`` over rounds whose active jobs ask for >= ``capacity`` GPUs; share of such rounds."""
    arr = np.array([j.arrival for j in res.jobs])
    fin = np.array([j.finish for j in res.jobs])
    fin = np.where(np.isfinite(fin), fin, np.inf)
    scale = np.array([j.scale for j in res.jobs], dtype=float)
    rounds = [r for r in res.rounds if r.active_jobs > 0]
    if not rounds:
        return float("nan"), float("nan")
    start = np.array([r.start for r in rounds])
    util = np.array([r.utilization for r in rounds])
    demand = ((arr[None, :] <= start[:, None]) & (fin[None, :] > start[:, None])) @ scale
    sat = demand >= capacity
    return (float(util[sat].mean()) if sat.any() else float("nan")), float(sat.mean())


def run_row(res: SimulationResult, eps: float, seed: int, capacity: int) -> dict:
    m = res.metrics()
    ratios = normalized_throughput(res.jobs)
    sat_util, sat_share = saturated_utilization(res, capacity)
    return {"epsilon": eps, "label": label(eps), "policy": res.policy, "seed": seed, "jobs": m.jobs,
            "finished": m.finished, "utilization": m.utilization, "utilization_saturated": sat_util,
            "saturated_rounds": sat_share, "gpu_busy_fraction": m.gpu_busy_fraction, "mean_jct_h": m.mean_jct / 3600,
            "unfair_fraction": m.unfair_fraction, "jain": m.jain,
            "ratio_median": float(np.median(ratios)), "ratio_p5": float(np.percentile(ratios, 5)),
            "ratio_p95": float(np.percentile(ratios, 95)),
            "ratio_below_095": float((ratios < RATIO_LOW).mean()),
            "mean_solver_ms": m.mean_solver_seconds * 1e3, "wall_s": res.wall_seconds}


SUMMARY = ("utilization", "utilization_saturated", "saturated_rounds", "gpu_busy_fraction", "mean_jct_h",
           "unfair_fraction", "jain", "mean_solver_ms")


def summarise(rows: list[dict], ratios: dict[float, np.ndarray]) -> list[dict]:
    """One row per epsilon: means over seeds of the run metrics; ratio quantiles over the pooled jobs."""
    out = []
    for eps, r in ratios.items():
        mine = [x for x in rows if x["epsilon"] == eps]
        row = {"epsilon": eps, "label": label(eps), "seeds": len(mine)}
        for k in SUMMARY:
            row[k] = float(np.mean([x[k] for x in mine]))
        row.update({"jobs_pooled": int(r.size), "ratio_median": float(np.median(r)),
                    "ratio_p5": float(np.percentile(r, 5)), "ratio_p95": float(np.percentile(r, 95)),
                    "ratio_below_095": float((r < RATIO_LOW).mean())})
        out.append(row)
    return out


COLS = (("label", "epsilon", "s"), ("utilization", "E/C", ".3f"), ("utilization_saturated", "E/C sat.", ".3f"),
        ("saturated_rounds", "sat. rounds", ".2f"), ("gpu_busy_fraction", "GPU busy", ".3f"),
        ("mean_jct_h", "mean JCT (h)", ".2f"), ("unfair_fraction", "unfair (rho>1.05)", ".3f"),
        ("jain", "Jain", ".3f"), ("ratio_median", "ratio median", ".3f"), ("ratio_p5", "ratio p5", ".3f"),
        ("ratio_p95", "ratio p95", ".3f"), ("ratio_below_095", "ratio < 0.95", ".3f"),
        ("mean_solver_ms", "solver (ms)", ".1f"))


def markdown(rows: list[dict], cols: Sequence[tuple[str, str, str]] = COLS) -> str:
    lines = ["| " + " | ".join(c[1] for c in cols) + " |", "|:---|" + "---:|" * (len(cols) - 1)]
    for r in rows:
        lines.append("| " + " | ".join(format(r[k], f) for k, _, f in cols) + " |")
    return "\n".join(lines) + "\n"


def _axes(figsize: tuple[float, float] = (6.4, 4.0)):  # type: ignore[no-untyped-def]
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, dpi=150, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.grid(True, alpha=0.3)
    return fig, ax


def plot_efficiency(rows: list[dict], summary: list[dict], path: Path) -> None:
    """E/C (all rounds and saturated rounds) and GPU busy fraction against epsilon; no fairness at x = 1."""
    fig, ax = _axes()
    pos = {s["epsilon"]: i for i, s in enumerate(summary)}  # evenly spaced: 0, 0.05 and 0.1 stay readable
    xs = list(pos.values())
    for key, name, mk in (("utilization", "E/C, all rounds", "o"),
                          ("utilization_saturated", "E/C, saturated rounds", "s"),
                          ("gpu_busy_fraction", "GPU busy fraction", "^")):
        line, = ax.plot(xs, [s[key] for s in summary], marker=mk, label=name)
        ax.scatter([pos[r["epsilon"]] for r in rows], [r[key] for r in rows], s=10, alpha=0.4,
                   color=line.get_color())
    ax.set_xlabel("epsilon (fairness slack; 1.0 = no fairness, max-throughput; not to scale)")
    ax.set_ylabel("fraction of capacity")
    ax.set_xticks(xs, [f"{e:g}" for e in pos])
    ax.legend()
    ax.set_title("Efficiency against fairness slack (line: mean over seeds, dots: seeds)")
    fig.savefig(path, format="png")


def plot_ratios(ratios: dict[float, np.ndarray], path: Path) -> None:
    """Box plot (whiskers p5-p95) of per-job long-run fair-share ratios per epsilon, log scale."""
    fig, ax = _axes()
    data = [np.maximum(r, 1e-3) for r in ratios.values()]
    ax.boxplot(data, whis=(5, 95), showfliers=False)
    ax.set_xticks(range(1, len(data) + 1), [label(e).replace(" (no fairness: max-throughput)", "\n(no fair.)")
                                            for e in ratios])
    ax.axhline(1.0, color="k", lw=0.8, ls="--")
    ax.axhline(RATIO_LOW, color="r", lw=0.8, ls=":", label=f"{RATIO_LOW}")
    ax.set_yscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("per-job throughput / fair throughput")
    ax.set_title("Per-job fair-share ratio (box: quartiles, whiskers: p5-p95)")
    ax.legend(loc="lower left")
    fig.savefig(path, format="png")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    config_arguments(p)
    p.add_argument("--epsilons", type=float, nargs="+", default=[*EPSILONS, NO_FAIRNESS],
                   help="values < 1 run fairshare; 1.0 runs max-throughput (no fairness)")
    a = p.parse_args(argv)
    cfg, size = resolve_config(a, FULL, QUICK)
    eps_list = sorted(set(a.epsilons))
    if any(e < 0 or (1 > e > 0.999) or e > 1 for e in eps_list):
        p.error("--epsilons: values must be in [0, 0.999] or exactly 1.0 (no fairness)")
    capacity = sum(int(x.split("=")[1]) for x in cfg["cluster"].split(","))
    a.out.mkdir(parents=True, exist_ok=True)

    specs, keys = [], []
    for seed in cfg["seeds"]:
        trace = {"num_jobs": cfg["jobs"], "jobs_per_hour": cfg["jobs_per_hour"], "seed": seed}
        for eps in eps_list:
            specs.append(specs_for(eps, cfg["cluster"], trace, cfg["round_length"], a.current))
            keys.append((eps, seed))
    log(f"{len(specs)} runs: {cfg['jobs']} jobs at {cfg['jobs_per_hour']} jobs/h on {cfg['cluster']}, "
        f"seeds {cfg['seeds']}, epsilons {eps_list}, {a.workers} workers")
    t0 = time.perf_counter()
    results = run_sweep(specs, max_workers=a.workers)
    wall = time.perf_counter() - t0

    rows = [run_row(res, eps, seed, capacity) for res, (eps, seed) in zip(results, keys, strict=True)]
    pairs = list(zip(results, keys, strict=True))
    ratios = {eps: np.concatenate([normalized_throughput(res.jobs) for res, k in pairs if k[0] == eps])
              for eps in eps_list}
    summary = summarise(rows, ratios)

    stem = a.out / "tradeoff_epsilon"
    write_dict_csv(stem.with_suffix(".csv"), summary)
    write_dict_csv(a.out / "tradeoff_epsilon_runs.csv", rows)
    plot_efficiency(rows, summary, a.out / "tradeoff_epsilon_efficiency.png")
    plot_ratios(ratios, a.out / "tradeoff_epsilon_ratios.png")
    run_cols = (("label", "epsilon", "s"), ("seed", "seed", "d"), *COLS[1:], ("wall_s", "wall (s)", ".0f"))
    md = [f"# Efficiency against fairness slack epsilon ({size} size)", "",
          (f"Gavel-recipe traces, {cfg['jobs']} jobs at {cfg['jobs_per_hour']:g} jobs/h on {cfg['cluster']}, "
          f"{cfg['round_length']:g} s rounds, seeds {cfg['seeds']}; fairshare fast for epsilon < 1, "
          f"max-throughput for 1.0 (no fairness). "
          f"Means over seeds; ratio quantiles over the jobs of all seeds. Sweep wall time {wall:.0f} s "
          f"with {a.workers} workers."), "", markdown(summary), "## Per run", "", markdown(rows, run_cols)]
    stem.with_suffix(".md").write_text("\n".join(md))
    log(f"done in {wall:.1f} s; wrote {stem}.md/.csv, tradeoff_epsilon_runs.csv and 2 PNGs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
