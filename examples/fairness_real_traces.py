"""Fairness on real traces: fairshare against every fair peer, with restart overheads of 0, 30 and 120 s.

Runs fairshare (its defaults) and the fair peers (ftf, gavel, gavel-ss, las, gandiva-fair) on real public traces
imported by ``fairshare trace import`` (the files are not shipped: docs/real-traces.md says how to make them),
with the simulator's defaults, for each restart overhead of ``--restarts`` (every policy pays it when a job's
GPUs change) and, at ``--no-colocation-at``, once more without co-location. Writes ``<name>.md`` (per trace
and setting: every policy's mean JCT, unfair fraction, max rho, mean and p99 queueing delay, moves per
job-hour, jobs never started; the queueing delay by job class (one GPU, gangs, gangs that need
:data:`LONG_GANG_HOURS` or more alone) in the settings every policy ran; then the verdict against the best
fair peer on each number) and ``<name>.csv``.

Example (the published run, docs/results/fairness_real_traces.md)::

    python examples/fairness_real_traces.py --trace week=openb_week.json --trace day=helios_day.json

and the Philly day at a moderate load (docs/results/fairness_philly.md)::

    python examples/fairness_real_traces.py --trace philly=philly_day.json --restarts 30 0 120 --name fairness_philly
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a script: make the sibling module importable
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import log
else:
    from ._common import log

from fairshare.sim.metrics import compute_metrics, metrics_by_duration_class
from fairshare.sim.sweep import RunSpec, run_sweep

FAIR_PEERS = ("ftf", "gavel", "gavel-ss", "las", "gandiva-fair")
POLICIES = ("fairshare", *FAIR_PEERS)

LONG_GANG_HOURS = 8.0
"""A gang (more than one GPU) that needs at least this many hours alone on its fastest GPU type is a long gang in
the queueing-delay table by job class."""

#: Queueing-delay classes: (CSV key, column title, which jobs (scale, hours alone) belong).
DELAY_CLASSES = (
    ("delay_one_gpu_s", "one GPU or less", lambda s, h: s <= 1),
    ("delay_gang_s", f"gangs under {LONG_GANG_HOURS:g} h alone", lambda s, h: s > 1 and not h >= LONG_GANG_HOURS),
    ("delay_long_gang_s", f"gangs of {LONG_GANG_HOURS:g} h alone or more", lambda s, h: s > 1 and h >= LONG_GANG_HOURS),
)


@dataclass(frozen=True)
class TraceSetup:
    """A real trace as replayed here: its cluster, catalog and horizon (hours)."""

    cluster: str
    catalog: tuple[str, ...]
    until_hours: float
    what: str


#: The known traces by name: the Alibaba GPU 2023 week of docs/real-traces.md section 9 and the Helios day.
SETUPS = {
    "week": TraceSetup("T4=8,A10=8,A100-80GB=4,H100=4", ("modern",), 240.0,
                       "Alibaba GPU 2023, one week (hours 3000-3168), 1,160 jobs, 24 modern GPUs"),
    "day": TraceSetup("V100=16,P100=16,K80=16", (), 48.0,
                      "SenseTime Helios, one busy day (hours 336-360 of the published cut), 659 jobs, 48 GPUs"),
    "philly": TraceSetup("V100=240,P100=240,K80=240", ("scale-out",), 72.0,
                         "Microsoft Philly, one day (hours 1176-1200 of the published cut), 1,043 jobs, 720 GPUs"),
}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", action="append", default=[], metavar="NAME=FILE",
                    help=f"a trace file for a known setup ({', '.join(SETUPS)}); repeat")
    ap.add_argument("--restarts", type=float, nargs="+", default=[30.0, 0.0, 120.0],
                    help="restart overheads, s: the first with every policy, the others with "
                         "--sensitivity-policies (default 30 0 120)")
    ap.add_argument("--no-colocation-at", type=float, default=30.0,
                    help="also run without co-location at this restart overhead (default 30; negative: skip)")
    ap.add_argument("--policies", nargs="+", default=list(POLICIES), help="policies (default: fairshare and peers)")
    ap.add_argument("--sensitivity-policies", nargs="+", default=["fairshare", "ftf", "gavel-ss"],
                    help="policies run at the restart overheads other than the first (default: fairshare, ftf, "
                         "gavel-ss; 'all': --policies)")
    ap.add_argument("--until", type=float, default=None, help="override every setup's horizon (hours)")
    ap.add_argument("--reuse", type=Path, default=None, metavar="CSV",
                    help="rows of an earlier run's CSV for the runs not in --policies (e.g. rerun fairshare only)")
    ap.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--out", type=Path, default=Path("results"), help="output folder (default results/)")
    ap.add_argument("--name", default="fairness_real_traces", help="report file stem")
    args = ap.parse_args(argv)
    traces = {}
    for item in args.trace:
        name, sep, path = item.partition("=")
        if not sep or name not in SETUPS:
            ap.error(f"--trace {item!r}: expected NAME=FILE with NAME one of {', '.join(SETUPS)}")
        if not Path(path).is_file():
            ap.error(f"--trace {item!r}: no such file")
        traces[name] = path
    if not traces:
        ap.error("give at least one --trace NAME=FILE")
    args.traces = traces
    return args


def settings(args: argparse.Namespace) -> list[tuple[str, dict[str, Any], list[str]]]:
    """(label, simulator options, policies) of every setting run on each trace, the main ones first."""
    every = list(args.policies)
    some = every if args.sensitivity_policies == ["all"] else [p for p in every if p in args.sensitivity_policies]
    first, *others = args.restarts
    out = [(f"restart {first:g} s", {"restart_overhead": first, "record_holds": True}, every)]
    if args.no_colocation_at >= 0:
        out.append((f"restart {args.no_colocation_at:g} s, no co-location",
                    {"restart_overhead": args.no_colocation_at, "colocation": False, "record_holds": True}, every))
    out += [(f"restart {r:g} s", {"restart_overhead": r, "record_holds": True}, some) for r in others]
    return out


def row(result: Any, round_length: float) -> dict[str, Any]:
    """The numbers reported for one run."""
    m = compute_metrics(result.jobs, result.rounds)
    first: dict[str, float] = {}
    for h in result.holds:  # the run keeps its holds of GPUs: a job's first one is its first start
        for jid in h.jobs:
            first[jid] = min(first.get(jid, math.inf), h.start)
    delay = np.array([first[j.id] - j.arrival for j in result.jobs if j.id in first])
    horizon = _horizon(result)
    waited = {j.id: first.get(j.id, horizon) - j.arrival for j in result.jobs}  # never started: up to the horizon
    job_hours = sum(max(0.0, j.active_seconds) for j in result.jobs) / 3600.0
    moves = sum(r.moved_jobs + r.preempted_jobs for r in result.rounds)
    classes = metrics_by_duration_class(result.jobs, result.rounds, round_length)
    short = classes.get("under one round")
    return {"mean_jct_h": m.mean_jct / 3600.0, "unfair": m.unfair_fraction, "max_rho": m.max_rho,
            "mean_delay_s": float(delay.mean()) if delay.size else math.nan,
            "p99_delay_s": float(np.percentile(delay, 99)) if delay.size else math.nan,
            "moves_per_job_hour": moves / job_hours if job_hours else math.nan,
            "short_unfair": short.unfair_fraction if short is not None else math.nan,
            "unfinished": m.unfinished, "plans": len(result.rounds), "wall_s": result.wall_seconds,
            "never_started": sum(j.id not in first for j in result.jobs),
            **{key: _mean([waited[j.id] for j in result.jobs if member(j.scale, j.ideal_seconds / 3600.0)])
               for key, _, member in DELAY_CLASSES}}


def _horizon(result: Any) -> float:
    """The time the run stopped: its horizon ``until``, else the end of its last round."""
    if result.config.until is not None:
        return float(result.config.until)
    return max((r.start + r.length for r in result.rounds), default=0.0)


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else math.nan


def verdict(rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Fairshare against the best fair peer on each number (the issue's targets)."""
    fs = rows["fairshare"]
    peers = {p: r for p, r in rows.items() if p in FAIR_PEERS}
    best_unfair = min(peers.items(), key=lambda kv: kv[1]["unfair"])
    best_rho = min(peers.items(), key=lambda kv: kv[1]["max_rho"])
    best_jct = min(peers.items(), key=lambda kv: kv[1]["mean_jct_h"])
    below = 1.0 - fs["mean_jct_h"] / best_jct[1]["mean_jct_h"]
    return {"unfair": (fs["unfair"], best_unfair[0], best_unfair[1]["unfair"],
                       fs["unfair"] <= best_unfair[1]["unfair"]),
            "max_rho": (fs["max_rho"], best_rho[0], best_rho[1]["max_rho"], fs["max_rho"] <= best_rho[1]["max_rho"]),
            "jct": (fs["mean_jct_h"], best_jct[0], best_jct[1]["mean_jct_h"], below >= 0.15, below)}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    runs = []
    for tname, path in args.traces.items():
        setup = SETUPS[tname]
        until = (args.until if args.until is not None else setup.until_hours) * 3600.0
        for slabel, sim, pols in settings(args):
            for pol in pols:
                spec = RunSpec(pol, setup.cluster, {"path": path}, {}, {**sim, "until": until},
                               f"{tname}/{slabel}/{pol}", setup.catalog)
                runs.append((tname, slabel, pol, spec))
    log(f"fairness_real_traces: {len(runs)} simulations on {args.workers} workers")
    t0 = time.perf_counter()
    results = run_sweep([r[-1] for r in runs], max_workers=args.workers, show_progress=True)
    wall = time.perf_counter() - t0
    log(f"done in {wall:.0f} s")
    table: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for (tname, slabel, pol, _), res in zip(runs, results, strict=True):
        table.setdefault((tname, slabel), {})[pol] = row(res, res.config.round_length)
    if args.reuse is not None:  # the runs not made here, from an earlier run's CSV, in the policies' order
        with args.reuse.open(encoding="utf-8") as fh:
            for r in csv.DictReader(fh):
                key = (r["trace"], r["setting"])
                if key in table and r["policy"] not in table[key]:
                    table[key][r["policy"]] = _csv_row(r)
        for key, rows in table.items():
            table[key] = {p: rows[p] for p in POLICIES if p in rows}
    write_report(args, table, wall)
    return 0


CSV_KEYS = ("mean_jct_h", "unfair", "max_rho", "short_unfair", "mean_delay_s", "p99_delay_s", "moves_per_job_hour",
            "unfinished", "plans", "wall_s", "never_started", *(key for key, _, _ in DELAY_CLASSES))
"""The CSV's columns after trace, setting and policy."""

COUNTS = ("unfinished", "plans", "never_started")


def _csv_row(r: dict[str, str]) -> dict[str, Any]:
    """A row of an earlier run's CSV as :func:`row` gives it; a column that CSV lacks (older runs) is ``nan``."""
    out: dict[str, Any] = {}
    for k in CSV_KEYS:
        v = r.get(k)
        v = math.nan if v in (None, "", "nan") else float(v)
        out[k] = int(v) if k in COUNTS and math.isfinite(v) else v
    return out


def _f(v: float, spec: str) -> str:
    return "nan" if not math.isfinite(v) else format(v, spec)


def write_report(args: argparse.Namespace, table: dict[tuple[str, str], dict[str, dict[str, Any]]],
                 wall: float) -> None:
    lines = ["# Fairness on real traces: fairshare and the fair peers, by restart overhead", "",
             f"Made by `python examples/fairness_real_traces.py {' '.join(f'--trace {k}=...' for k in args.traces)}`"
             f" in {wall:.0f} s on {args.workers} workers. Every run uses the simulator's and the policies' "
             "defaults; the restart overhead is paid by any policy whose placement of a job changes. unfair = "
             "share of finished jobs with rho > 1.05; delay = time from arrival to first start; moves = jobs "
             "moved or preempted while running, per job-hour in the system.", ""]
    for tname in args.traces:
        lines += [f"## {tname}: {SETUPS[tname].what}", "", f"Cluster {SETUPS[tname].cluster}.", ""]
        for (t, slabel), rows in table.items():
            if t != tname:
                continue
            lines += [f"### {slabel}", "",
                      "| policy | mean JCT (h) | unfair | max rho | unfair under one round | mean delay (s) | "
                      "p99 delay (s) | never started | moves/job-h | unfinished | plans |",
                      "|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
            for pol, r in rows.items():
                lines.append(f"| {pol} | {_f(r['mean_jct_h'], '.2f')} | {_f(100 * r['unfair'], '.1f')} % | "
                             f"{_f(r['max_rho'], '.2f')} | {_f(100 * r['short_unfair'], '.1f')} % | "
                             f"{_f(r['mean_delay_s'], '.0f')} | {_f(r['p99_delay_s'], '.0f')} | "
                             f"{_f(r['never_started'], '.0f')} | "
                             f"{_f(r['moves_per_job_hour'], '.2f')} | {r['unfinished']} | {r['plans']} |")
            lines.append("")
        lines += _delay_tables(tname, table, args.policies)
    lines += ["## Verdict: fairshare against the best fair peer on each number", "",
              "| trace | setting | unfair: fairshare / best peer | max rho: fairshare / best peer | "
              "mean JCT (h): fairshare / best peer (below) | all three |", "|:---|:---|:---|:---|:---|:---|"]
    for (tname, slabel), rows in table.items():
        if "fairshare" not in rows or not all(p in rows for p in FAIR_PEERS):
            continue  # the verdict needs every fair peer
        v = verdict(rows)
        u, r_, j = v["unfair"], v["max_rho"], v["jct"]
        ok = u[3] and r_[3] and j[3]
        lines.append(f"| {tname} | {slabel} | {100 * u[0]:.1f} / {100 * u[2]:.1f} % ({u[1]}) {'✓' if u[3] else '✗'} | "
                     f"{r_[0]:.2f} / {r_[2]:.2f} ({r_[1]}) {'✓' if r_[3] else '✗'} | "
                     f"{j[0]:.2f} / {j[2]:.2f} ({j[1]}; {100 * j[4]:.0f} % below) {'✓' if j[3] else '✗'} | "
                     f"{'yes' if ok else 'no'} |")
    lines.append("")
    (args.out / f"{args.name}.md").write_text("\n".join(lines), encoding="utf-8")
    with (args.out / f"{args.name}.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["trace", "setting", "policy", *CSV_KEYS])
        for (tname, slabel), rows in table.items():
            for pol, r in rows.items():
                w.writerow([tname, slabel, pol, *[r[k] for k in CSV_KEYS]])
    log(f"wrote {args.out / (args.name + '.md')} and .csv")


def _delay_tables(tname: str, table: dict[tuple[str, str], dict[str, dict[str, Any]]],
                  policies: Sequence[str]) -> list[str]:
    """The queueing delay by job class of ``tname``'s settings that every policy of ``policies`` ran."""
    lines: list[str] = []
    for (t, slabel), rows in table.items():
        if t != tname or not all(p in rows for p in policies):
            continue
        lines += [f"### queueing delay by job class, {slabel}", "",
                  "Mean time from arrival to first start (s) of every job of the class; a job never started counts "
                  "its wait up to the horizon (so the mean is a lower bound where jobs were never started).", "",
                  "| policy | never started | " + " | ".join(title for _, title, _ in DELAY_CLASSES) + " |",
                  "|:---|" + "---:|" * (1 + len(DELAY_CLASSES))]
        for pol, r in rows.items():
            lines.append(f"| {pol} | {_f(r['never_started'], '.0f')} | "
                         + " | ".join(_f(r[key], '.0f') for key, _, _ in DELAY_CLASSES) + " |")
        lines.append("")
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
