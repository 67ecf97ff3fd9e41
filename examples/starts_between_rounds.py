r"""Starts between rounds: the simulator's ``starts="round"`` against ``starts="idle"``, measured.

With ``"round"`` a job starts only at a round boundary (every 360 s), however idle the cluster is; with
``"idle"`` a job that arrives, or waits while another finishes, starts at once on idle GPUs that fit it and
runs until the next boundary, where the policy re-plans everything (``docs/metrics.md``, "Starts between
rounds"). Both rules run the ``fairshare`` policy on two kinds of trace:

* ``gavel``: the Gavel-recipe generator (``generate_trace``), 120 jobs per seed;
* ``short half``: the same jobs, but a random half of them (drawn with the seed) made shorter than a round:
  their work is set so that they take 30 to 330 s alone on their fastest GPU type (uniform), as in production
  traces where many jobs run for a few minutes.

Settings (:data:`SETTINGS`): ``light``, 4 jobs/h on 36 V100 + 36 P100 + 36 K80, both traces; ``loaded``,
12 jobs/h on 12 + 12 + 12 GPUs (GPUs are busy, so idle ones are rarer), the ``short half`` trace.

Reported per setting, trace, rule and duration class (:func:`fairshare.sim.metrics.metrics_by_duration_class`,
by the time a job takes alone on its fastest type), as the mean over seeds: mean and median JCT (minutes),
the unfair fraction (``rho > 1.05``) and the largest ``rho``; per run also the GPU busy fraction and the number
of starts between rounds.

The simulator also has ``starts="events"`` (its default since the third release: fairshare plans the rest of the
round again at every arrival and finish, other policies run as with ``"idle"``); the published table compares
``"round"`` and ``"idle"`` only, and ``--starts round idle events`` adds it. Every run uses release 0.2's other
settings (no restart overhead, fairshare without shortfall prices); ``--current`` runs today's policy defaults
with a 30 s restart overhead.

Usage::

    python examples/starts_between_rounds.py           # full: 6 trace settings x 2 rules x 3 seeds, ~3 min CPU
    python examples/starts_between_rounds.py --quick   # smoke test: 20 jobs at a tenth of their work, one seed
    python examples/starts_between_rounds.py --quick --starts round idle events   # with re-planning at events
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fairshare.sim.catalog import load_catalog
from fairshare.sim.config import STARTS as ALL_STARTS
from fairshare.sim.config import SimConfig
from fairshare.sim.metrics import DURATION_CLASSES, compute_metrics, metrics_by_duration_class
from fairshare.sim.simulator import simulate
from fairshare.sim.traces import Trace, generate_trace

if __package__:  # python -m examples.starts_between_rounds
    from ._common import current_argument, policy_settings, sim_settings
else:  # python examples/starts_between_rounds.py
    from _common import current_argument, policy_settings, sim_settings

CLUSTER = "V100=36,P100=36,K80=36"
STARTS = ("round", "idle")  # the published comparison; ALL_STARTS also has "events" (--starts)
TRACES = ("gavel", "short half")

#: (name, cluster, jobs per hour, traces)
SETTINGS: tuple[tuple[str, str, float, tuple[str, ...]], ...] = (
    ("light", CLUSTER, 4.0, TRACES),
    ("loaded", "V100=12,P100=12,K80=12", 12.0, ("short half",)),
)
OUT = Path(__file__).resolve().parents[1] / "docs" / "results" / "starts_between_rounds.md"


def short_half(trace: Trace, seed: int, cluster: str = CLUSTER) -> Trace:
    """``trace`` with a random half of its jobs shortened to 30-330 s alone on their fastest type of ``cluster``."""
    rng = np.random.default_rng(seed + 10_000)
    n = len(trace.id)
    pick = rng.choice(n, size=n // 2, replace=False)
    types = [part.split("=")[0] for part in cluster.split(",")]
    fastest = load_catalog().throughput_matrix(list(trace.model), np.asarray(trace.scale, dtype=np.int64),
                                               types).max(axis=1)
    work = np.array(trace.iterations, dtype=np.float64)
    work[pick] = rng.uniform(30.0, 330.0, size=pick.size) * fastest[pick]
    return dataclasses.replace(trace, iterations=work)


def make_trace(kind: str, jobs: int, rate: float, seed: int, work_scale: float = 1.0,
               cluster: str = CLUSTER) -> Trace:
    """The ``kind`` trace (one of :data:`TRACES`) of ``jobs`` jobs at ``rate`` jobs/h."""
    tr = generate_trace(num_jobs=jobs, jobs_per_hour=rate, seed=seed)
    if work_scale != 1.0:
        tr = dataclasses.replace(tr, iterations=np.asarray(tr.iterations) * work_scale)
    return short_half(tr, seed, cluster) if kind == "short half" else tr


def run(kind: str, starts: str, cluster: str, rate: float, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """One simulation; its metrics overall and per duration class, and its starts between rounds."""
    tr = make_trace(kind, args.jobs, rate, seed, args.work_scale, cluster)
    cfg = SimConfig(**{**sim_settings(args.current), "starts": starts})  # release 0.2's other settings
    t0 = time.process_time()
    res = simulate(tr, cluster, args.policy, config=cfg, record_holds=True, show_progress=False,
                   policy_options=policy_settings(args.policy, {}, args.current))
    cpu = time.process_time() - t0
    classes = {"all": compute_metrics(res.jobs, res.rounds),
               **metrics_by_duration_class(res.jobs, res.rounds, cfg.round_length)}
    return {"classes": classes, "between": sum(h.between_rounds for h in res.holds),
            "busy": classes["all"].gpu_busy_fraction, "cpu": cpu}


def _mean(values: list[float]) -> float:
    v = [x for x in values if np.isfinite(x)]
    return float(np.mean(v)) if v else float("nan")


def _cell(v: float, spec: str) -> str:
    return "-" if not np.isfinite(v) else format(v, spec)


def table(results: dict[tuple[str, str, str], list[dict[str, Any]]], args: argparse.Namespace) -> str:
    """The Markdown page: one row per load, trace, rule and duration class; means over seeds."""
    seeds = ", ".join(map(str, args.seeds))
    tenth = " (a tenth of their work)" if args.quick else ""
    settings = ("today's policy defaults, restart overhead 30 s" if args.current
                else "no restart overhead, no shortfall prices (release 0.2's settings)")
    lines = [
        "# Starts between rounds: measured",
        "",
        f"Written by `examples/starts_between_rounds.py{' --quick' if args.quick else ''}`. Policy `{args.policy}`, "
        f"round length 360 s, {settings}; {args.jobs} jobs per trace{tenth}, "
        f"seeds {seeds}; every number is the mean over the seeds. Settings: "
        + "; ".join(f"`{n}`, {r:g} jobs/h on {c.replace(',', ', ')}" for n, c, r, _ in SETTINGS)
        + ". `round`: jobs start only at round boundaries "
        "(the rule of fairshare 0.1); `idle`: also between them, on idle GPUs, at every arrival and finish "
        "(the default of release 0.2; `events`, today's, also re-plans fairshare at them; see "
        "[metrics.md](../metrics.md), \"Starts between rounds\"). Traces: `gavel` is the Gavel-recipe generator; "
        "`short half` is the same jobs with a random half of them shortened to 30-330 s alone on their fastest "
        "type. Classes are by that alone time: under one round (< 360 s), one round to 1 h, over 1 h; `all` is "
        "every job. JCT in minutes; unfair = fraction of jobs with rho > 1.05.",
        "",
        "| setting | trace | starts | class | jobs | mean JCT (min) | median JCT (min) | unfair | max rho "
        "| GPU busy | starts between rounds |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (setting, kind, starts), runs in results.items():
        for cls in ("all", *DURATION_CLASSES):
            ms = [r["classes"][cls] for r in runs if cls in r["classes"]]
            if not ms:
                continue
            extra = (f"{_mean([r['busy'] for r in runs]):.3f} | {_mean([r['between'] for r in runs]):.0f}"
                     if cls == "all" else " | ")
            lines.append(
                f"| {setting} | {kind} | {starts} | {cls} | {_mean([m.jobs for m in ms]):.0f} "
                f"| {_cell(_mean([m.mean_jct / 60 for m in ms]), '.1f')} "
                f"| {_cell(_mean([m.median_jct / 60 for m in ms]), '.1f')} "
                f"| {_cell(_mean([m.unfair_fraction for m in ms]), '.3f')} "
                f"| {_cell(_mean([m.max_rho for m in ms]), '.2f')} | {extra} |")
    cpu = sum(r["cpu"] for runs in results.values() for r in runs)
    lines += ["", f"{sum(len(v) for v in results.values())} simulations, {cpu:.0f} s of CPU in the simulator.", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison and write the table (also printed)."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smoke test: 20 jobs at a tenth of their work, one seed")
    ap.add_argument("--jobs", type=int, default=120, help="jobs per trace (default 120)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="trace seeds (default 0 1 2)")
    ap.add_argument("--policy", default="fairshare", help="policy name (default fairshare)")
    ap.add_argument("--starts", nargs="+", choices=ALL_STARTS, default=list(STARTS),
                    help="the rules compared (default: round idle, the published table)")
    current_argument(ap)
    ap.add_argument("--out", type=Path, default=OUT, help=f"Markdown file to write (default {OUT.name} in "
                                                        "docs/results/)")
    args = ap.parse_args(argv)
    args.work_scale = 1.0
    if args.quick:
        args.jobs, args.seeds, args.work_scale = 20, [0], 0.1
    results: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for name, cluster, rate, kinds in SETTINGS:
        for kind in kinds:
            for starts in dict.fromkeys(args.starts):
                results[(name, kind, starts)] = [run(kind, starts, cluster, rate, seed, args) for seed in args.seeds]
    text = table(results, args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
