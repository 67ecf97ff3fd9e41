"""Benchmark of one scheduling round: ``fast``, ``lp`` and ``exact`` on random catalog-shaped rounds.

Rounds come from :func:`fairshare.testing.random_rounds.random_round` (4 GPU types, gangs 1/2/4/8 with
70/10/15/5 %, about 4 co-location candidates per job, GPUs about N/2, half the jobs with carried deficits).
Each mode is timed in-process from the round *document* (a dict: validation, model building, solve and
rounding included), so the numbers are what a scheduler calling ``allocate(doc)`` sees. Every mode runs
on the same round in the same process, one after another, so the ratios (speed-up of ``fast`` over
``exact``) are less exposed to the noise of a shared machine than the absolute times.

Also reported: the value loss and efficiency ratio of ``fast`` against ``exact`` (spec round-problem.md
section 3) wherever ``exact`` proves optimality within its limit, and, as an ablation, rounding the plain
section 3 relaxation instead of the tightened one (``plain-round``), and ``fast`` with its LP method forced
to dual simplex (``fast-dual``) or interior point (``fast-ipm``) instead of the size-based default.

Quality families (:data:`FAMILIES`): rounds where a small value gap can hide a large efficiency gap or where
rounding is hard: fairness weight lambda in {1, 10, 100} x epsilon in {0, 0.3} at 64 and 200 jobs, a 200-job
round with lambda = 1 and about 6 co-location candidates per job, 256-job rounds where every job has the same
throughputs, and 256-job rounds with weights from 1e-6 to 1e6. ``fast`` and ``exact`` on each; the table gives
the worst efficiency ratio and value loss per family.

Scale (``--scale``, not in the default run): 16,384, 32,768 and 65,536 jobs (half as many GPUs), one round
each, ``fast`` on the whole round and split into parts (:mod:`fairshare.methods.partition`), in the same
process and through a pool of worker processes, each variant in a fresh child process so that its peak
memory (``ru_maxrss``) is its own. Value loss is measured against the unsplit LP bound.

Profile (``--profile N ...``): where one ``fast`` round's time goes (document, model, LP arrays, LP,
rounding, polish; for a split round: split, parts, merge).

Usage::

    python benchmarks/bench_round.py                      # sizes and families (about 10 minutes on 2 cores)
    python benchmarks/bench_round.py --quick              # 64 and 256 jobs and two family rounds, one seed
    python benchmarks/bench_round.py --sizes 2048 --seeds 3 --families none
    python benchmarks/bench_round.py --scale --profile 2048 65536   # bench_round_scale.*, bench_round_profile.*
"""

from __future__ import annotations

import argparse
import csv
import multiprocessing
import resource
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from fairshare import allocate
from fairshare.formulation import build_model
from fairshare.methods import partition
from fairshare.methods.options import SolveOptions
from fairshare.methods.relax import round_relaxation
from fairshare.methods.rounding import greedy_round
from fairshare.problem import RoundProblem
from fairshare.solvers import solve_lp
from fairshare.testing.random_rounds import random_round

FIELDS = ["family", "jobs", "gpus", "pairs", "seed", "mode", "status", "total_s", "build_s", "solve_s", "objective",
          "efficiency", "shortfall", "value_loss", "eff_ratio", "mip_gap"]


def same_throughput_round(n: int, seed: int) -> RoundProblem:
    """A catalog-shaped round in which every job has the throughputs of job 0 (on every type)."""
    p = random_round(n, seed=seed)
    row = p.throughput[0].copy()
    row[row == 0] = row.max()
    slow = p.pair_throughput / p.throughput[p.pair_jobs, p.pair_gpu[:, None]]
    return p.replace(throughput=np.tile(row, (n, 1)), pair_throughput=slow * row[p.pair_gpu][:, None])


def wide_weight_round(n: int, seed: int) -> RoundProblem:
    """A catalog-shaped round with weights log-uniform from 1e-6 to 1e6."""
    p = random_round(n, seed=seed)
    return p.replace(weight=10.0 ** np.random.default_rng(seed + 1000).uniform(-6.0, 6.0, n))


def fractional_round(n: int, seed: int) -> RoundProblem:
    """A catalog-shaped round in which 30 % of the one-GPU jobs ask for 0.1-0.7 of a GPU (steps of 0.05)."""
    p = random_round(n, seed=seed)
    rng = np.random.default_rng(seed + 2000)
    one = np.flatnonzero(p.scale == 1)
    part = rng.choice(one, size=int(0.3 * len(one)), replace=False)
    scale = p.scale.astype(np.float64)
    scale[part] = np.round(rng.uniform(0.1, 0.7, len(part)) / 0.05) * 0.05
    keep = ~np.isin(p.pair_jobs, part).any(axis=1)  # a job asking for part of a GPU is no pair candidate
    return p.replace(scale=scale, pair_jobs=p.pair_jobs[keep], pair_gpu=p.pair_gpu[keep],
                     pair_throughput=p.pair_throughput[keep])


def _knobs(n: int, lam: float, eps: float) -> Callable[[int], RoundProblem]:
    return lambda seed: random_round(n, seed=seed, fairness_weight=lam, epsilon=eps)


FAMILIES: dict[str, tuple[int, Callable[[int], RoundProblem]]] = {
    **{f"lambda={lam:g} eps={eps:g} n={n}": (n, _knobs(n, lam, eps))
       for lam in (1.0, 10.0, 100.0) for eps in (0.0, 0.3) for n in (64, 200)},
    "lambda=1, 6 pairs/job": (200, lambda seed: random_round(200, seed=seed, fairness_weight=1.0, pairs_per_job=6.0)),
    "same throughputs": (256, lambda seed: same_throughput_round(256, seed)),
    "weights 1e-6..1e6": (256, lambda seed: wide_weight_round(256, seed)),
    "fractional 30 %, n=256": (256, lambda seed: fractional_round(256, seed)),
    "fractional 30 %, n=1024": (1024, lambda seed: fractional_round(1024, seed)),
}
"""Quality families: name -> (jobs, round of a seed)."""

QUICK_FAMILIES = ("lambda=1, 6 pairs/job", "lambda=10 eps=0.3 n=64")


def plain_round(doc: dict) -> tuple[float, float, float]:
    """Ablation: greedy rounding of section 3's relaxation (no tightening, no polish)."""
    t = time.perf_counter()
    p = RoundProblem.from_dict(doc)
    m = build_model(p)
    lp = m.section3_lp()
    out = solve_lp(lp)
    x = greedy_round(m, out.x[: lp.num_placement_cols])
    ev = m.evaluate(x)
    return time.perf_counter() - t, float(ev.objective), float(ev.efficiency)


def bench_one(n: int, seed: int, exact_limit: float, rows: list[dict]) -> None:
    p = random_round(n, seed=seed)
    doc = p.to_dict()
    base = {"family": "catalog", "jobs": n, "gpus": p.total_gpus, "pairs": p.num_pairs, "seed": seed}
    results = {}
    for mode, opts in (("fast", {}), ("fast-dual", {"lp_algorithm": "dual"}), ("fast-ipm", {"lp_algorithm": "ipm"}),
                       ("lp", {}),
                       ("exact", {"time_limit": exact_limit})):
        t = time.perf_counter()
        a = allocate(doc, mode=mode.split("-")[0], **opts)
        total = time.perf_counter() - t
        results[mode] = a
        rows.append({**base, "mode": mode, "status": str(a.status), "total_s": total, "build_s": a.report.build_seconds,
                     "solve_s": a.report.solve_seconds, "objective": a.values.objective,
                     "efficiency": a.values.efficiency, "shortfall": a.values.shortfall, "mip_gap": a.report.mip_gap})
    total, obj, eff = plain_round(doc)
    rows.append({**base, "mode": "plain-round", "status": "heuristic", "total_s": total, "objective": obj,
                 "efficiency": eff})
    ex = results["exact"]
    if str(ex.status) == "optimal":
        for r in rows[-6:]:
            if r["mode"] in ("fast", "fast-dual", "fast-ipm", "plain-round"):
                r["value_loss"] = (ex.values.objective - r["objective"]) / (ex.values.objective - ex.values.obj_null)
                r["eff_ratio"] = r["efficiency"] / ex.values.efficiency


def bench_family(name: str, n: int, make: Callable[[int], RoundProblem], seed: int, exact_limit: float,
                 rows: list[dict]) -> None:
    """``fast`` and ``exact`` on one round of a quality family (timed from the validated round)."""
    p = make(seed)
    base = {"family": name, "jobs": n, "gpus": p.total_gpus, "pairs": p.num_pairs, "seed": seed}
    out = {}
    for mode, opts in (("fast", {}), ("exact", {"time_limit": exact_limit})):
        t = time.perf_counter()
        a = allocate(p, mode=mode, **opts)
        out[mode] = a
        rows.append({**base, "mode": mode, "status": str(a.status), "total_s": time.perf_counter() - t,
                     "build_s": a.report.build_seconds, "solve_s": a.report.solve_seconds,
                     "objective": a.values.objective, "efficiency": a.values.efficiency,
                     "shortfall": a.values.shortfall, "mip_gap": a.report.mip_gap})
    ex, fa = out["exact"], out["fast"]
    # against exact's placement whatever its status (the status column says whether it is proven optimal)
    rows[-2]["value_loss"] = (ex.values.objective - fa.values.objective) / (ex.values.objective - ex.values.obj_null)
    rows[-2]["eff_ratio"] = fa.values.efficiency / ex.values.efficiency if ex.values.efficiency > 0 else float("nan")


def summarise_families(rows: list[dict]) -> str:
    """Per family and size: exact's statuses, median times, value loss (median / max), min E ratio."""
    lines = ["| family | jobs | rounds | exact status | fast s (median) | exact s (median) "
             "| value loss (median / max) | E ratio (min) |",
             "|---|---:|---:|---|---:|---:|---|---:|"]
    keys = list(dict.fromkeys((r["family"], r["jobs"]) for r in rows if r["family"] != "catalog"))
    losses, ratios = [], []
    for fam, n in keys:
        rs = [r for r in rows if r["family"] == fam and r["jobs"] == n]
        f = [r for r in rs if r["mode"] == "fast"]
        e = [r for r in rs if r["mode"] == "exact"]
        lo = [r["value_loss"] for r in f]
        ra = [r["eff_ratio"] for r in f]
        losses += lo
        ratios += ra
        statuses = ", ".join(f"{sum(r['status'] == st for r in e)} {st}" for st in sorted({r["status"] for r in e}))
        lines.append(f"| {fam} | {n} | {len(f)} | {statuses} | {np.median([r['total_s'] for r in f]):.3f} "
                     f"| {np.median([r['total_s'] for r in e]):.3f} | {np.median(lo):.2e} / {max(lo):.2e} "
                     f"| {min(ra):.4f} |")
    if losses:
        lines += ["", f"Worst over all {len(losses)} family rounds: value loss {max(losses):.2e}, "
                      f"efficiency ratio {min(ratios):.4f} (targets: at most 5.00e-03, at least 0.97)."]
    return "\n".join(lines) + "\n"


def summarise(rows: list[dict]) -> str:
    """Median over seeds per (jobs, mode); worst value loss; speed-up of fast over exact per round."""
    fam_rows = [r for r in rows if r.get("family", "catalog") != "catalog"]
    rows = [r for r in rows if r.get("family", "catalog") == "catalog"]
    lines = [("| jobs | GPUs | pairs | mode | status | total s (median) | build s | solve s | objective "
              "| shortfall | value loss (median / max) | E ratio (min) |"),
             "|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---|---:|"]
    sizes = sorted({r["jobs"] for r in rows})
    for n in sizes:
        for mode in ("fast", "fast-dual", "fast-ipm", "plain-round", "lp", "exact"):
            rs = [r for r in rows if r["jobs"] == n and r["mode"] == mode]
            if not rs:
                continue
            def med(k: str, rs: list[dict] = rs) -> float:
                return float(np.median([r[k] for r in rs if r.get(k) is not None]))

            statuses = ",".join(sorted({r["status"] for r in rs}))
            losses = [r["value_loss"] for r in rs if r.get("value_loss") is not None]
            ratios = [r["eff_ratio"] for r in rs if r.get("eff_ratio") is not None]
            loss = f"{np.median(losses):.2e} / {max(losses):.2e}" if losses else "-"
            ratio = f"{min(ratios):.4f}" if ratios else "-"
            build = f"{med('build_s'):.3f}" if mode != "plain-round" else "-"
            solve = f"{med('solve_s'):.3f}" if mode != "plain-round" else "-"
            lines.append(f"| {n} | {rs[0]['gpus']} | {rs[0]['pairs']} | {mode} | {statuses} | {med('total_s'):.3f} "
                         f"| {build} | {solve} | {med('objective'):.1f} "
                         f"| {med('shortfall') if mode != 'plain-round' else float('nan'):.2f} "
                         f"| {loss} | {ratio} |")
    lines.append("")
    lines.append("Speed-up of `fast` over `exact` (same round, same process; median over seeds):")
    lines.append("")
    for n in sizes:
        sp = []
        for seed in sorted({r["seed"] for r in rows if r["jobs"] == n}):
            f = [r for r in rows if r["jobs"] == n and r["seed"] == seed and r["mode"] == "fast"]
            e = [r for r in rows if r["jobs"] == n and r["seed"] == seed and r["mode"] == "exact"]
            if f and e:
                sp.append(e[0]["total_s"] / f[0]["total_s"])
        if sp:
            lines.append(f"- N = {n}: {np.median(sp):.1f}x (range {min(sp):.1f}x to {max(sp):.1f}x)")
    if fam_rows:
        lines += ["", "Quality families (`fast` against `exact`, same round, same process):", "",
                  summarise_families(fam_rows).rstrip("\n")]
    return "\n".join(lines) + "\n"


SCALE_SIZES = (16384, 32768, 65536)
SCALE_FIELDS = ["jobs", "gpus", "pairs", "columns", "variant", "partitions", "total_s", "build_s", "solve_s",
                "objective", "value_gain", "bound", "mip_gap", "loss_vs_lp", "rss_mib", "workers_rss_mib", "message"]
PROFILE_FIELDS = ["jobs", "partitions", "document_s", "model_s", "lp_arrays_s", "split_s", "lp_s", "rounding_s",
                  "polish_s", "merge_s", "other_s", "total_s", "parts_polished"]


def auto_partitions(n: int) -> int:
    """Parts for a round of ``n`` jobs in the scale benchmark: about 8,192 jobs per part, at least 2."""
    return max(2, n // 8192)


def _rss_mib(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024.0  # kilobytes on Linux


def _scale_variant(n: int, partitions: int, workers: int) -> dict:
    """One scale measurement in a fresh process: ``fast`` on ``random_round(n, seed=0)``.

    Timed from the validated round (model building included); peak RSS of this process and of its pool workers.
    """
    p = random_round(n, seed=0)
    allocate({"gpus": {"A": 1}, "jobs": []})  # imports outside the timing
    pool = None
    if workers > 1:
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
        list(pool.map(abs, range(workers)))  # start the workers (a scheduler keeps its pool across rounds)
    try:
        t = time.perf_counter()
        a = allocate(p, mode="fast", partitions=partitions, executor=pool)
        total = time.perf_counter() - t
    finally:
        if pool is not None:
            pool.shutdown()
    return {"jobs": n, "gpus": p.total_gpus, "pairs": p.num_pairs, "partitions": partitions, "total_s": total,
            "build_s": a.report.build_seconds, "solve_s": a.report.solve_seconds, "objective": a.values.objective,
            "value_gain": a.values.value_gain, "bound": a.report.bound, "mip_gap": a.report.mip_gap,
            "rss_mib": _rss_mib(),
            "workers_rss_mib": _rss_mib(resource.RUSAGE_CHILDREN) if workers > 1 else None,
            "message": a.report.message}


def profile_fast(n: int, partitions: int = 1) -> dict:
    """Where the time of one ``fast`` round goes, step by step, from the round document (seed 0)."""
    doc = random_round(n, seed=0).to_dict()
    t0 = time.perf_counter()
    p = RoundProblem.from_dict(doc)
    t1 = time.perf_counter()
    m = build_model(p)
    t2 = time.perf_counter()
    opts = SolveOptions(partitions=partitions)
    row = {"jobs": n, "partitions": partitions, "document_s": t1 - t0, "model_s": t2 - t1}
    if partitions == 1:
        lp = m.tightened_lp()
        t3 = time.perf_counter()
        r = round_relaxation(m, lp, opts)
        row.update(lp_arrays_s=t3 - t2, split_s=0.0, lp_s=r.lp_seconds, rounding_s=r.round_seconds,
                   polish_s=r.polish_seconds, merge_s=0.0, parts_polished=int(r.polish_seconds > 0))
    else:
        merged = partition.solve_parts(m, opts)
        rs = merged.results
        lp_s, rnd_s, pol_s = (sum(getattr(r, k) for r in rs) for k in ("lp_seconds", "round_seconds",
                                                                       "polish_seconds"))
        row.update(lp_arrays_s=merged.parts_seconds - lp_s - rnd_s - pol_s,  # the parts' LP arrays
                   split_s=merged.split_seconds, lp_s=lp_s, rounding_s=rnd_s, polish_s=pol_s,
                   merge_s=merged.merge_seconds, parts_polished=sum(r.polish_seconds > 0 for r in rs))
    row["total_s"] = time.perf_counter() - t0
    row["other_s"] = row["total_s"] - sum(v for k, v in row.items() if k.endswith("_s") and k != "total_s")
    return row


def _in_child(fn: Callable[..., dict], *args: object) -> dict:
    """Run ``fn(*args)`` in a fresh spawned process (its own peak memory, no inherited HiGHS threads)."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as ex:
        return ex.submit(fn, *args).result()


def bench_scale(sizes: list[int], partitions: int | None, workers: int, out: Path) -> str:
    """The scale table: per size, fast whole, split in this process, split on a pool (see the module doc)."""
    rows: list[dict] = []
    for n in sizes:
        k = partitions or auto_partitions(n)
        for variant, parts, w in (("fast", 1, 1), (f"fast, {k} parts", k, 1),
                                  (f"fast, {k} parts, pool of {workers}", k, workers)):
            t = time.perf_counter()
            r = _in_child(_scale_variant, n, parts, w)
            r["variant"] = variant
            rows.append(r)
            print(f"[scale] N={n} {variant}: {r['total_s']:.2f} s, {r['rss_mib']:.0f} MiB "
                  f"(child {time.perf_counter() - t:.1f} s)", file=sys.stderr, flush=True)
        whole = rows[-3]
        lp_gain = whole["bound"] - (whole["objective"] - whole["value_gain"])  # the unsplit bound, as a gain
        for r in rows[-3:]:
            r["loss_vs_lp"] = (lp_gain - r["value_gain"]) / lp_gain
    with open(out / "bench_round_scale.csv", "w", newline="") as f:
        w_ = csv.DictWriter(f, fieldnames=SCALE_FIELDS, extrasaction="ignore")
        w_.writeheader()
        w_.writerows(rows)
    lines = ["| jobs | GPUs | variant | total s | vs whole | peak RSS MiB | value loss vs unsplit LP bound "
             "| certified gap |", "|---:|---:|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        whole = next(x for x in rows if x["jobs"] == r["jobs"] and x["partitions"] == 1)
        rss = f"{r['rss_mib']:.0f}" + (f" (+ {r['workers_rss_mib']:.0f} per worker)" if r["workers_rss_mib"] else "")
        lines.append(f"| {r['jobs']} | {r['gpus']} | {r['variant']} | {r['total_s']:.2f} "
                     f"| {r['total_s'] / whole['total_s']:.2f} | {rss} | {r['loss_vs_lp']:.2e} | {r['mip_gap']:.2e} |")
    return "\n".join(lines) + "\n"


def bench_profile(sizes: list[int], partitions: int | None, out: Path) -> str:
    """The profile table: fast whole at every size, and split at sizes of 16,384 jobs and more."""
    rows = []
    for n in sizes:
        ks = [1] + ([partitions or auto_partitions(n)] if n >= 16384 else [])
        for k in ks:
            rows.append(_in_child(profile_fast, n, k))
            print(f"[profile] N={n} parts={k}: {rows[-1]['total_s']:.2f} s", file=sys.stderr, flush=True)
    with open(out / "bench_round_profile.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=PROFILE_FIELDS)
        w.writeheader()
        w.writerows(rows)
    steps = ("document_s", "model_s", "lp_arrays_s", "split_s", "lp_s", "rounding_s", "polish_s", "merge_s",
             "other_s")
    lines = ["| jobs | parts | document | model | LP arrays | split | LP | rounding | polish | merge | other "
             "| total s |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        cells = " | ".join(f"{r[k]:.3f} ({100 * r[k] / r['total_s']:.0f} %)" for k in steps)
        lines.append(f"| {r['jobs']} | {r['partitions']} | {cells} | {r['total_s']:.3f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[64, 256, 1024, 2048, 8192],
                    help="sizes of the catalog rounds (none: only the families)")
    ap.add_argument("--seeds", type=int, default=3, help="random rounds per size (seeds 0..k-1)")
    ap.add_argument("--exact-limit", type=float, default=60.0, help="time limit of exact, s")
    ap.add_argument("--families", nargs="+", default=["all"],
                    help="quality families to run ('all', 'none', or names from FAMILIES)")
    ap.add_argument("--quick", action="store_true", help="64 and 256 jobs and two family rounds, one seed")
    ap.add_argument("--scale", action="store_true",
                    help="only the scale table: 16,384, 32,768 and 65,536 jobs, one round each (minutes)")
    ap.add_argument("--scale-sizes", type=int, nargs="+", default=list(SCALE_SIZES))
    ap.add_argument("--partitions", type=int, default=None, help="parts of a split round (default: N / 8192)")
    ap.add_argument("--workers", type=int, default=2, help="worker processes of the pool in the scale table")
    ap.add_argument("--profile", type=int, nargs="*", default=None,
                    help="only the profile table, at these sizes (e.g. 2048 65536)")
    ap.add_argument("--out", type=Path, default=Path("docs/results"), help="folder for the CSV and Markdown")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.scale or args.profile is not None:
        if args.scale:
            text = bench_scale(args.scale_sizes, args.partitions, args.workers, args.out)
            (args.out / "bench_round_scale.md").write_text(text)
            print(text)
        if args.profile:
            text = "Seconds (share of the total)\n\n" + bench_profile(args.profile, args.partitions, args.out)
            (args.out / "bench_round_profile.md").write_text(text)
            print(text)
        return 0
    families = list(FAMILIES) if args.families == ["all"] else [f for f in args.families if f != "none"]
    if args.quick:
        args.sizes, args.seeds, families = [64, 256], 1, list(QUICK_FAMILIES)
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        ap.error(f"unknown families {unknown}; known: {list(FAMILIES)}")
    rows: list[dict] = []
    allocate({"gpus": {"A": 1}, "jobs": []})  # warm imports outside the timings
    for n in args.sizes:
        for seed in range(args.seeds):
            t = time.perf_counter()
            bench_one(n, seed, args.exact_limit, rows)
            print(f"[bench] N={n} seed={seed} done in {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
    for name in families:
        n, make = FAMILIES[name]
        t = time.perf_counter()
        for seed in range(args.seeds):
            bench_family(name, n, make, seed, args.exact_limit, rows)
        print(f"[bench] family {name!r} done in {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
    with open(args.out / "bench_round.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    table = summarise(rows)
    (args.out / "bench_round.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
