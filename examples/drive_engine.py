"""Drive fairshare from another scheduler: a worked example of :class:`fairshare.engine.Engine`.

A toy cluster (2 K80, 2 P100, 2 V100) and eight jobs that arrive and finish over ten rounds of six minutes.
Each round the "scheduler" below

1. lists the jobs active now (arrived, unfinished) and the co-location candidates among them,
2. asks ``Engine.plan`` for this round's placement (the engine fills in each job's carried deficit),
3. "executes" the placement: each placed job runs ``round_length`` seconds at its planned throughput, except a
   straggler (``lm-2`` runs at 50 % of its planned speed in rounds 2 and 3, as if its host were throttled),
4. tells the engine what was actually delivered, ``Engine.commit(alloc, progress={job: rho})`` with
   ``rho = delivered throughput / Tfair`` (jobs not listed are taken as planned),
5. saves the engine's state (``Engine.save``: atomic JSON), and
6. after round ``--restart-at`` (default 4) throws the engine away and reloads it from the file
   (``Engine.load``), as after a crash of the scheduler.

``status == "no_solution"`` (only possible in ``exact`` mode with a time limit) would mean "run nothing
new": the example then keeps every job idle and commits the round, so every job carries its full need.

Outputs in ``--out`` (default: a new temporary folder): ``state.json`` (the engine state after the last
round) and ``log.json`` (one record per round). The script runs the same ten rounds a second time without the
restart and checks that every round's deficits are identical (exit status 1 if not). It prints one line per
round: active jobs, placements (``a+b@V100`` is a co-located pair, ``x2`` a 2-GPU gang), E/C, the jobs that
were short-changed, and the largest carried deficit.

Usage::

    python examples/drive_engine.py               # about 1 s
    python examples/drive_engine.py --quick       # the same (the example is already small)
    python examples/drive_engine.py --mode exact --restart-at 6 --out /tmp/drive
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from fairshare import Status
from fairshare.engine import Engine

# The engine's state file records the order of the GPU types (`gpu_order`), so a restart is bit-for-bit
# identical to an uninterrupted run whatever the order given here.
CLUSTER = {"K80": 2, "P100": 2, "V100": 2}
ROUND_SECONDS = 360.0
EPSILON = 0.1

# id, scale, weight, alone throughput (iterations/s), total iterations, arrival round
JOBS: list[dict[str, Any]] = [
    {"id": "resnet18-1", "scale": 1, "weight": 1.0, "throughput": {"V100": 24.1, "P100": 22.3, "K80": 7.1},
     "iterations": 20000, "arrival": 0},
    {"id": "lm-2", "scale": 1, "weight": 1.0, "throughput": {"V100": 64.7, "P100": 58.2, "K80": 17.1},
     "iterations": 90000, "arrival": 0},
    {"id": "transformer-3", "scale": 1, "weight": 1.0, "throughput": {"V100": 8.6, "P100": 5.1, "K80": 1.8},
     "iterations": 9000, "arrival": 0},
    {"id": "resnet50-4", "scale": 2, "weight": 1.0, "throughput": {"V100": 7.9, "P100": 4.7},
     "iterations": 8000, "arrival": 1},
    {"id": "a3c-5", "scale": 1, "weight": 1.0, "throughput": {"V100": 10.2, "P100": 9.1, "K80": 6.3},
     "iterations": 12000, "arrival": 2},
    {"id": "cyclegan-6", "scale": 1, "weight": 1.0, "throughput": {"V100": 5.4, "P100": 3.9, "K80": 1.2},
     "iterations": 4000, "arrival": 3},
    {"id": "recommend-7", "scale": 1, "weight": 2.0, "throughput": {"V100": 120.0, "P100": 110.0, "K80": 60.0},
     "iterations": 190000, "arrival": 5},
    {"id": "lm-8", "scale": 2, "weight": 1.0, "throughput": {"V100": 90.0, "P100": 70.0},
     "iterations": 90000, "arrival": 6},
]

# candidate pairs (measured interference): both jobs slow down when they share a GPU
PAIRS: list[dict[str, Any]] = [
    {"jobs": ["resnet18-1", "lm-2"], "gpu": "V100", "throughput": [15.2, 41.0]},
    {"jobs": ["transformer-3", "a3c-5"], "gpu": "V100", "throughput": [6.1, 7.4]},
    {"jobs": ["a3c-5", "recommend-7"], "gpu": "P100", "throughput": [6.0, 80.0]},
    {"jobs": ["resnet50-4", "lm-8"], "gpu": "V100", "throughput": [5.0, 60.0]},
]

STRAGGLER = {"lm-2": (0.5, {2, 3})}  # job -> (speed factor, rounds)


def run(rounds: int, out: Path, *, restart_at: int | None = 4, mode: str = "fast") -> list[dict[str, Any]]:
    """Run the toy scheduler for ``rounds`` rounds; returns one log record per round.

    ``restart_at``: after that round's commit and save, the engine is reloaded from ``out / "state.json"``
    (``None``: never).
    """
    out.mkdir(parents=True, exist_ok=True)
    state_path = out / "state.json"
    engine = Engine(CLUSTER, mode=mode, epsilon=EPSILON)
    remaining = {j["id"]: float(j["iterations"]) for j in JOBS}
    log: list[dict[str, Any]] = []
    for r in range(rounds):
        # 1. the jobs active now, as round-document job objects (no "deficit" key: the engine owns deficits)
        active = [j for j in JOBS if j["arrival"] <= r and remaining[j["id"]] > 0]
        jobs = [{"id": j["id"], "scale": j["scale"], "weight": j["weight"], "throughput": j["throughput"]}
                for j in active]
        ids = {j["id"] for j in active}
        pairs = [p for p in PAIRS if set(p["jobs"]) <= ids]
        if not jobs:
            break
        # 2. plan
        alloc = engine.plan(jobs, pairs)
        # 3. execute (here: simulate). Nothing runs on no_solution; every job then carries its full need.
        index = {jid: i for i, jid in enumerate(alloc.job_ids)}
        delivered: dict[str, float] = {}
        slow: list[str] = []
        finished: list[str] = []
        for jid, i in index.items():
            planned_tput = 0.0 if alloc.status == Status.NO_SOLUTION else float(alloc.jobs.throughput[i])
            factor, when = STRAGGLER.get(jid, (1.0, set()))
            speed = factor if r in when and planned_tput > 0 else 1.0
            tput = planned_tput * speed
            if speed < 1.0:
                slow.append(jid)
                # 4. what the job actually received, in fair-share units
                delivered[jid] = tput / float(alloc.jobs.fair_throughput[i])
            remaining[jid] -= tput * ROUND_SECONDS
            if remaining[jid] <= 0:
                finished.append(jid)
        deficits = engine.commit(alloc, progress=delivered)
        # 5. persist the fairness history
        engine.save(state_path)
        event = ""
        # 6. a crash and restart of the scheduler: everything but the state file is lost
        if restart_at is not None and r == restart_at:
            engine = Engine.load(state_path)
            event = "restart"
        log.append({
            "round": r, "active": sorted(ids), "status": str(alloc.status), "utilization": alloc.values.utilization,
            "placements": [{"jobs": list(p.jobs), "gpu": p.gpu, "gpus": p.gpus} for p in alloc.placements],
            "planned_progress": {j: float(alloc.jobs.progress[i]) for j, i in index.items()},
            "delivered_progress": delivered, "deficits": deficits, "stragglers": slow, "finished": finished,
            "event": event})
    (out / "log.json").write_text(json.dumps(log, indent=1))
    return log


def describe(rec: dict[str, Any]) -> str:
    """One compact line for a round record."""
    places = " ".join("+".join(p["jobs"]) + f"@{p['gpu']}" + (f"x{p['gpus']}" if p["gpus"] > 1 else "")
                      for p in rec["placements"])
    owed = {j: d for j, d in rec["deficits"].items() if d > 1e-9}
    worst = max(owed.items(), key=lambda kv: kv[1]) if owed else ("-", 0.0)
    notes = []
    if rec["stragglers"]:
        notes.append("straggler " + ",".join(rec["stragglers"]))
    if rec["finished"]:
        notes.append("done " + ",".join(rec["finished"]))
    if rec["event"]:
        notes.append(rec["event"])
    return (f"round {rec['round']:2d} | {len(rec['active'])} jobs | {rec['status']:<9} | E/C {rec['utilization']:.2f} "
            f"| owed {len(owed)}, max D {worst[1]:.2f} ({worst[0]}) | {places}" + (f" | {'; '.join(notes)}"
                                                                                  if notes else ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10, help="rounds to run (default 10)")
    ap.add_argument("--restart-at", type=int, default=4, help="reload the engine after this round (-1: never)")
    ap.add_argument("--mode", choices=("fast", "exact"), default="fast", help="solve mode (default fast)")
    ap.add_argument("--out", type=Path, default=None, help="folder for state.json and log.json (default: temp)")
    ap.add_argument("--quick", action="store_true", help="the same run (the example is already small)")
    args = ap.parse_args(argv)
    out = args.out if args.out is not None else Path(tempfile.mkdtemp(prefix="drive_engine-"))
    restart = None if args.restart_at < 0 else args.restart_at
    log = run(args.rounds, out, restart_at=restart, mode=args.mode)
    for rec in log:
        print(describe(rec))
    control = run(args.rounds, out / "no-restart", restart_at=None, mode=args.mode)
    same = [a["deficits"] for a in log] == [b["deficits"] for b in control]
    print(f"deficits identical to an uninterrupted run: {'yes' if same else 'NO'}; state in {out / 'state.json'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
