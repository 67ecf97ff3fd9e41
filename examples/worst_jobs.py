"""Why do fairshare's worst jobs end with rho above 1.05?  Job by job, on the main comparison's setting.

One simulation per seed (300 Gavel-recipe jobs, 4 jobs/h, 36 V100 + 36 P100 + 36 K80, 360 s rounds, the
``fairshare`` policy in ``fast`` mode with the chosen priority rule) with a recorder around the policy that
keeps, for every round and every active job, its progress ``tau_j / Tfair_j``, its carried deficit and whether
it was placed. Every finished job with finish-time fairness ``rho_j > 1.05`` is then explained by the first
cause that accounts for it, checked in this order:

``boundary``
    Round quantisation. The job waited for the next round boundary after it arrived (up to one round): with
    the simulator's default ``starts="idle"`` because no idle GPUs fit it when it arrived (the cluster was
    full), with ``starts="round"`` always. A job of a few rounds loses a large part of its life to that wait:
    without the wait before its first start its rho would be at most 1.05. The first start is taken from the
    simulation's GPU holds (``record_holds=True``), so a start between rounds counts.
``gang``
    A gang (scale > 1) that was left out of rounds while it was active (not placed at all in some round).
``unpaid``
    The job finished while it was still owed: its deficit was positive in its last round, so the fairness
    carried in time had no rounds left to repay it.
``shared``
    The job got less than its fair progress in rounds where it was placed (a slower type, or co-located),
    and the deficit did not make up for it before it finished.

Prints one line per unfair job and a summary per seed, and writes ``worst_jobs.md`` (the table) and
``worst_jobs.csv``.

``--trace FILE`` explains the unfair jobs of any trace instead (an imported real trace, say), on ``--cluster``
with ``--catalog``, up to ``--until`` hours: one simulation, reported as seed 0, with a count of causes by
duration class (the time a job needs alone on its fastest type, as in the simulator's results). ``--name``
names the report files.

Usage::

    python examples/worst_jobs.py                         # seeds 0-2, priority none (the 0.1 behaviour)
    python examples/worst_jobs.py --priority remaining    # the same with the remaining-work rule
    python examples/worst_jobs.py --quick                 # smoke test: 30 jobs, one seed
    python examples/worst_jobs.py --priority remaining --trace week.json --catalog modern \
        --cluster T4=8,A10=8,A100-80GB=4,H100=4 --until 240 --name worst_jobs_real_openb2023
"""

from __future__ import annotations

import argparse
import csv
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fairshare.allocation import Allocation
from fairshare.policies import RoundState, get_policy
from fairshare.sim.catalog import load_catalog
from fairshare.sim.metrics import DURATION_CLASSES, UNFAIR_RHO
from fairshare.sim.simulator import simulate
from fairshare.sim.traces import generate_trace, read_trace

CLUSTER = "V100=36,P100=36,K80=36"
CAUSES = ("boundary", "gang", "unpaid", "shared")


@dataclass
class Recorder:
    """Wraps a policy; keeps, per job id, one ``(time, placed, progress, deficit)`` tuple per round."""

    inner: Any
    rounds: dict[str, list[tuple[float, bool, float, float]]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.inner.name)

    def allocate(self, state: RoundState) -> Allocation:
        alloc = self.inner.allocate(state)
        p = state.model.problem
        for j, jid in enumerate(p.job_ids):
            self.rounds.setdefault(jid, []).append(
                (state.time, bool(alloc.job_gpu[j] >= 0), float(alloc.progress[j]), float(p.deficit[j])))
        return alloc


def explain(job: Any, history: list[tuple[float, bool, float, float]], round_length: float,
            first_start: float | None = None) -> dict[str, Any]:
    """The numbers of one finished job and the first cause (of :data:`CAUSES`) that explains its rho.

    ``first_start`` is when the job first held GPUs (a round boundary or a start between rounds); without it,
    the first round it was planned in.
    """
    jct = job.finish - job.arrival
    ideal = job.iterations / job.fair_throughput
    rho = jct / ideal
    first = first_start if first_start is not None else history[0][0] if history else job.arrival
    wait = max(0.0, first - job.arrival)
    unplaced = sum(1 for _, placed, _, _ in history if not placed)
    below = sum(1 for _, placed, prog, _ in history if placed and prog < 1.0 - 1e-6)
    last_deficit = history[-1][3] if history else 0.0
    if (jct - wait) / ideal <= UNFAIR_RHO:
        cause = "boundary"
    elif job.scale > 1 and unplaced > 0:
        cause = "gang"
    elif last_deficit > 1e-6:
        cause = "unpaid"
    else:
        cause = "shared"
    return {"id": job.id, "model": job.model, "scale": job.scale, "rho": rho, "jct_h": jct / 3600,
            "ideal_h": ideal / 3600, "rounds": len(history), "first_wait_s": wait, "unplaced_rounds": unplaced,
            "below_fair_rounds": below, "max_deficit": max((h[3] for h in history), default=0.0),
            "last_deficit": last_deficit, "cause": cause}


def run(seed: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    """One simulation; the explained rows of its unfair jobs."""
    if args.trace is not None:
        catalog = load_catalog(args.catalog)
        trace = read_trace(args.trace, catalog=catalog)
    else:
        catalog = None
        trace = generate_trace(args.jobs, jobs_per_hour=args.jobs_per_hour, seed=seed)
    rec = Recorder(get_policy("fairshare", mode="fast", priority=args.priority))
    until = None if args.until is None else args.until * 3600.0
    res = simulate(trace, args.cluster, rec, catalog=catalog, round_length=args.round_length, progress=False,
                   max_rounds=args.max_rounds, until=until, record_holds=True)
    first_start: dict[str, float] = {}
    for h in res.holds:
        for j in h.jobs:
            first_start[j] = min(first_start.get(j, h.start), h.start)
    rows = []
    for job in res.jobs:
        if not np.isfinite(job.finish) or not job.fair_throughput > 0:
            continue
        row = explain(job, rec.rounds.get(job.id, []), args.round_length, first_start.get(job.id))
        if row["rho"] > UNFAIR_RHO:
            alone = job.ideal_seconds
            # the simulator's classes (fairshare.sim.metrics): < one round, up to 1 h, over 1 h
            row["class"] = DURATION_CLASSES[0 if alone < args.round_length else 1 if alone <= 3600 else 2]
            rows.append({"seed": seed, **row})
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/results"))
    ap.add_argument("--priority", default="none", help="priority rule of the fairshare policy (default none)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--quick", action="store_true", help="30 jobs, one seed, capped rounds")
    ap.add_argument("--trace", type=Path, default=None, help="explain this trace's unfair jobs (one simulation)")
    ap.add_argument("--cluster", default=CLUSTER, help=f"with --trace: the cluster (default {CLUSTER})")
    ap.add_argument("--catalog", default="default", help="with --trace: the catalog (default: default)")
    ap.add_argument("--until", type=float, default=None, help="with --trace: horizon in simulated hours")
    ap.add_argument("--name", default=None, help="report file stem (default worst_jobs[_PRIORITY])")
    args = ap.parse_args(argv)
    if args.trace is None and (args.cluster != CLUSTER or args.catalog != "default" or args.until is not None):
        ap.error("--cluster, --catalog and --until go with --trace")
    args.jobs, args.jobs_per_hour, args.round_length, args.max_rounds = 300, 4.0, 360.0, None
    if args.trace is not None:
        args.seeds = [0]
    if args.quick:
        args.jobs, args.jobs_per_hour, args.seeds, args.max_rounds = 30, 12.0, args.seeds[:1], 400
    rows = [r for seed in args.seeds for r in run(seed, args)]
    rows.sort(key=lambda r: (-r["rho"], r["seed"], r["id"]))
    cols: tuple[str, ...] = ("seed", "id", "model", "scale", "rho", "jct_h", "ideal_h", "rounds", "first_wait_s",
                             "unplaced_rounds", "below_fair_rounds", "max_deficit", "last_deficit", "cause")
    if args.trace is not None:
        cols += ("class",)
    what = (f"the trace {args.trace.name} on {args.cluster} (catalog {args.catalog}"
            f"{'' if args.until is None else f', until {args.until:g} h'})" if args.trace is not None else
            f"{args.jobs} jobs at {args.jobs_per_hour:g} jobs/h on {CLUSTER}, seeds {args.seeds}")
    lines = [f"Unfair jobs (rho > {UNFAIR_RHO}) of the fairshare policy, priority {args.priority!r}, {what}", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(f"{r[c]:.3g}" if isinstance(r[c], float) else str(r[c]) for c in cols) + " |")
    counts = Counter(r["cause"] for r in rows)
    lines += ["", "causes: " + ", ".join(f"{c} {counts.get(c, 0)}" for c in CAUSES) + f" (of {len(rows)} unfair jobs)"]
    if args.trace is not None:
        lines += ["", "| duration class (alone on the fastest type) | " + " | ".join(CAUSES) + " | unfair jobs |",
                  "|:---|" + "---:|" * (len(CAUSES) + 1)]
        for cls in DURATION_CLASSES:
            n = Counter(r["cause"] for r in rows if r["class"] == cls)
            lines.append(f"| {cls} | " + " | ".join(str(n.get(c, 0)) for c in CAUSES) + f" | {sum(n.values())} |")
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.name or ("worst_jobs" + ("" if args.priority == "none" else f"_{args.priority}"))
    (args.out / f"{stem}.md").write_text("\n".join(lines) + "\n")
    with (args.out / f"{stem}.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(cols))
        w.writeheader()
        w.writerows({c: r[c] for c in cols} for r in rows)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
