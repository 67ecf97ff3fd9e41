"""Benchmark of warm rounds: ``fast`` on consecutive rounds, cold against warm (:mod:`fairshare.methods.warm`).

The rounds replay a scheduler's sequence: a catalog-shaped round of ``--jobs`` jobs
(:func:`fairshare.testing.random_rounds.random_round`, half as many GPUs as jobs) is the first round; after
each round ``--churn`` jobs leave and as many new jobs (drawn from the same generator) arrive, and every
job's carried deficit is updated from the placement ``fast`` gave it (``D <- max(0, D + 1 - epsilon - rho)``),
as :class:`fairshare.Engine` and the simulator do. The sequence is recorded first, then every variant
solves the same recorded rounds, round by round and in turn (the order rotates each round, so load on a
shared machine falls on all variants alike):

- ``cold``: ``fast`` as by default, the whole tightened LP from scratch;
- ``priced``: ``warm_start=True`` without a state: the LP solved by pricing, from prices 0;
- ``warm``: ``warm_start=True`` with one :class:`~fairshare.methods.warm.WarmStart` carried from round to
  round, as the Engine and the policy keep it: previous GPU prices seed the pricing, and HiGHS starts from
  the previous round's basis (mapped by identity) when few column values moved;
- ``warm-prices``, ``warm+basis``: the same with the basis never used (``use_basis=False``) or always
  (``use_basis=True``).

Three sequences: deficits carried (the scheduler's case), deficits held fixed (arrivals and departures
only: the case of a plan made again within a round, or of a cluster where every job gets its share), and a
long queue (the same jobs on an eighth as many GPUs, deficits carried: most jobs wait, and the warm variants
leave their rows out of the LP until a column of theirs prices out).

A round is timed from the validated :class:`~fairshare.problem.RoundProblem`: model building, LP and
rounding (and polish if it runs), as ``fairshare.methods.fast.solve`` after ``build_model``. Reported per
variant: median and p90 seconds per round, the LP's share, simplex iterations, and against ``cold`` the
ratio of medians, the largest relative difference of the LP bound and of the placement's value, and the
rounds whose placement is identical. The first round of the sequence is left out of the warm statistics
(it has no previous round).

Usage::

    python benchmarks/bench_warm.py                   # 2,048 jobs, 30 rounds; writes docs/results/bench_warm.md
    python benchmarks/bench_warm.py --quick --out /tmp/bw
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fairshare.formulation import build_model
from fairshare.methods import warm
from fairshare.methods.options import SolveOptions
from fairshare.methods.relax import round_relaxation
from fairshare.methods.rounding import dot
from fairshare.problem import RoundProblem
from fairshare.testing.consecutive import consecutive_rounds

VARIANTS = ("cold", "priced", "warm", "warm-prices", "warm+basis")
OUT = Path(__file__).resolve().parents[1] / "docs" / "results"


@dataclass
class Runs:
    """Per-round measurements of one variant."""

    total: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    lp: list[float] = field(default_factory=list)
    iterations: list[int] = field(default_factory=list)
    passes: list[int] = field(default_factory=list)
    job_rows: list[int] = field(default_factory=list)
    bound: list[float] = field(default_factory=list)
    value: list[float] = field(default_factory=list)
    x: list[np.ndarray] = field(default_factory=list)


Result = tuple[float, float, float, float, float, np.ndarray]


def solve_variant(name: str, problem: RoundProblem, state: warm.WarmStart | None) -> Result:
    """One round in variant ``name``: (wall s, CPU s, LP s, LP optimum, placement value, x)."""
    opts = SolveOptions(warm_start=name != "cold")
    c0, t0 = time.process_time(), time.perf_counter()
    model = build_model(problem)
    lp = model.tightened_lp()
    r = round_relaxation(model, lp, opts, warm=state)
    total, cpu = time.perf_counter() - t0, time.process_time() - c0
    # dot, not ``@``: numpy hands ``@`` to the multithreaded BLAS, whose worker threads then spin for a
    # while and were counted in the next solve's CPU time (twice its wall time on an idle machine)
    return total, cpu, r.lp_seconds, r.lp_bound, dot(model.value, r.x), r.x


def run(problems: list[RoundProblem], repeats: int = 1) -> dict[str, Runs]:
    """Solve every round in every variant (order rotated per round); the fastest of ``repeats`` solves counts.

    A repeated solve of a warm variant starts from a copy of the state the previous round left, and the
    state of the solve that counts is carried to the next round.
    """
    states: dict[str, warm.WarmStart] = {"priced": warm.WarmStart(), "warm": warm.WarmStart(),
                                         "warm-prices": warm.WarmStart(use_basis=False),
                                         "warm+basis": warm.WarmStart(use_basis=True)}
    runs = {v: Runs() for v in VARIANTS}
    for k, p in enumerate(problems):
        order = VARIANTS[k % len(VARIANTS):] + VARIANTS[: k % len(VARIANTS)]
        for v in order:
            best: Result | None = None
            kept = None
            for _ in range(repeats):
                state = _copy_state(states[v]) if v in states else None
                if v == "priced" and state is not None:
                    state.reset()  # a state only to count iterations: every round starts from prices 0
                res = solve_variant(v, p, state)
                if best is None or res[0] < best[0]:
                    best, kept = res, state
            assert best is not None
            if kept is not None:
                states[v] = kept
            r = runs[v]
            r.total.append(best[0])
            r.cpu.append(best[1])
            r.lp.append(best[2])
            r.bound.append(best[3])
            r.value.append(best[4])
            r.x.append(best[5])
            r.iterations.append(kept.iterations if kept is not None else -1)
            r.passes.append(kept.passes if kept is not None else 1)
            r.job_rows.append(kept.job_rows if kept is not None else p.num_jobs)
    return runs


def _copy_state(state: warm.WarmStart) -> warm.WarmStart:
    return state._copy()


def summarise(runs: dict[str, Runs], skip_first: bool = True) -> list[dict[str, object]]:
    """One row per variant: medians, p90, ratios and agreement with ``cold``."""
    s = 1 if skip_first and len(runs["cold"].total) > 1 else 0
    cold = runs["cold"]
    c_med = float(np.median(cold.total[s:]))
    rows = []
    for v in VARIANTS:
        r = runs[v]
        tot, lp = np.array(r.total[s:]), np.array(r.lp[s:])
        bound_diff = max((abs(a - b) / max(abs(b), 1e-12) for a, b in zip(r.bound[s:], cold.bound[s:])), default=0.0)
        value_diff = max((abs(a - b) / max(abs(b), 1e-12) for a, b in zip(r.value[s:], cold.value[s:])), default=0.0)
        same = sum(bool(np.array_equal(a, b)) for a, b in zip(r.x[s:], cold.x[s:]))
        iters = [i for i in r.iterations[s:] if i >= 0]
        rows.append({"variant": v, "rounds": len(tot), "median_s": float(np.median(tot)),
                     "p90_s": float(np.percentile(tot, 90)), "lp_median_s": float(np.median(lp)),
                     "cpu_median_s": float(np.median(r.cpu[s:])), "cpu_p90_s": float(np.percentile(r.cpu[s:], 90)),
                     "cpu_vs_cold": float(np.median(r.cpu[s:])) / float(np.median(cold.cpu[s:])),
                     "vs_cold": float(np.median(tot)) / c_med,
                     "iterations": float(np.median(iters)) if iters else float("nan"),
                     "passes": float(np.median(r.passes[s:])), "job_rows": float(np.median(r.job_rows[s:])),
                     "bound_diff": bound_diff, "value_diff": value_diff,
                     "same_x": same})
    return rows


def _table(rows: list[dict[str, object]]) -> list[str]:
    lines = [
        "| variant | median s | p90 s | median vs cold | CPU median s | CPU p90 s | CPU vs cold | LP median s "
        "| simplex iterations (median) | LP solves (median) | job rows in the LP (median) "
        "| max rel. diff of LP optimum | max rel. diff of placement value | placements = cold |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        it = "-" if r["iterations"] != r["iterations"] else f"{r['iterations']:.0f}"
        lines.append(f"| {r['variant']} | {r['median_s']:.4f} | {r['p90_s']:.4f} | {r['vs_cold']:.2f} | "
                     f"{r['cpu_median_s']:.4f} | {r['cpu_p90_s']:.4f} | {r['cpu_vs_cold']:.2f} | "
                     f"{r['lp_median_s']:.4f} | {it} | {r['passes']:.0f} | {r['job_rows']:.0f} | "
                     f"{r['bound_diff']:.1e} | {r['value_diff']:.1e} | {r['same_x']} of {r['rounds']} |")
    return lines


def write_markdown(path: Path, tables: list[tuple[str, list[RoundProblem], list[dict[str, object]]]],
                   args: argparse.Namespace, seconds: float) -> None:
    """The report: one table per sequence of rounds."""
    first = tables[0][1][0]
    lines = [
        "# Warm rounds: `fast` cold against warm on consecutive rounds",
        "",
        f"Command: `python benchmarks/bench_warm.py {' '.join(args.argv)}`".rstrip() + f" ({seconds:.0f} s).",
        "",
        f"Rounds of {args.jobs} jobs on {first.total_gpus} GPUs (`random_round`, seed {args.seed}; the long queue "
        f"on an eighth as many GPUs as jobs); after each "
        f"round {args.churn} jobs leave and {args.churn} arrive. Best of {args.repeats} solves per round and "
        "variant; the variants take turns within each round. Statistics over every round but the first (it has "
        "no previous round). Times from the validated round (model, LP, rounding; polish if it runs): wall "
        "time, and the process's CPU time, which a busy machine disturbs less.",
    ]
    for title, problems, rows in tables:
        lines += ["", f"## {title}: {len(problems)} rounds of {problems[0].num_jobs} jobs on "
                  f"{problems[0].total_gpus} GPUs", "", *_table(rows)]
    lines += ["", "Variants: `cold` the default `fast`, the whole tightened LP; `priced` (`warm_start=True` without "
              "a previous round) the LP solved by pricing from prices 0; `warm` pricing seeded by the previous "
              "round's GPU prices, and from the previous round's basis (alien basis, mapped by job ids and GPU "
              "types) when at most 10 % of the shared columns changed value by over 1 % (what the Engine and "
              "the policy keep); `warm-prices` never from the basis, `warm+basis` always. `cold`'s iterations "
              "are not recorded. Placements are compared entry by entry with `cold`'s.", ""]
    path.write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--jobs", type=int, default=None, help="jobs per round (default 2048; --quick: 256)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds (default 30; --quick: 5)")
    ap.add_argument("--frozen-rounds", type=int, default=None,
                    help="rounds of the second sequence, deficits not carried (default 10; --quick: 2; 0: none)")
    ap.add_argument("--churn", type=int, default=8, help="departures (and arrivals) per round")
    ap.add_argument("--queue-rounds", type=int, default=None,
                    help="rounds of the third sequence, a long queue: the jobs on an eighth as many GPUs, deficits "
                         "carried (default 10; --quick: 3; 0: none)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=1, help="solves per round and variant; the fastest counts")
    ap.add_argument("--quick", action="store_true", help="256 jobs, 5 + 2 rounds (unless given)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.jobs is None:
        args.jobs = 256 if args.quick else 2048
    if args.rounds is None:
        args.rounds = 5 if args.quick else 30
    if args.frozen_rounds is None:
        args.frozen_rounds = 2 if args.quick else 10
    if args.queue_rounds is None:
        args.queue_rounds = 3 if args.quick else 10
    t0 = time.perf_counter()
    sequences = [("Deficits carried from round to round (as the Engine and the simulator do)",
                  consecutive_rounds(args.jobs, args.rounds, churn=args.churn, seed=args.seed))]
    if args.frozen_rounds > 1:
        sequences.append(("Deficits not carried: arrivals and departures only",
                          consecutive_rounds(args.jobs, args.frozen_rounds, churn=args.churn, seed=args.seed,
                                             carry_deficits=False)))
    if args.queue_rounds > 1:
        sequences.append(("A long queue: an eighth as many GPUs as jobs, deficits carried",
                          consecutive_rounds(args.jobs, args.queue_rounds, churn=args.churn, seed=args.seed,
                                             num_gpus=max(8, args.jobs // 8))))
    tables = []
    for title, problems in sequences:
        rows = summarise(run(problems, args.repeats))
        tables.append((title, problems, rows))
        print(title)
        for r in rows:
            print(f"{r['variant']:>11}: median {r['median_s']:.4f} s, p90 {r['p90_s']:.4f} s (x{r['vs_cold']:.2f}), "
                  f"CPU {r['cpu_median_s']:.4f} s (x{r['cpu_vs_cold']:.2f}), LP {r['lp_median_s']:.4f} s, "
                  f"same placement {r['same_x']}/{r['rounds']}, LP optimum diff {r['bound_diff']:.1e}")
    args.out.mkdir(parents=True, exist_ok=True)
    write_markdown(args.out / "bench_warm.md", tables, args, time.perf_counter() - t0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
