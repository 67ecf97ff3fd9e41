"""Why do fairshare's worst jobs end with rho above 1.05?  Job by job, on any trace.

One simulation per seed of the ``fairshare`` policy, with a recorder around the policy that keeps, for every
plan (a round boundary; with ``--starts events`` also an arrival or a finish) and every active job, whether
the plan placed it, its progress ``tau_j / Tfair_j`` and its carried deficit, and the simulation's GPU holds
(``record_holds=True``), which give each job's first start (at a plan or a start between plans). The policy
and the simulation take the defaults of ``fairshare compare`` (read from its parser and from the policy itself,
not restated here): the same priority rule, shortfall price and solve mode, the same round length, restart
overhead, co-location and starts; the options below change them as they change ``compare``.

By default the work is the main comparison's: 300 Gavel-recipe jobs per seed at 4 jobs/h on 36 V100 + 36
P100 + 36 K80, seeds 0-2. ``--trace FILE`` explains the unfair jobs of any trace instead (an imported real
trace, say), on ``--cluster`` with ``--catalog``, up to ``--until`` hours: one simulation, reported as seed 0
(``--catalog`` is repeatable, as in ``compare``).

For every finished job with finish-time fairness ``rho_j = JCT / (work / Tfair_j) > 1.05`` the report gives
its wait from arrival to first start (``first_wait_s``) and the number of plans that left it out before that
start (``plans_waited``: the policy planned while the job was waiting and did not place it), and explains it by
the first cause that accounts for it, checked in this order:

``boundary``
    The wait for the next plan alone: without the wait before its first start its rho would be at most 1.05,
    and no plan left it out (it waited less than one round, for the next round boundary, because no idle GPUs
    fitted it when it arrived).
``queued``
    The wait alone accounts for it too, but the job was left out by one or more plans before it first ran:
    it queued behind other jobs for a round or more.
``gang``
    A gang (scale > 1) that was left out of plans while it was active (not placed at all in some plan).
``unpaid``
    The job finished while it was still owed: its deficit was positive in its last plan, so the fairness
    carried in time had no rounds left to repay it.
``shared``
    The job got less than its fair progress in plans where it was placed (a slower type, or co-located), and
    the deficit did not make up for it before it finished.

Prints the report and writes it to ``--out`` (default ``results/`` under the current directory; nothing is
written anywhere else): ``STEM.md`` (the command, the setting, one row per unfair job, the count of causes and
a table by duration class: the time a job needs alone on its fastest type, as in the simulator's results) and
``STEM.csv`` (the rows). ``--name`` sets ``STEM`` (default ``worst_jobs``, with ``_PRIORITY`` unless the
priority rule is ``none``, and ``_SHORTFALL-PRICE-price`` unless the shortfall price is ``none``).

Usage::

    python examples/worst_jobs.py                         # seeds 0-2, the policy's defaults
    python examples/worst_jobs.py --priority none         # the same with equal priorities (the 0.1 behaviour)
    python examples/worst_jobs.py --quick                 # smoke test: 30 jobs, one seed
    python examples/worst_jobs.py --trace week.json --catalog modern \
        --cluster T4=8,A10=8,A100-80GB=4,H100=4 --until 240 --name worst_jobs_real_openb2023
"""

from __future__ import annotations

import argparse
import csv
import shlex
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fairshare.allocation import Allocation
from fairshare.cli import build_parser
from fairshare.cli.catalog import add_catalog_option, catalog_names, load_cli_catalog
from fairshare.errors import InvalidInputError
from fairshare.policies import RoundState, get_policy, policy_options
from fairshare.sim import SimConfig, simulate
from fairshare.sim.metrics import DURATION_CLASSES, UNFAIR_RHO
from fairshare.sim.traces import generate_trace, read_trace

CLUSTER = "V100=36,P100=36,K80=36"
CAUSES = ("boundary", "queued", "gang", "unpaid", "shared")
COLUMNS = ("seed", "id", "model", "scale", "class", "rho", "jct_h", "ideal_h", "rounds", "first_wait_s",
           "plans_waited", "unplaced_rounds", "below_fair_rounds", "max_deficit", "last_deficit", "cause")
#: ``compare``'s options that this script takes too (its ``dest`` names), and the fairshare policy's among them.
SIM_OPTIONS = ("round_length", "epsilon", "restart_overhead", "max_pairs", "no_colocation", "starts", "event_spacing",
               "no_owed_wait")
POLICY_OPTIONS = ("mode", "priority", "shortfall_price")
_EPS = 1e-9


@dataclass
class Recorder:
    """Wraps a policy; keeps, per job id, one ``(time, placed, progress, deficit)`` tuple per plan it was in."""

    inner: Any
    rounds: dict[str, list[tuple[float, bool, float, float]]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.inner.name)

    def __getattr__(self, attr: str) -> Any:
        """Any other attribute is the policy's (what the simulator asks of it, e.g. whether it re-plans at events)."""
        if attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    def allocate(self, state: RoundState) -> Allocation:
        alloc = self.inner.allocate(state)
        p = state.model.problem
        for j, jid in enumerate(p.job_ids):
            self.rounds.setdefault(jid, []).append(
                (state.time, bool(alloc.jobs.job_gpu[j] >= 0), float(alloc.jobs.progress[j]), float(p.deficit[j])))
        return alloc


def first_starts(holds: Sequence[Any]) -> dict[str, float]:
    """Each job's first start: the earliest start of a GPU hold (``simulate(..., record_holds=True)``) it is in."""
    first: dict[str, float] = {}
    for h in holds:
        for j in h.jobs:
            first[j] = min(first.get(j, h.start), h.start)
    return first


def duration_class(ideal_seconds: float, round_length: float) -> str:
    """The simulator's duration class (:data:`DURATION_CLASSES`) of a job that needs ``ideal_seconds`` alone."""
    return DURATION_CLASSES[0 if ideal_seconds < round_length else 1 if ideal_seconds <= 3600 else 2]


def explain(job: Any, history: list[tuple[float, bool, float, float]], round_length: float,
            first_start: float | None = None) -> dict[str, Any]:
    """The numbers of one finished job and the first cause (of :data:`CAUSES`) that explains its rho.

    ``history`` is the job's :class:`Recorder` entries, one per plan it was in. ``first_start`` is when the job
    first held GPUs (a round boundary or a start between rounds); without it, the first plan that placed it.
    ``plans_waited`` counts the plans before the first start (they all left the job out); the wait is a
    ``boundary`` wait only when no plan left the job out and it was shorter than one round.
    """
    jct = job.finish - job.arrival
    ideal = job.iterations / job.fair_throughput
    rho = jct / ideal
    if first_start is None:
        first_start = next((t for t, placed, _, _ in history if placed), job.arrival)
    wait = max(0.0, first_start - job.arrival)
    plans_waited = sum(1 for t, _, _, _ in history if t < first_start - _EPS)
    unplaced = sum(1 for _, placed, _, _ in history if not placed)
    below = sum(1 for _, placed, prog, _ in history if placed and prog < 1.0 - 1e-6)
    last_deficit = history[-1][3] if history else 0.0
    if (jct - wait) / ideal <= UNFAIR_RHO:
        cause = "boundary" if plans_waited == 0 and wait < round_length else "queued"
    elif job.scale > 1 and unplaced > 0:
        cause = "gang"
    elif last_deficit > 1e-6:
        cause = "unpaid"
    else:
        cause = "shared"
    return {"id": job.id, "model": job.model, "scale": job.scale, "rho": rho, "jct_h": jct / 3600,
            "ideal_h": ideal / 3600, "rounds": len(history), "first_wait_s": wait, "plans_waited": plans_waited,
            "unplaced_rounds": unplaced, "below_fair_rounds": below,
            "max_deficit": max((h[3] for h in history), default=0.0), "last_deficit": last_deficit, "cause": cause}


def compare_defaults() -> argparse.Namespace:
    """The options of ``fairshare compare`` as it runs with none given (its parser's defaults)."""
    return build_parser().parse_args(["compare"])


def sim_config(args: argparse.Namespace) -> SimConfig:
    """The simulation options of a run, as ``fairshare compare`` builds them from the same options."""
    return SimConfig(round_length=args.round_length, epsilon=args.epsilon, restart_overhead=args.restart_overhead,
                     max_pairs_per_job=args.max_pairs, colocation=not args.no_colocation, starts=args.starts,
                     max_rounds=args.max_rounds, until=None if args.until is None else args.until * 3600.0,
                     **({} if args.event_spacing is None else {"event_spacing": args.event_spacing}),
                     wait_is_owed=not args.no_owed_wait)


def policy_settings(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any]]:
    """The fairshare policy's options given on the command line, and every option as the run uses it."""
    given = {k: getattr(args, k) for k in POLICY_OPTIONS if getattr(args, k) is not None}
    return given, {**policy_options("fairshare"), **given}


def run(seed: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    """One simulation; the explained rows of its unfair jobs."""
    if args.trace is not None:
        catalog = load_cli_catalog(args)
        trace = read_trace(args.trace, catalog=catalog)
    else:
        catalog = None
        trace = generate_trace(args.jobs, jobs_per_hour=args.jobs_per_hour, seed=seed)
    given, _ = policy_settings(args)
    rec = Recorder(get_policy("fairshare", **given))
    cfg = sim_config(args)
    res = simulate(trace, args.cluster, rec, config=cfg, catalog=catalog, show_progress=False, record_holds=True)
    first = first_starts(res.holds)
    rows = []
    for job in res.jobs:
        if not np.isfinite(job.finish) or not job.fair_throughput > 0:
            continue
        row = explain(job, rec.rounds.get(job.id, []), cfg.round_length, first.get(job.id))
        if row["rho"] > UNFAIR_RHO:
            rows.append({"seed": seed, "class": duration_class(job.ideal_seconds, cfg.round_length), **row})
    return rows


def report(rows: list[dict[str, Any]], args: argparse.Namespace, command: str) -> list[str]:
    """The Markdown report of the unfair jobs ``rows`` (sorted) of a run with ``args``."""
    _, opts = policy_settings(args)
    what = (f"the trace {args.trace.name} on {args.cluster} (catalog {' + '.join(catalog_names(args))}"
            f"{'' if args.until is None else f', until {args.until:g} h'})" if args.trace is not None else
            f"{args.jobs} jobs at {args.jobs_per_hour:g} jobs/h on {args.cluster}, seeds {args.seeds}")
    policy = ", ".join(f"{k} {opts[k]!r}" for k in POLICY_OPTIONS)
    pairs = "off" if args.no_colocation else f"on (max {args.max_pairs} pairs per job)"
    cfg = sim_config(args)
    events = f" (at least {cfg.event_spacing:g} s between plans)" if cfg.starts == "events" else ""
    starts = f"{cfg.starts!r}{events}"
    sim = (f"{args.round_length:g} s rounds, starts {starts}, restart overhead {args.restart_overhead:g} s, "
           f"epsilon {args.epsilon:g}, co-location {pairs}"
           + ("" if args.max_rounds is None else f", at most {args.max_rounds} rounds"))
    lines = [f"Unfair jobs (rho > {UNFAIR_RHO}) of the fairshare policy ({policy}), {what}; {sim}", "",
             f"Command: `{command}`", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        lines.append("| " + " | ".join(_cell(c, r[c]) for c in COLUMNS) + " |")
    counts = Counter(r["cause"] for r in rows)
    lines += ["", "causes: " + ", ".join(f"{c} {counts.get(c, 0)}" for c in CAUSES) + f" (of {len(rows)} unfair jobs)",
              "", "| duration class (alone on the fastest type) | " + " | ".join(CAUSES)
              + " | unfair jobs | left out of a plan before the first start | median first_wait_s |",
              "|:---|" + "---:|" * (len(CAUSES) + 3)]
    for cls in DURATION_CLASSES:
        mine = [r for r in rows if r["class"] == cls]
        n = Counter(r["cause"] for r in mine)
        waited = sum(r["plans_waited"] > 0 for r in mine)
        median = f"{float(np.median([r['first_wait_s'] for r in mine])):.0f}" if mine else "-"
        lines.append(f"| {cls} | " + " | ".join(str(n.get(c, 0)) for c in CAUSES) + f" | {len(mine)} | {waited} | "
                     f"{median} |")
    lines += ["", "`first_wait_s`: seconds from arrival to the first start (the first GPU hold, at a plan or between "
              "plans); `plans_waited`: plans of the policy between the arrival and the first start (each left the "
              "job out); `rounds`: plans the job was in; `ideal_h`: its work at its fair throughput. Causes, first "
              "that applies: `boundary`, the wait alone makes it late and no plan left it out (it waited less than "
              "a round, for the next plan); `queued`, the wait alone makes it late and at least one plan left it "
              "out; `gang`, a gang left out of a plan while active; `unpaid`, it finished still owed a deficit; "
              "`shared`, it ran below its fair progress where it was placed and nothing was owed at the end."]
    return lines


def _cell(column: str, value: Any) -> str:
    """A table cell: seconds to the second, other floats to three significant digits."""
    if not isinstance(value, float):
        return str(value)
    return f"{value:.0f}" if column.endswith("_s") else f"{value:.3g}"


def _stem(opts: dict[str, Any]) -> str:
    """The default report file stem for the policy options ``opts``."""
    stem = "worst_jobs" + ("" if opts["priority"] == "none" else f"_{opts['priority']}")
    return stem + ("" if opts["shortfall_price"] == "none" else f"_{opts['shortfall_price']}-price")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("results"),
                    help="folder of the report (default results/ under the current directory)")
    ap.add_argument("--name", default=None, help="report file stem (default worst_jobs[_PRIORITY][_PRICE-price])")
    ap.add_argument("--seeds", type=int, nargs="+", default=None, help="trace seeds (default 0 1 2; not with --trace)")
    ap.add_argument("--quick", action="store_true", help="30 jobs, one seed, capped rounds")
    ap.add_argument("--trace", type=Path, default=None, help="explain this trace's unfair jobs (one simulation)")
    ap.add_argument("--cluster", default=CLUSTER, help=f"with --trace: the cluster (default {CLUSTER})")
    add_catalog_option(ap)                                    # with --trace, as in compare
    ap.add_argument("--until", type=float, default=None, help="with --trace: horizon in simulated hours")
    same = ap.add_argument_group("as in fairshare compare (default: compare's, and the fairshare policy's own)")
    same.add_argument("--priority", default=None, help="priority rule of the fairshare policy")
    same.add_argument("--shortfall-price", default=None, help="shortfall-price rule of the fairshare policy")
    same.add_argument("--mode", choices=("fast", "exact"), default=None, help="solve mode of the fairshare policy")
    same.add_argument("--round-length", type=float, default=None, help="seconds per round")
    same.add_argument("--epsilon", type=float, default=None, help="fairness slack of every round")
    same.add_argument("--restart-overhead", type=float, default=None, help="seconds lost when a placement changes")
    same.add_argument("--max-pairs", type=int, default=None, help="co-location candidates per job")
    same.add_argument("--no-colocation", action="store_true", default=None, help="offer no co-location candidates")
    same.add_argument("--starts", default=None,
                      help="when jobs start: idle, round, or events (the fairshare policy plans again at arrivals "
                           "and finishes; plans_waited then counts those plans too)")
    same.add_argument("--event-spacing", type=float, default=None, help="--starts events: least time between plans")
    same.add_argument("--no-owed-wait", action="store_true", default=None,
                      help="a newcomer owes nothing for its wait before its first plan (release 0.2's rule)")
    args = ap.parse_args(argv)
    if args.trace is None and (args.cluster != CLUSTER or args.catalog is not None or args.until is not None):
        ap.error("--cluster, --catalog and --until go with --trace")
    if args.trace is not None and args.seeds is not None:
        ap.error("--seeds goes without --trace (a trace file is one simulation)")
    if args.name is not None and (Path(args.name).name != args.name or args.name in ("", ".", "..")):
        ap.error(f"--name {args.name!r}: a file stem, not a path (the report goes to --out)")
    if args.out.exists() and not args.out.is_dir():
        ap.error(f"--out {str(args.out)!r}: not a folder")
    defaults = compare_defaults()
    for k in SIM_OPTIONS:
        if getattr(args, k) is None:
            setattr(args, k, getattr(defaults, k))
    args.jobs, args.jobs_per_hour, args.max_rounds = 300, 4.0, None
    args.seeds = [0] if args.trace is not None else args.seeds or [0, 1, 2]
    if args.quick:
        args.jobs, args.jobs_per_hour, args.seeds, args.max_rounds = 30, 12.0, args.seeds[:1], 400
    try:                                                      # bad input is refused before any run
        sim_config(args)
        given, opts = policy_settings(args)
        get_policy("fairshare", **given)
        if args.trace is not None:
            read_trace(args.trace, catalog=load_cli_catalog(args))
    except InvalidInputError as exc:
        name = str(exc.field)                                 # the option that carries the field
        if not name.startswith("--"):
            name = "--" + {"path": "trace", "max_pairs_per_job": "max-pairs"}.get(name, name).replace("_", "-")
        ap.error(f"{name} = {exc.value!r}: {exc.reason}")
    rows = [r for seed in args.seeds for r in run(seed, args)]
    rows.sort(key=lambda r: (-r["rho"], r["seed"], r["id"]))
    lines = report(rows, args, shlex.join(["python", "examples/worst_jobs.py", *argv]))
    stem = args.name or _stem(opts)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stem}.md").write_text("\n".join(lines) + "\n")
    with (args.out / f"{stem}.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(COLUMNS), lineterminator="\n")
        w.writeheader()
        w.writerows({c: r[c] for c in COLUMNS} for r in rows)
    print("\n".join(lines))
    print(f"wrote {args.out / f'{stem}.md'} and {stem}.csv", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
