"""What a live scheduler's calls cost: a round, a warm round and an event plan, incremental engine against full.

Scenario (per size ``n``): :func:`fairshare.testing.random_rounds.random_round` (``n`` jobs on ``n/2`` GPUs of four
types, about four co-location candidates per job); every job has a restart cost of 30 s and a known
``remaining_iterations``, and the engine runs its defaults (mode ``fast``, priority ``remaining``, shortfall price
``finish-time``, 360-s rounds). Two engines get the same calls: ``Engine(..., incremental=True)`` and the full
path (``incremental=False``, every plan validates and builds the whole round); the full one commits the
progress the incremental one's plans gave, so that both carry the same deficits. They are timed in turn, call
by call, so that load on a shared machine falls on both alike.

- ``round``: :meth:`Engine.plan` after :meth:`Engine.commit` of a whole round in which 2 % of the jobs finished
  and as many arrived (deficits move for every job);
- ``event``: :meth:`Engine.event` 30 s into a round, one job finished and one arrived (the pending plan is
  committed for 30 s and the rest of the round planned, with every running job's current placement);
- ``cold``: the first plan of the incremental engine (nothing kept yet).

A third engine, incremental with ``options={"warm_start": True}`` (kept jobs, the LP solved by pricing from the
previous round's prices and basis instead of the kept LP: :mod:`fairshare.methods.warm`), gets the same calls
and is reported as ``priced``.

Reported per size and call: median and p90 milliseconds of each engine, the ratio of medians, the simplex
iterations of the kept LP, and the largest relative difference between the two engines' LP optima (0 up to
HiGHS's tolerances: the kept LP is the same LP). Writes ``live_engine.md`` and ``.csv`` under ``--out``.

Usage::

    python benchmarks/live_engine.py --out /tmp/live              # 512, 2,048 and 8,192 jobs
    python benchmarks/live_engine.py --sizes 16384 --rounds 2 --events 4 --name live_engine_16384 --out /tmp/live
    python benchmarks/live_engine.py --quick --out /tmp/live      # 256 jobs, a few calls (smoke test)
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from fairshare import Engine
from fairshare.testing.random_rounds import random_round

ROUND = 360.0
EVENT_AT = 30.0


def pool(n: int, seed: int) -> tuple[dict[str, int], list[dict[str, Any]], list[dict[str, Any]]]:
    """GPUs, jobs (the first ``n`` active, the rest arrive later) and candidate pairs."""
    doc = random_round(2 * n, seed=seed, num_gpus=n // 2).to_dict()
    jobs = doc["jobs"]
    rng = np.random.default_rng(seed)
    for job in jobs:
        job.pop("deficit", None)
        job["restart_seconds"] = 30.0
        job["remaining_iterations"] = float(rng.integers(100, 100_000))
    return doc["gpus"], jobs, doc.get("colocation", [])


def _timed(f: Any, *args: Any, **kw: Any) -> tuple[Any, float]:
    t = time.perf_counter()
    out = f(*args, **kw)
    return out, time.perf_counter() - t


def run(n: int, rounds: int, events: int, seed: int = 0) -> dict[str, list[tuple[float, ...]]]:
    """Times (incremental s, full s, iterations, LP difference, priced s) per call kind."""
    gpus, jobs, pairs = pool(n, seed)
    live = Engine(gpus)  # incremental by default
    full = Engine(gpus, incremental=False)
    priced = Engine(gpus, options={"warm_start": True})
    active, waiting = jobs[:n], jobs[n:]
    ids = {j["id"] for j in active}
    col = [c for c in pairs if all(j in ids for j in c["jobs"])]
    out: dict[str, list[tuple[float, ...]]] = {"cold": [], "round": [], "event": []}
    a, t_live = _timed(live.plan, active, col)
    b, t_full = _timed(full.plan, active, col)
    c, t_priced = _timed(priced.plan, active, col)
    out["cold"].append((t_live, t_full, live._kept_lp.iterations, 0.0, t_priced))
    rng = np.random.default_rng(seed + 1)
    churn = max(1, n // 50)
    for r in range(rounds):
        for _ in range(events):  # events within the round
            jobs_now = list(live.last_jobs) or active
            gone = [jobs_now[int(rng.integers(len(jobs_now)))]["id"]]
            new, waiting = waiting[:1], waiting[1:]
            new_ids = {j["id"] for j in new}
            alive = {j["id"] for j in jobs_now} - set(gone) | new_ids
            cand = [c for c in pairs if all(j in alive for j in c["jobs"]) and any(j in new_ids for j in c["jobs"])]
            progress = {j: float(x) for j, x in zip(a.job_ids, a.jobs.progress, strict=True)}
            first = (r + _) % 2 == 0  # alternate which engine goes first
            calls = [(live, {}), (full, {"progress": progress}), (priced, {"progress": progress})]
            res = {}
            for eng, extra in (calls if first else calls[::-1]):
                res[id(eng)] = _timed(eng.event, seconds=EVENT_AT, arrived=new, departed=gone, colocation=cand,
                                      **extra)
            (a, t_live), (b, t_full), (c, t_priced) = res[id(live)], res[id(full)], res[id(priced)]
            out["event"].append((t_live, t_full, live._kept_lp.iterations, _lp_difference(live, full), t_priced))
        # the end of the round: commit the rest, 2 % leave, 2 % arrive, plan the next round
        progress = {j: float(x) for j, x in zip(a.job_ids, a.jobs.progress, strict=True)}
        live.commit(a)
        full.commit(b, progress=progress)
        priced.commit(c, progress=progress)
        jobs_now = list(list(live.last_jobs))
        leave = set(rng.choice([j["id"] for j in jobs_now], size=churn, replace=False).tolist())
        new, waiting = waiting[:churn], waiting[churn:]
        jobs_next = [{k: v for k, v in j.items() if k != "current"} for j in jobs_now if j["id"] not in leave] + new
        alive = {j["id"] for j in jobs_next}
        col = [c for c in pairs if all(j in alive for j in c["jobs"])]
        res = {}
        for eng in ((live, full, priced) if r % 2 == 0 else (priced, full, live)):
            res[id(eng)] = _timed(eng.plan, jobs_next, col)
        (a, t_live), (b, t_full), (c, t_priced) = res[id(live)], res[id(full)], res[id(priced)]
        out["round"].append((t_live, t_full, live._kept_lp.iterations, _lp_difference(live, full), t_priced))
    return out


def _lp_difference(live: Engine, full: Engine) -> float:
    """Relative difference of the two plans' LP optima, from the incremental engine's kept LP and a cold solve."""
    from fairshare.formulation import build_model
    from fairshare.methods.lp import solve_relaxation
    from fairshare.methods.options import SolveOptions
    jobs, col = list(live.last_jobs), list(live.last_colocation)
    model = build_model(full.problem(jobs, col, round_seconds=full.pending_seconds))
    cold = solve_relaxation(model, model.tightened_lp(), SolveOptions()).objective
    return abs(live._kept_lp.objective - cold) / max(1.0, abs(cold))


def summarise(n: int, out: dict[str, list[tuple[float, ...]]]) -> list[dict[str, Any]]:
    """One row per call kind: medians, p90s, their ratio, iterations and the largest LP difference."""
    rows = []
    for kind, samples in out.items():
        if not samples:
            continue
        arr = np.array(samples)
        rows.append({"jobs": n, "gpus": n // 2, "call": kind, "calls": len(samples),
                     "incremental_ms": round(float(np.median(arr[:, 0])) * 1e3, 2),
                     "incremental_p90_ms": round(float(np.percentile(arr[:, 0], 90)) * 1e3, 2),
                     "full_ms": round(float(np.median(arr[:, 1])) * 1e3, 2),
                     "full_p90_ms": round(float(np.percentile(arr[:, 1], 90)) * 1e3, 2),
                     "ratio": round(float(np.median(arr[:, 0]) / np.median(arr[:, 1])), 3),
                     "priced_ms": round(float(np.median(arr[:, 4])) * 1e3, 2),
                     "iterations": int(np.median(arr[:, 2])),
                     "lp_difference": float(arr[:, 3].max())})
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run the sizes, write ``<name>.md`` and ``.csv`` (``live_engine`` unless ``--name`` says otherwise)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[512, 2048, 8192])
    ap.add_argument("--rounds", type=int, default=4, help="rounds per size (default 4)")
    ap.add_argument("--events", type=int, default=5, help="events per round (default 5)")
    ap.add_argument("--quick", action="store_true", help="256 jobs, 2 rounds of 2 events")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--name", default="live_engine", help="report file stem (default live_engine)")
    args = ap.parse_args(argv)
    sizes, rounds, events = ([256], 2, 2) if args.quick else (args.sizes, args.rounds, args.events)
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    load_start = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    for n in sizes:
        t0 = time.perf_counter()
        rows += summarise(n, run(n, rounds, events))
        print(f"[{time.perf_counter() - t0:7.1f} s] {n} jobs done", file=sys.stderr, flush=True)
    with open(args.out / f"{args.name}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    name_arg = "" if args.name == "live_engine" else f" --name {args.name}"
    lines = ["# Live engine: a round, a warm round and an event plan (incremental engine against full)", "",
             f"`python benchmarks/live_engine.py --sizes {' '.join(map(str, sizes))} --rounds {rounds} "
             f"--events {events}{name_arg}`; medians of the calls, the three engines timed in turn in one run "
             f"({time.gmtime().tm_mday} {time.strftime('%B %Y', time.gmtime())}, load average {load_start:.1f} "
             "at the start and "
             f"{os.getloadavg()[0] if hasattr(os, 'getloadavg') else float('nan'):.1f} at the end on a 2-core "
             "machine: compare the columns, not the seconds).", "",
             "| jobs | GPUs | call | calls | incremental ms (p90) | full ms (p90) | incremental / full "
             "| incremental + warm_start ms | kept-LP iterations | LP optimum difference |",
             "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['jobs']:,} | {r['gpus']:,} | {r['call']} | {r['calls']} | {r['incremental_ms']} "
                     f"({r['incremental_p90_ms']}) | {r['full_ms']} ({r['full_p90_ms']}) | {r['ratio']} "
                     f"| {r['priced_ms']} | {r['iterations']} | {r['lp_difference']:.1e} |")
    (args.out / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
