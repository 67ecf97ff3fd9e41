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

Usage::

    python examples/bench_round.py                      # full table (about 10 minutes on 2 cores)
    python examples/bench_round.py --quick              # 64 and 256 jobs, one seed (seconds)
    python examples/bench_round.py --sizes 2048 --seeds 3
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

from fairshare import allocate
from fairshare.formulation import build_model
from fairshare.methods.rounding import greedy_round
from fairshare.problem import RoundProblem
from fairshare.solvers import solve_lp
from fairshare.testing.random_rounds import random_round

FIELDS = ["jobs", "gpus", "pairs", "seed", "mode", "status", "total_s", "build_s", "solve_s", "objective",
          "efficiency", "shortfall", "value_loss", "eff_ratio", "mip_gap"]


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
    base = {"jobs": n, "gpus": p.total_gpus, "pairs": p.num_pairs, "seed": seed}
    results = {}
    for mode, opts in (("fast", {}), ("fast-dual", {"lp_algorithm": "dual"}), ("fast-ipm", {"lp_algorithm": "ipm"}),
                       ("lp", {}),
                       ("exact", {"time_limit": exact_limit})):
        t = time.perf_counter()
        a = allocate(doc, mode=mode.split("-")[0], **opts)
        total = time.perf_counter() - t
        results[mode] = a
        rows.append({**base, "mode": mode, "status": str(a.status), "total_s": total, "build_s": a.build_seconds,
                     "solve_s": a.solve_seconds, "objective": a.objective, "efficiency": a.efficiency,
                     "shortfall": a.shortfall, "mip_gap": a.mip_gap})
    total, obj, eff = plain_round(doc)
    rows.append({**base, "mode": "plain-round", "status": "heuristic", "total_s": total, "objective": obj,
                 "efficiency": eff})
    ex = results["exact"]
    if str(ex.status) == "optimal":
        for r in rows[-6:]:
            if r["mode"] in ("fast", "fast-dual", "fast-ipm", "plain-round"):
                r["value_loss"] = (ex.objective - r["objective"]) / (ex.objective - ex.obj_null)
                r["eff_ratio"] = r["efficiency"] / ex.efficiency


def summarise(rows: list[dict]) -> str:
    """Median over seeds per (jobs, mode); worst value loss; speed-up of fast over exact per round."""
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
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 256, 1024, 2048, 8192])
    ap.add_argument("--seeds", type=int, default=3, help="random rounds per size (seeds 0..k-1)")
    ap.add_argument("--exact-limit", type=float, default=60.0, help="time limit of exact, s")
    ap.add_argument("--quick", action="store_true", help="64 and 256 jobs, one seed")
    ap.add_argument("--out", type=Path, default=Path("docs/results"), help="folder for the CSV and Markdown")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.seeds = [64, 256], 1
    rows: list[dict] = []
    allocate({"gpus": {"A": 1}, "jobs": []})  # warm imports outside the timings
    for n in args.sizes:
        for seed in range(args.seeds):
            t = time.perf_counter()
            bench_one(n, seed, args.exact_limit, rows)
            print(f"[bench] N={n} seed={seed} done in {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
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
