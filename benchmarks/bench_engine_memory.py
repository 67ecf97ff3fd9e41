"""Memory of a long-running Engine: resident set size (RSS) over many rounds of a changing cluster.

A scheduler keeps one :class:`fairshare.Engine` for weeks. Each round here has random arrivals (whole-GPU
gangs and part-of-a-GPU requests) and departures on a cluster of seven nodes; one plan and one commit per round,
``fast`` mode, as a service would run it. RSS is read from ``/proc/self/status`` (Linux) every ``--every``
rounds; the Python heap is measured with ``tracemalloc`` over the same span when ``--tracemalloc`` is given
(slower).

    PYTHONPATH=. python benchmarks/bench_engine_memory.py --rounds 100000 --every 10000

Prints one line per checkpoint and, at the end, the growth per 1,000 rounds over the second half of the run
(after the allocator's pools have warmed up). Not part of the default test run (it takes minutes); the
numbers are in docs/reliability.md, "Long-running engines".
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
import tracemalloc

from fairshare import Engine

NODES = [{"id": f"v{i}", "gpu": "V100", "gpus": 4} for i in range(4)] + \
        [{"id": f"k{i}", "gpu": "K80", "gpus": 2} for i in range(3)]


def rss_mb() -> float:
    """Resident set size of this process in MB (``VmRSS``), or nan where ``/proc`` is missing."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def run(rounds: int, every: int, seed: int = 0, heap: bool = False,
        nodes: bool = True) -> list[tuple[int, float, float]]:
    """Run ``rounds`` rounds; (round, RSS MB, Python heap KiB or nan) at every checkpoint.

    ``nodes=False``: the same cluster by GPU type only, so that plans take the incremental engine's path (kept
    jobs and kept LP) instead of the full one that binding to nodes takes.
    """
    engine = Engine({"V100": 16, "K80": 6}, nodes=NODES if nodes else None, mode="fast", epsilon=0.1,
                    priority="none")
    rng = random.Random(seed)
    jobs: dict[str, dict[str, object]] = {}
    next_id = 0
    out = []
    if heap:
        tracemalloc.start()
    for r in range(1, rounds + 1):
        for _ in range(rng.choice([0, 1, 2])):
            jobs[f"j{next_id}"] = {"id": f"j{next_id}", "scale": rng.choice([1, 1, 2, 4, 0.5, 0.25]),
                                   "throughput": {"V100": rng.uniform(5, 20), "K80": rng.uniform(1, 5)}}
            next_id += 1
        for j in list(jobs):
            if rng.random() < 0.05:
                del jobs[j]
        engine.commit(engine.plan(list(jobs.values())))
        if r % every == 0:
            gc.collect()
            used = tracemalloc.get_traced_memory()[0] / 1024 if heap else float("nan")
            out.append((r, rss_mb(), used))
            print(f"round {r:>7,}: RSS {out[-1][1]:7.1f} MB, Python heap {used:9.1f} KiB, {len(jobs)} jobs",
                  flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=100_000)
    ap.add_argument("--every", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tracemalloc", action="store_true", help="also measure the Python heap (slower)")
    ap.add_argument("--no-nodes", action="store_true",
                    help="the cluster by GPU type only: the incremental engine's path (kept jobs and LP)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    points = run(args.rounds, args.every, args.seed, args.tracemalloc, nodes=not args.no_nodes)
    seconds = time.perf_counter() - t0
    half = [p for p in points if p[0] >= args.rounds / 2]
    if len(half) >= 2:
        (r0, m0, _), (r1, m1, _) = half[0], half[-1]
        print(f"{args.rounds:,} rounds in {seconds:.0f} s; RSS {points[0][1]:.1f} MB at round {points[0][0]:,}, "
              f"{points[-1][1]:.1f} MB at the end; second half: {1000 * (m1 - m0) / (r1 - r0):+.3f} MB per 1,000 "
              "rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
