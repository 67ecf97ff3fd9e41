"""Where a live engine's round goes, and what HiGHS's options do to the kept LP's re-solve.

Scenario: the ``round`` of :mod:`benchmarks.live_engine` (``n`` active jobs on ``n/2`` GPUs of four types, an
incremental ``Engine`` with its defaults; each timed call is :meth:`Engine.plan` after the last plan was
committed and 2 % of the jobs finished and as many arrived). For each variant (HiGHS's options for the kept LP's
re-solve: the default, three ``simplex_dual_edge_weight_strategy`` rules, ``presolve`` on, the primal simplex,
the parallel dual simplex, no cost perturbation and row-wise pricing only) one engine
runs ``--rounds`` rounds; the variants run in turn, ``--repeats`` times, so that load falls on all alike. Timers
wrap the parts of a plan: keeping the jobs (``KeptRound.sync``), building the round (``KeptRound.problem``,
with the kept jobs' arrays, the rules' inputs and the rules), the model (``build_model``), the kept LP
(``KeptLP.solve``; HiGHS's run and its dual simplex iterations), and the report (``Allocation.from_columns``).
Every variant must reach the same LP optimum (reported).

Usage::

    python benchmarks/live_round_parts.py --out /tmp/parts            # 2,048 jobs, 8 rounds, 2 repeats
    python benchmarks/live_round_parts.py --quick --out /tmp/parts    # 256 jobs (smoke test)
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from fairshare import Engine

sys.path.insert(0, str(Path(__file__).resolve().parent))
from live_engine import pool  # noqa: E402 - the scenario of live_engine.py, run as a script or a module

VARIANTS: dict[str, dict[str, Any]] = {"default": {}, "dantzig": {"simplex_dual_edge_weight_strategy": 0},
                                        "devex": {"simplex_dual_edge_weight_strategy": 1},
                                        "steepest edge": {"simplex_dual_edge_weight_strategy": 2},
                                        "presolve on": {"presolve": "on"}, "primal": {"simplex_strategy": 4},
                                        "parallel dual": {"simplex_strategy": 2},
                                        "no cost perturbation": {"dual_simplex_cost_perturbation_multiplier": 0.0},
                                        "row-wise price": {"simplex_price_strategy": 1}}
PARTS = ("plan", "sync", "problem", " rules' inputs", " kept jobs' arrays", " rules", "build_model",
         "KeptLP.solve", " HiGHS run", "from_columns")


@contextmanager
def _timers(options: dict[str, Any], times: dict[str, list[float]], iterations: list[int]) -> Iterator[None]:
    """Timers around the parts of a plan, and ``options`` set on the kept LP before each HiGHS run."""
    import fairshare.engine_rounds as rounds
    import fairshare.kept_jobs as kept_jobs
    import fairshare.methods.kept as kept
    from fairshare.allocation import Allocation
    from fairshare.solvers import highs

    allocate_module = sys.modules["fairshare.allocate"]
    patched: list[tuple[Any, str, Any]] = []

    def wrap(owner: Any, name: str, label: str, before: Callable[..., None] | None = None) -> None:
        f = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        inner = f.__func__ if isinstance(f, classmethod) else f

        def timed(*args: Any, **kw: Any) -> Any:
            if before is not None:
                before(*args)
            t = time.perf_counter()
            try:
                return inner(*args, **kw)
            finally:
                times[label].append(time.perf_counter() - t)

        patched.append((owner, name, f))
        setattr(owner, name, classmethod(timed) if isinstance(f, classmethod) else timed)

    def set_options(lp: Any, *_: Any) -> None:
        for key, value in options.items():
            lp.highs.setOptionValue(key, value)

    wrap(rounds.KeptRound, "sync", "sync")
    wrap(rounds.KeptRound, "problem", "problem")
    wrap(rounds, "_inputs_of", " rules' inputs")
    wrap(kept_jobs.KeptJobs, "problem", " kept jobs' arrays")
    wrap(rounds, "_with_rules", " rules")
    wrap(allocate_module, "build_model", "build_model")
    wrap(kept.KeptLP, "solve", "KeptLP.solve")
    wrap(highs.IncrementalLP, "run", " HiGHS run", before=set_options)
    wrap(Allocation, "from_columns", "from_columns")
    run = highs.IncrementalLP.run

    def counted(lp: Any, *args: Any, **kw: Any) -> Any:
        out = run(lp, *args, **kw)
        iterations.append(int(lp.highs.getInfo().simplex_iteration_count))
        return out

    highs.IncrementalLP.run = counted  # type: ignore[method-assign]
    patched.append((highs.IncrementalLP, "run", highs.IncrementalLP.__dict__.get("run", run)))
    try:
        yield
    finally:
        for owner, name, f in reversed(patched):
            setattr(owner, name, f)


def run_variant(n: int, rounds: int, options: dict[str, Any]) -> tuple[dict[str, list[float]], list[int], float]:
    """Part -> seconds per round, HiGHS iterations per round, and the last kept LP optimum."""
    gpus, jobs, pairs = pool(n, 0)
    active, waiting = jobs[:n], jobs[n:]
    times: dict[str, list[float]] = collections.defaultdict(list)
    iterations: list[int] = []
    engine = Engine(gpus)
    cur = list(active)
    ids = {j["id"] for j in cur}
    alloc = engine.plan(cur, [c for c in pairs if all(j in ids for j in c["jobs"])])
    step = max(1, n // 50)
    with _timers(options, times, iterations):
        for r in range(rounds):
            engine.commit(alloc)
            cur = cur[step:] + waiting[r * step:(r + 1) * step]
            ids = {j["id"] for j in cur}
            col = [c for c in pairs if all(j in ids for j in c["jobs"])]
            t = time.perf_counter()
            alloc = engine.plan(cur, col)
            times["plan"].append(time.perf_counter() - t)
    return times, iterations, float(engine._kept_lp.objective)


def main(argv: list[str] | None = None) -> int:
    """Run the variants in turn; write ``live_round_parts.md``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=2048)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="256 jobs, 3 rounds, 1 repeat")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    n, rounds, repeats = (256, 3, 1) if args.quick else (args.jobs, args.rounds, args.repeats)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    got: dict[str, tuple[dict[str, list[float]], list[int], list[float]]] = {}
    for _ in range(repeats):
        for name, options in VARIANTS.items():
            times, iterations, objective = run_variant(n, rounds, options)
            all_times, all_its, objectives = got.setdefault(name, (collections.defaultdict(list), [], []))
            for part, values in times.items():
                all_times[part] += values
            all_its += iterations
            objectives.append(objective)
            print(f"{name}: {1e3 * float(np.median(times['plan'])):.1f} ms per round", file=sys.stderr, flush=True)
    names = list(VARIANTS)
    lines = ["# Where a live engine's round goes (incremental engine, mode fast)", "",
             f"`python benchmarks/live_round_parts.py --jobs {n} --rounds {rounds} --repeats {repeats}`; {n:,} jobs "
             f"on {n // 2:,} GPUs, 2 % of the jobs replaced each round; medians over {rounds * repeats} rounds per "
             f"variant, the variants run in turn ({time.strftime('%d %B %Y', time.gmtime())}, load average "
             f"{load:.1f} at the start). Parts indented under the part that calls them.", "",
             "| part | " + " | ".join(f"{v} ms" for v in names) + " |", "|---|" + "---:|" * len(names)]
    for part in PARTS:
        cells = [f"{1e3 * float(np.median(got[v][0][part])):.2f}" if got[v][0].get(part) else "-" for v in names]
        lines.append(f"| {part.strip() if not part.startswith(' ') else '&nbsp;&nbsp;' + part.strip()} | "
                     + " | ".join(cells) + " |")
    lines.append("| dual simplex iterations | " + " | ".join(str(int(np.median(got[v][1]))) for v in names) + " |")
    spread = max(abs(o - got["default"][2][0]) for v in names for o in got[v][2])
    lines += ["", f"Largest difference between the variants' LP optima: {spread:.1e}."]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "live_round_parts.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
