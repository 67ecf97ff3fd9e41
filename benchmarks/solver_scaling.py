"""Solver scaling: time of one scheduling round against the number of jobs, per method.

Methods, each timed in-process on the same :func:`fairshare.testing.random_rounds.random_round` (4 GPU types, about
N/2 GPUs, gangs 1/2/4/8, about 4 co-location candidates per job, half the jobs with carried deficits):

``exact``
    ``allocate(p, mode="exact", time_limit=...)``: the column MILP by HiGHS; the status column says whether it
    proved optimality (``optimal``) or stopped at the limit (``time_limit``, with the relative gap).
``lp``
    ``allocate(p, mode="lp")``: section 3's LP relaxation (time fractions).
``fast``
    ``allocate(p, mode="fast")``: tightened LP, rounding, polish.
``gavel`` / ``gavel-ss``
    ``get_policy("gavel", space_sharing=False/True).allocate(RoundState.first_round(build_model(p)))``:
    Gavel's max-min LP, its refinement LP and its priority rounding, without / with space sharing.

Every time is wall time (``time.perf_counter``) from the validated :class:`~fairshare.problem.RoundProblem`
to the :class:`~fairshare.allocation.Allocation`, model building included. A method is skipped at a size
when its time at the previous size, scaled by ``(N / N_prev) ** 1.5``, exceeds ``--budget`` (or when it
already exceeded the budget); skipped cells are marked in the table. ``exact`` runs under ``--exact-limit``,
so it is skipped only if its model building alone would exceed the budget.

Outputs in ``--out`` (default ``docs/results/``): ``solver_scaling.csv`` (one row per size, seed and method),
``solver_scaling.md`` (median over seeds) and ``solver_scaling.png`` (log-log, one line per method).
Progress goes to stderr.

Usage::

    python benchmarks/solver_scaling.py                   # 64 ... 8192 jobs, exact limit 60 s (3 min 16 s
                                                        # on 2 shared cores, see docs/results-scaling.md)
    python benchmarks/solver_scaling.py --quick           # 64, 256, 1024 jobs, exact limit 5 s (about 9 s)
    python benchmarks/solver_scaling.py --sizes 1024 4096 --seeds 3 --exact-limit 30
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from fairshare import allocate
from fairshare.allocation import Allocation
from fairshare.formulation import build_model
from fairshare.policies import RoundState, get_policy
from fairshare.problem import RoundProblem
from fairshare.testing.random_rounds import random_round

METHODS = ("exact", "lp", "fast", "gavel", "gavel-ss")
FULL_SIZES = (64, 256, 1024, 2048, 4096, 8192)
QUICK_SIZES = (64, 256, 1024)
FIELDS = ["jobs", "gpus", "pairs", "seed", "method", "status", "seconds", "mip_gap", "objective", "utilization",
          "skipped"]
GROWTH = 1.5  # assumed exponent of time in N when predicting the next size


def runner(method: str, exact_limit: float, threads: int | None) -> Callable[[RoundProblem], Allocation]:
    """The call that is timed for ``method``."""
    opts = {} if threads is None else {"threads": threads}
    if method == "exact":
        return lambda p: allocate(p, mode="exact", time_limit=exact_limit, **opts)
    if method in ("lp", "fast"):
        return lambda p: allocate(p, mode=method, **opts)
    if method in ("gavel", "gavel-ss"):
        policy = get_policy("gavel", space_sharing=method == "gavel-ss")
        return lambda p: policy.allocate(RoundState.first_round(build_model(p)))
    raise ValueError(f"`method` = {method!r}: unknown (known: {', '.join(METHODS)})")


def run(sizes: list[int], seeds: int, methods: list[str], exact_limit: float, budget: float,
        threads: int | None = None) -> list[dict]:
    """Time every method on every size and seed; returns one row per (size, seed, method)."""
    rows: list[dict] = []
    last: dict[str, tuple[int, float]] = {}  # method -> (size, worst seconds over seeds)
    allocate({"gpus": {"A": 1}, "jobs": [{"id": "a", "scale": 1, "throughput": {"A": 1.0}}]})  # warm imports
    for n in sizes:
        for method in methods:
            skip = False
            if method in last:
                n0, t0 = last[method]
                predicted = t0 * (n / n0) ** GROWTH
                if method == "exact":  # the limit caps the solve; only the rest (model building) grows
                    predicted = max(0.0, t0 - exact_limit) * (n / n0) ** GROWTH + exact_limit
                skip = t0 > budget or predicted > budget
            worst = 0.0
            for seed in range(seeds):
                p = random_round(n, seed=seed)
                base = {"jobs": n, "gpus": p.total_gpus, "pairs": p.num_pairs, "seed": seed, "method": method}
                if skip:
                    rows.append({**base, "status": "skipped", "skipped": 1})
                    print(f"[scaling] N={n} {method}: skipped (predicted > {budget:g} s)", file=sys.stderr,
                          flush=True)
                    continue
                fn = runner(method, exact_limit, threads)
                t = time.perf_counter()
                a = fn(p)
                dt = time.perf_counter() - t
                worst = max(worst, dt)
                rows.append({**base, "status": str(a.status), "seconds": dt, "mip_gap": a.report.mip_gap,
                             "objective": a.values.objective, "utilization": a.values.utilization, "skipped": 0})
                gap = f", gap {a.report.mip_gap:.2e}" if a.report.mip_gap is not None and method == "exact" else ""
                print(f"[scaling] N={n} seed={seed} {method}: {dt:.3f} s ({a.status}{gap})", file=sys.stderr,
                      flush=True)
            if not skip:
                last[method] = (n, worst)
    return rows


def read_rows(path: Path) -> list[dict]:
    """Rows of an earlier ``solver_scaling.csv`` (numbers parsed back)."""
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            row: dict = {**r, "jobs": int(r["jobs"]), "gpus": int(r["gpus"]), "pairs": int(r["pairs"]),
                         "seed": int(r["seed"]), "skipped": int(r["skipped"])}
            for k in ("seconds", "mip_gap", "objective", "utilization"):
                row[k] = float(r[k]) if r[k] != "" else None
            rows.append(row)
    return rows


def table(rows: list[dict], exact_limit: float, budget: float) -> str:
    """Markdown: median seconds over seeds per size (rows) and method (columns), with statuses."""
    sizes = sorted({r["jobs"] for r in rows})
    methods = [m for m in METHODS if any(r["method"] == m for r in rows)]
    lines = ["| jobs | GPUs | pairs | " + " | ".join(f"{m} s" for m in methods) + " |",
             "|---:|---:|---:|" + "---:|" * len(methods)]
    for n in sizes:
        rn = [r for r in rows if r["jobs"] == n]
        cells = []
        for m in methods:
            rs = [r for r in rn if r["method"] == m]
            done = [r for r in rs if not r["skipped"]]
            if not done:
                cells.append("skipped")
                continue
            cell = f"{np.median([r['seconds'] for r in done]):.3f}"
            statuses = sorted({r["status"] for r in done})
            if m == "exact":
                cell += " (" + ", ".join(statuses)
                if "time_limit" in statuses:
                    gaps = [float(r["mip_gap"]) for r in done if r["status"] == "time_limit"
                            and r["mip_gap"] not in (None, "")]
                    worst = max(gaps, default=float("inf"))
                    cell += f", gap ≤ {worst:.1e}" if np.isfinite(worst) else ", no bound yet"
                cell += ")"
            elif "no_solution" in statuses:
                cell += " (no_solution)"
            cells.append(cell)
        lines.append(f"| {n} | {rn[0]['gpus']} | {rn[0]['pairs']} | " + " | ".join(cells) + " |")
    seeds = len({r["seed"] for r in rows})
    note = (f"Median wall seconds over {seeds} seed(s) per round, model building included. `exact` ran with "
            f"a time limit of {exact_limit:g} s (status in brackets; gap = certified relative gap on "
            f"`objective - obj_null`; no bound yet = HiGHS stopped before its first dual bound; the answer "
            f"is its incumbent if it has one, status `no_solution` and no placement otherwise); `skipped` = "
            f"predicted above the per-call budget of {budget:g} s.")
    lines += ["", note]
    return "\n".join(lines) + "\n"


def figure(rows: list[dict], path: Path, exact_limit: float) -> None:
    """Log-log time against jobs, one line per method (hollow markers: exact stopped at its limit)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.0), dpi=150)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for m in METHODS:
        done = [r for r in rows if r["method"] == m and not r["skipped"]]
        sizes = sorted({r["jobs"] for r in done})
        if not sizes:
            continue
        med = [float(np.median([r["seconds"] for r in done if r["jobs"] == n])) for n in sizes]
        (line,) = ax.plot(sizes, med, marker="o", label=m)
        limited = [(n, t) for n, t in zip(sizes, med)
                   if any(r["status"] == "time_limit" for r in done if r["jobs"] == n)]
        if limited:
            ax.plot(*zip(*limited), linestyle="none", marker="o", markersize=10, markerfacecolor="none",
                    color=line.get_color(), label=f"{m} at time limit")
    ax.axhline(exact_limit, color="0.6", linestyle=":", linewidth=1, label=f"exact limit {exact_limit:g} s")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("jobs in the round")
    ax.set_ylabel("wall time per round, s")
    ax.set_title("Time of one round (random_round, GPUs ≈ jobs / 2)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(FULL_SIZES), help="numbers of jobs")
    ap.add_argument("--seeds", type=int, default=1, help="random rounds per size (seeds 0..k-1, default 1)")
    ap.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    ap.add_argument("--exact-limit", type=float, default=60.0, help="time limit of exact, s (default 60)")
    ap.add_argument("--budget", type=float, default=120.0, help="per-call budget, s (default 120)")
    ap.add_argument("--threads", type=int, default=None, help="HiGHS threads of exact/lp/fast (default HiGHS's)")
    ap.add_argument("--quick", action="store_true", help="64, 256, 1024 jobs, exact limit 5 s, budget 10 s")
    ap.add_argument("--from-csv", type=Path, default=None,
                    help="redraw the table and figure from an earlier solver_scaling.csv (pass the same "
                         "--exact-limit and --budget)")
    ap.add_argument("--out", type=Path, default=Path("docs/results"), help="output folder (default docs/results)")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.seeds, args.exact_limit, args.budget = list(QUICK_SIZES), 1, 5.0, 10.0
    t = time.perf_counter()
    if args.from_csv is not None:
        rows = read_rows(args.from_csv)
    else:
        rows = run(sorted(args.sizes), args.seeds, list(args.methods), args.exact_limit, args.budget,
                   args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "solver_scaling.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    md = table(rows, args.exact_limit, args.budget)
    (args.out / "solver_scaling.md").write_text(md)
    figure(rows, args.out / "solver_scaling.png", args.exact_limit)
    print(md)
    print(f"[scaling] wrote {args.out}/solver_scaling.csv, .md, .png in {time.perf_counter() - t:.1f} s",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
