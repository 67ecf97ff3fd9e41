"""Huge rounds: ``fast`` at 65,536 jobs whole and split, and split rounds up to 1,048,576 jobs on a Dask cluster.

Every round is ``random_round(n, seed=0)`` (4 GPU types, ``n / 2`` GPUs, gangs 1/2/4/8, about 4 co-location
candidates per job, half the jobs with carried deficits). Each measurement runs in a fresh spawned process, so
that its peak resident memory (``ru_maxrss``) is its own, and is timed from the validated
:class:`~fairshare.problem.RoundProblem` to the :class:`~fairshare.allocation.Allocation` (model building
included; validating a round document is not: 0.55 s at 65,536 jobs, see docs/performance.md).

Variants (``--variants``, any of):

``whole-crossover``
    ``allocate(p, mode="fast", lp_algorithm="ipm")``: the whole round, interior point *with* crossover (what
    ``auto`` did at every size above 20,000 columns before interior point without crossover).
``whole``
    ``allocate(p, mode="fast")``: the whole round with today's defaults (interior point without crossover from
    150,000 columns).
``split-K``
    ``partitions=K`` (``K = n / 8192`` when written ``split``), the parts one after another in the process.
``dask-K``
    ``partitions=K`` (``K = n / 8192`` when written ``dask``) on a Dask ``LocalCluster`` of ``--workers``
    worker processes with one thread each, started before the timing (a scheduler keeps its cluster).
``split[-K]-norepair``, ``dask[-K]-norepair``
    The same without the boundary repair after the merge (``fairshare.methods.partition.REPAIR_ROUNDS = 0``
    in the measuring process): the split as it was before the repair, measured in the same session.

Reported per run: seconds, their split into model and split (``build``: the parts are sent as they are built)
and parts, merge and repair (``solve``),
objective, certified gap (what the allocation reports), the objective's shortfall against the ``whole`` run of
the same size when there is one (``(obj_whole - obj) / |obj_whole|``), the value loss against the whole run's
certified bound, peak RSS of the process and of each Dask worker, and the bytes of the largest part's model
pickled (what the client sends a worker for each part).

Outputs in ``--out`` (default ``docs/results``): ``huge_rounds.csv`` and ``huge_rounds.md``.

Usage::

    python benchmarks/bench_huge_rounds.py --sizes 65536 --variants whole-crossover whole split-8 dask-8
    python benchmarks/bench_huge_rounds.py --sizes 65536 262144 1048576 --variants dask  # the scaling curve
    python benchmarks/bench_huge_rounds.py --quick      # 16,384 jobs, whole and dask-2 (about 30 s)
    PYTHONPATH=/path/to/other/checkout python benchmarks/bench_huge_rounds.py --name before --label "commit X"
"""

from __future__ import annotations

import argparse
import csv
import multiprocessing
import pickle
import resource
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

FIELDS = ["jobs", "gpus", "columns", "variant", "partitions", "workers", "seconds", "build_s", "solve_s",
          "split_s", "parts_s", "merge_s", "repair_s", "repaired", "objective", "value_gain", "bound", "mip_gap",
          "vs_whole", "loss_vs_bound", "rss_mib", "worker_rss_mib", "part_bytes", "message"]


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kilobytes on Linux


def parse_variant(name: str, n: int) -> tuple[str, int, bool]:
    """``(kind, parts, repair)`` of a variant name (see the module documentation)."""
    base = name.removesuffix("-norepair")
    kind, _, k = base.partition("-")
    if base in ("whole", "whole-crossover"):
        return base, 1, False
    if kind not in ("split", "dask") or not (k == "" or k.isdigit()):
        raise ValueError(f"`variant` = {name!r}: unknown (whole, whole-crossover, split[-K][-norepair], "
                         "dask[-K][-norepair])")
    return kind, int(k) if k else max(2, n // 8192), base == name


def measure(n: int, variant: str, workers: int) -> dict[str, Any]:
    """One run in this process (call it in a fresh one: :func:`_in_child`)."""
    from fairshare import allocate
    from fairshare.formulation import build_model
    from fairshare.methods import partition
    from fairshare.testing.random_rounds import random_round

    kind, parts, repair = parse_variant(variant, n)
    p = random_round(n, seed=0)
    allocate({"gpus": {"A": 1}, "jobs": []})  # imports outside the timing
    merged: list[Any] = []
    solve_parts = partition.solve_parts

    def recorded(*args: Any, **kwargs: Any) -> Any:
        m = solve_parts(*args, **kwargs)
        merged.append(m)
        return m

    partition.solve_parts = recorded  # keeps the split, parts and merge times of the round
    if not repair:
        partition.REPAIR_ROUNDS = 0  # the split without the boundary repair (in this spawned process only)
    client = cluster = None
    executor = None
    if kind == "dask":
        from dask.distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
        executor = client.get_executor()
    opts: dict[str, Any] = {"lp_algorithm": "ipm"} if kind == "whole-crossover" else {}
    if parts > 1:
        opts["partitions"] = parts
    try:
        t = time.perf_counter()
        a = allocate(p, mode="fast", executor=executor, **opts)
        seconds = time.perf_counter() - t
        worker_rss = None
        if client is not None:
            rss = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)
            worker_rss = max(rss.values())
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
    row: dict[str, Any] = {"jobs": n, "gpus": p.total_gpus, "variant": variant, "partitions": parts,
                           "workers": workers if kind == "dask" else 1, "seconds": seconds,
                           "build_s": a.report.build_seconds, "solve_s": a.report.solve_seconds,
                           "objective": a.values.objective,
                           "value_gain": a.values.value_gain, "bound": a.report.bound, "mip_gap": a.report.mip_gap,
                           "rss_mib": _rss_mib(), "worker_rss_mib": worker_rss, "message": a.report.message}
    if merged:
        m = merged[-1]
        row.update(split_s=m.split_seconds, parts_s=m.parts_seconds, merge_s=m.merge_seconds,
                   repair_s=getattr(m, "repair_seconds", None), repaired=getattr(m, "repaired", None),
                   part_bytes=max(len(pickle.dumps(part.model)) for part in m.parts))
    row["columns"] = build_model(p).columns.num if n <= 65536 else None
    return row


def _in_child(fn: Callable[..., dict[str, Any]], *args: object) -> dict[str, Any]:
    """``fn(*args)`` in a fresh spawned process (its own peak memory, no inherited HiGHS threads)."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as ex:
        return ex.submit(fn, *args).result()


def run(sizes: list[int], variants: list[str], workers: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for n in sizes:
        for v in variants:
            t = time.perf_counter()
            r = _in_child(measure, n, v, workers)
            rows.append(r)
            print(f"[huge] N={n} {v}: {r['seconds']:.2f} s, gap {r['mip_gap']:.2e}, objective {r['objective']:.8g}, "
                  f"{r['rss_mib']:.0f} MiB (child {time.perf_counter() - t:.1f} s)", file=sys.stderr, flush=True)
        whole = next((r for r in rows if r["jobs"] == n and r["variant"] == "whole"), None)
        for r in rows:
            if r["jobs"] == n and whole is not None:
                r["vs_whole"] = (whole["objective"] - r["objective"]) / abs(whole["objective"])
                gain_bound = whole["bound"] - (whole["objective"] - whole["value_gain"])
                r["loss_vs_bound"] = (gain_bound - r["value_gain"]) / gain_bound
    return rows


def _cell(v: Any, fmt: str) -> str:
    return "-" if v is None or v == "" else format(v, fmt)


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| jobs | GPUs | variant | parts | workers | seconds | model + split s | parts s | merge s | repair s "
             "| certified gap | objective below whole | value loss vs whole's bound | peak RSS MiB | per worker MiB "
             "| part pickled MB |",
             "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        part_mb = r.get("part_bytes")
        lines.append(
            f"| {r['jobs']} | {r['gpus']} | {r['variant']} | {r['partitions']} | {r['workers']} "
            f"| {r['seconds']:.2f} | {_cell(r['build_s'], '.2f')} | {_cell(r.get('parts_s'), '.2f')} "
            f"| {_cell(r.get('merge_s'), '.2f')} | {_cell(r.get('repair_s'), '.2f')} | {r['mip_gap']:.2e} "
            f"| {_cell(r.get('vs_whole'), '.2e')} "
            f"| {_cell(r.get('loss_vs_bound'), '.2e')} | {r['rss_mib']:.0f} | {_cell(r.get('worker_rss_mib'), '.0f')} "
            f"| {_cell(part_mb / 1e6 if part_mb else None, '.1f')} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[65536])
    ap.add_argument("--variants", nargs="+", default=["whole-crossover", "whole", "split-8", "dask-8"])
    ap.add_argument("--workers", type=int, default=2, help="Dask worker processes (default 2)")
    ap.add_argument("--quick", action="store_true", help="16,384 jobs, whole and dask-2")
    ap.add_argument("--out", type=Path, default=Path("docs/results"))
    ap.add_argument("--name", default="huge_rounds", help="report file stem (default huge_rounds)")
    ap.add_argument("--label", default=None,
                    help="a line above the table saying which code was measured (e.g. a commit)")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.variants = [16384], ["whole", "dask-2"]
    for v in args.variants:
        parse_variant(v, 1)
    rows = run(args.sizes, args.variants, args.workers)
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / f"{args.name}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    md = table(rows)
    if args.label:
        md = f"Code measured: {args.label}.\n\n" + md
    (args.out / f"{args.name}.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
