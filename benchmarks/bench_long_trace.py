"""Benchmark of a long replay: where a simulated round's time goes, with and without fast's polish.

The issue's trace: ``fairshare trace --jobs 100000`` (Gavel's recipe, 6 jobs/h, seed 0) on 36 V100 + 36 P100
+ 36 K80. Variants (:data:`VARIANTS`): ``default``, ``no-polish`` (``polish=False``) and ``no-polish-warm``
(also ``warm_start=True``: the LP priced from the round before). Each variant replays the same first
``--rounds`` rounds in this process, one after the other, and the script reports the wall time per round
split into the LP, the rounding (greedy and local search), the polish MILP, the rest of the policy (round
document, model, priorities) and the simulator's own bookkeeping, plus the offered load of the whole trace
(:func:`fairshare.sim.load.offered_load`) and how the number of active jobs grows.

Usage::

    python benchmarks/bench_long_trace.py                 # 3,000 rounds per variant (about 4 minutes)
    python benchmarks/bench_long_trace.py --quick         # 2,000 jobs, 150 rounds per variant (seconds)
    python benchmarks/bench_long_trace.py --jobs-per-hour 3 --rounds 5000 --name bench_long_trace_3jph
    python benchmarks/bench_long_trace.py --rounds 6000 --variants no-polish no-polish-warm --name bench_long_trace_warm
    python benchmarks/bench_long_trace.py --jobs-per-hour 3 --rounds 0 --variants no-polish-warm --progress \
        --name bench_long_trace_3jph_full                # the whole 3 jobs/h trace (most of an hour)
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

import fairshare.methods.fast as fast_method
from fairshare.methods.relax import Rounded
from fairshare.sim.load import offered_load
from fairshare.sim.simulator import simulate
from fairshare.sim.traces import generate_trace

if __package__:  # python -m benchmarks.bench_long_trace
    from ._common import long_trace_arguments, policy_settings, sim_settings, write_report
else:  # python benchmarks/bench_long_trace.py
    from _common import long_trace_arguments, policy_settings, sim_settings, write_report

VARIANTS: dict[str, dict[str, Any]] = {"default": {}, "no-polish": {"polish": False},
                                       "no-polish-warm": {"polish": False, "warm_start": True}}
"""Variant name -> ``options`` of the fairshare policy (``fast`` mode)."""


@contextlib.contextmanager
def fast_timings() -> Iterator[list[tuple[float, float, float]]]:
    """Collect ``(lp, rounding, polish)`` seconds of every fast round solved inside the block."""
    seen: list[tuple[float, float, float]] = []
    original = fast_method.round_relaxation

    def timed(*args: Any, **kwargs: Any) -> Rounded:
        r = original(*args, **kwargs)
        seen.append((r.lp_seconds, r.round_seconds, r.polish_seconds))
        return r

    fast_method.round_relaxation = timed  # fast.solve looks it up in its module at every call
    try:
        yield seen
    finally:
        fast_method.round_relaxation = original


def run_variant(trace: Any, cluster: str, name: str, rounds: int, show_progress: bool = False,
                current: bool = False) -> dict[str, Any]:
    """Replay ``rounds`` rounds (0: the whole trace) with the variant's options; wall time and its split.

    Release 0.2's settings (with which the published tables were made) unless ``current``.
    """
    with fast_timings() as parts:
        t = time.perf_counter()
        res = simulate(trace, cluster, "fairshare",
                       policy_options=policy_settings("fairshare", {"options": dict(VARIANTS[name])}, current),
                       max_rounds=rounds or None, show_progress=show_progress, **sim_settings(current))
        wall = time.perf_counter() - t
    policy = np.array([r.solver_seconds for r in res.rounds])
    active = np.array([r.active_jobs for r in res.rounds])
    lp, rnd, pol = (np.array(col) for col in zip(*parts)) if parts else (np.zeros(0),) * 3
    n = len(res.rounds)
    return {"variant": name, "rounds": n, "hours": n * res.config.round_length / 3600, "wall": wall,
            "per_round": wall / n, "policy": policy.sum() / n, "lp": lp.sum() / n, "rounding": rnd.sum() / n,
            "polish": pol.sum() / n, "polished": int((pol > 0).sum()),
            "rest": (policy.sum() - lp.sum() - rnd.sum() - pol.sum()) / n, "simulator": (wall - policy.sum()) / n,
            "active": active, "policy_s": policy, "finished": res.metrics().finished}


def report(args: argparse.Namespace, load_text: str, rows: list[dict[str, Any]]) -> list[str]:
    """The lines of the Markdown report of the runs."""
    lines = [f"# Long replay: {args.jobs:,} Gavel-recipe jobs at {args.jobs_per_hour:g} jobs/h, seed {args.seed}, "
             f"{args.cluster}, fairshare fast", "",
             f"Whole trace: {load_text}.", "",
             (f"First {args.rounds:,} rounds" if args.rounds else "The whole trace")
             + " of each variant, run one after the other in one process (ms per round):",
             "", "| variant | rounds | simulated h | wall s | total | LP | rounding | polish (rounds) | "
                 "rest of policy | simulator | active jobs first / last round | jobs finished |",
             "|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ms = {k: r[k] * 1e3 for k in ("per_round", "lp", "rounding", "polish", "rest", "simulator")}
        lines.append(f"| {r['variant']} | {r['rounds']:,} | {r['hours']:,.0f} | {r['wall']:.1f} | "
                     f"{ms['per_round']:.1f} | {ms['lp']:.1f} | {ms['rounding']:.1f} | "
                     f"{ms['polish']:.1f} ({r['polished']:,}) | "
                     f"{ms['rest']:.1f} | {ms['simulator']:.1f} | {r['active'][0]} / {r['active'][-1]} | "
                     f"{r['finished']:,} |")
    if len(rows) > 1:
        base = rows[0]
        for r in rows[1:]:
            lines.append("")
            lines.append(f"Wall time per round, {r['variant']} / {base['variant']}: "
                         f"{r['per_round'] / base['per_round']:.3f}.")
    lines += ["", "Policy time per round by active jobs (ms):", "",
              "| active jobs | " + " | ".join(r["variant"] for r in rows) + " |",
              "|---:|" + "---:|" * len(rows)]
    top = int(max(r["active"].max() for r in rows))
    step = max(100, 100 * (top // 800))
    for lo in range(0, top + 1, step):
        cells = []
        for r in rows:
            sel = (r["active"] >= lo) & (r["active"] < lo + step)
            cells.append(f"{r['policy_s'][sel].mean() * 1e3:.1f} ({int(sel.sum())})" if sel.any() else "-")
        lines.append(f"| {lo}-{lo + step - 1} | " + " | ".join(cells) + " |")
    lines += ["", "(rounds in parentheses)"]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    long_trace_arguments(ap)
    ap.add_argument("--rounds", type=int, default=3000, help="rounds replayed per variant (0: the whole trace)")
    ap.add_argument("--progress", action="store_true", help="the simulator's progress line on stderr")
    ap.add_argument("--variants", nargs="+", choices=tuple(VARIANTS), default=list(VARIANTS))
    ap.add_argument("--quick", action="store_true", help="2,000 jobs, 150 rounds")
    ap.add_argument("--out", type=Path, default=Path("docs/results"))
    ap.add_argument("--name", default="bench_long_trace", help="report file name in --out, without .md")
    args = ap.parse_args(argv)
    if args.quick:
        args.jobs, args.rounds = 2000, 150
    trace = generate_trace(args.jobs, jobs_per_hour=args.jobs_per_hour, seed=args.seed)
    load = offered_load(trace, args.cluster)
    rows = []
    for name in args.variants:
        rows.append(run_variant(trace, args.cluster, name, args.rounds, args.progress, args.current))
        print(f"[bench_long_trace] {name}: {rows[-1]['wall']:.1f} s for {rows[-1]['rounds']} rounds", file=sys.stderr)
    write_report(args.out, f"{args.name}.md", report(args, load.describe(), rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
