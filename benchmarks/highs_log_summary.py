"""Where HiGHS spends its time on ``exact``'s MILP: its log, summarised per round size and option set.

Each round is :func:`fairshare.testing.random_rounds.random_round` (the rounds of ``bench_round.py`` and
``solver_scaling.py``); its MILP is the one ``exact`` solves (:meth:`~fairshare.formulation.RoundModel.tightened_milp`),
passed to HiGHS by :func:`fairshare.solvers.highs.solve_highs` as ``exact`` passes it, with HiGHS's log written
to a file and parsed. Option sets (:data:`CONFIGS`):

``deadline``
    :data:`fairshare.methods.exact.DEADLINE_HIGHS_OPTIONS` (presolve off, the RINS, RENS and root
    reduced-cost sub-MIP heuristics off): what ``exact`` uses when it has a ``time_limit`` (as in both
    benchmarks; ``exact`` then runs ``fast`` first, 0.6 s at 8,192 jobs, not timed here) and, on all-integer
    rounds such as these, without one.
``defaults``
    HiGHS's defaults: what every ``exact`` used before the deadline options were introduced, and what it
    still uses without a ``time_limit`` on rounds with fractional requests.
``no-submip``
    The defaults with the three sub-MIP heuristics off (presolve on).
``no-presolve``
    The defaults with presolve off (sub-MIP heuristics on).

Besides ``output_flag`` only logging options are added (``log_file``, ``log_to_console`` off and
``mip_min_logging_interval`` 1 s, for more lines of the root node); they do not change the search. The
parsed fields (:func:`parse_log`) are in :data:`FIELDS`; times are HiGHS's own clock, from the start of its
``run``, so they include presolve. "root LP" is the first log line with a dual bound (the root LP solved),
"root end" the last line of node 0 (after its cut rounds, heuristics and restarts).

Outputs in ``--out`` (default ``docs/results/``): ``highs_log_summary.md`` (medians per size and option
set, then one row per size, seed and option set) and ``highs_log_summary.csv``; ``--logs DIR`` also keeps
the raw logs. Progress goes to stderr.

Usage::

    python benchmarks/highs_log_summary.py                 # 2,048, 4,096, 8,192 jobs, seed 0, all option sets
                                                         # (about 4 minutes on 2 loaded cores)
    python benchmarks/highs_log_summary.py --seeds 3       # docs/results/highs_log_summary.md (9 minutes)
    python benchmarks/highs_log_summary.py --quick         # 256 and 1,024 jobs, deadline and defaults (seconds)
    python benchmarks/highs_log_summary.py --sizes 8192 --seeds 3 --configs deadline
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from fairshare.formulation import build_model
from fairshare.methods.exact import DEADLINE_HIGHS_OPTIONS
from fairshare.solvers.highs import solve_highs
from fairshare.testing.random_rounds import random_round

_SUBMIP_OFF: dict[str, Any] = {k: v for k, v in DEADLINE_HIGHS_OPTIONS.items() if k != "presolve"}
CONFIGS: dict[str, dict[str, Any]] = {
    "deadline": dict(DEADLINE_HIGHS_OPTIONS),
    "defaults": {},
    "no-submip": _SUBMIP_OFF,
    "no-presolve": {"presolve": "off"},
}
FULL_SIZES = (2048, 4096, 8192)
QUICK_SIZES = (256, 1024)
QUICK_CONFIGS = ("deadline", "defaults")
LOG_OPTIONS: dict[str, Any] = {"log_to_console": False, "mip_min_logging_interval": 1.0}

FIELDS = ["jobs", "seed", "config", "rows", "cols", "presolve_cols_removed", "presolve_rows_removed",
          "presolve_s", "setup_s", "root_lp_s", "root_lp_iters", "root_end_s", "root_cuts", "restarts", "restart_s",
          "nodes",
          "lp_iters", "strong_branching_iters", "separation_iters", "heuristic_iters", "submip_s",
          "submip_calls", "total_s", "status", "gap", "primal_bound", "dual_bound", "wall_s"]

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
# a line of the MIP progress table: source letter (optional), processed nodes, queue, leaves, explored %,
# best bound, best solution, gap, cuts, cuts in LP, conflicts, LP iterations, time
_ROW = re.compile(rf"^\s*([A-Za-z]?)\s+(\d+)\s+(\d+)\s+(\d+)\s+({_NUM})%\s+(\S+)\s+(\S+)\s+(\S+%?|Large)\s+"
                  rf"(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+({_NUM})s\s*$")


def _float(text: str) -> float:
    return float("inf") if text in ("inf", "Large") else float(text)


def parse_log(text: str) -> dict[str, Any]:
    """The summary of one HiGHS MIP log (HiGHS 1.16 format); a field the log lacks is ``None``.

    Fields: ``rows``, ``cols`` (the model as given); ``presolve_rows_removed``, ``presolve_cols_removed``
    (``None`` when presolve is off); ``presolve_s``; ``setup_s`` (from the end of presolve to the first
    progress line); ``root_lp_s`` and ``root_lp_iters`` (the first progress line with a finite bound other
    than an LP heuristic's ``S`` line: the root LP solved; its simplex iterations are 0 when the root LP was
    solved by interior point); ``root_end_s`` and ``root_cuts`` (the last progress line of node 0: its time
    and the cuts in the LP); ``restarts`` and ``restart_s`` (the time between the last progress line before
    each restart and the first after it: the new presolve and set-up); ``nodes``; ``lp_iters`` and its
    parts; ``submip_s`` and ``submip_calls`` (``0`` without sub-MIPs); ``total_s``; ``status``; ``gap`` (a
    fraction, not a percentage); ``primal_bound``, ``dual_bound``.
    """
    out: dict[str, Any] = {k: None for k in FIELDS if k not in ("jobs", "seed", "config", "wall_s")}
    m = re.search(r"MIP has (\d+) rows; (\d+) cols", text)
    if m:
        out["rows"], out["cols"] = int(m.group(1)), int(m.group(2))
    m = re.search(r"Presolve reductions: rows (\d+)\(-(\d+)\); columns (\d+)\(-(\d+)\)", text)
    if m:
        out["presolve_rows_removed"], out["presolve_cols_removed"] = int(m.group(2)), int(m.group(4))
    rows, restart_gaps, before = [], [], None
    for line in text.splitlines():
        r = _ROW.match(line)
        if r:
            if before is not None:  # the first progress line after a restart
                restart_gaps.append(float(r.group(13)) - before)
                before = None
            rows.append(r)
        elif "restarting" in line and rows:
            before = float(rows[-1].group(13))
    # the root LP: the first line with a finite bound that is not an "S" (an LP heuristic) line
    lp_rows = [r for r in rows if r.group(1) != "S" and r.group(6) not in ("inf", "-inf")]
    if lp_rows:
        out["root_lp_s"], out["root_lp_iters"] = float(lp_rows[0].group(13)), int(lp_rows[0].group(12))
    root = [r for r in rows if int(r.group(2)) == 0]
    if root:
        out["root_end_s"], out["root_cuts"] = float(root[-1].group(13)), int(root[-1].group(10))
    out["restarts"] = len(re.findall(r"Model after restart has", text))
    out["restart_s"] = sum(restart_gaps)
    report = text[text.find("Solving report"):] if "Solving report" in text else ""
    patterns = {
        "status": r"Status\s+(.+)", "primal_bound": rf"Primal bound\s+({_NUM}|inf|-inf)",
        "dual_bound": rf"Dual bound\s+({_NUM}|inf|-inf)", "gap": rf"Gap\s+({_NUM})%",
        "total_s": rf"Timing\s+({_NUM})", "presolve_s": rf"({_NUM}) \(Presolve\)", "nodes": r"Nodes\s+(\d+)",
        "lp_iters": r"LP iterations\s+(\d+)", "strong_branching_iters": r"(\d+) \(strong br\.\)",
        "separation_iters": r"(\d+) \(separation\)", "heuristic_iters": r"(\d+) \(heuristics\)"}
    for key, pat in patterns.items():
        m = re.search(pat, report)
        if not m:
            continue
        value = m.group(1).strip()
        if key == "status":
            out[key] = value
        elif key in ("nodes", "lp_iters", "strong_branching_iters", "separation_iters", "heuristic_iters"):
            out[key] = int(value)
        elif key == "gap":
            out[key] = float(value) / 100.0
        else:
            out[key] = _float(value)
    if rows and out["presolve_s"] is not None:
        # from the end of presolve to the first progress line: HiGHS's set-up of the presolved model (its
        # row-wise copy, the clique partition of the objective, a first propagation) and trivial heuristics
        out["setup_s"] = max(0.0, float(rows[0].group(13)) - out["presolve_s"])
    if report:
        sub = re.findall(rf"subMIP time \[calls\] = ({_NUM}) \[(\d+)\]", report)
        # the Timing block lists presolve, solve and postsolve; sub-MIP time in presolve and solve both count
        out["submip_s"] = sum(float(s) for s, _ in sub[:2])
        out["submip_calls"] = max((int(c) for _, c in sub), default=0)
    return out


def solve_logged(n: int, seed: int, config: str, log_path: Path, threads: int | None = None) -> dict[str, Any]:
    """Solve ``exact``'s MILP of ``random_round(n, seed)`` with the options ``config``; the parsed log."""
    p = random_round(n, seed=seed)
    model = build_model(p)
    lp = model.tightened_milp(model.tightened_lp())
    options = {**CONFIGS[config], **LOG_OPTIONS, "log_file": str(log_path)}
    t = time.perf_counter()
    solve_highs(lp, integer=True, mip_rel_gap=1e-6, threads=threads, verbose=True, extra_options=options)
    wall = time.perf_counter() - t
    return {"jobs": n, "seed": seed, "config": config, **parse_log(log_path.read_text()), "wall_s": wall}


def _cell(value: Any, fmt: str = "{}") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return fmt.format(value)


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown: one line per (size, seed, option set)."""
    head = ("| jobs | seed | options | presolve s (cols removed) | set-up s | root LP at s (simplex iters) | "
            "root end at s (cuts in LP) | restarts (s) | B&B nodes | LP iters (strong br. / separation / "
            "heuristics) | sub-MIP s [calls] | HiGHS total s | gap | status |")
    lines = [head, "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        cells = [
            str(r["jobs"]), str(r["seed"]), r["config"],
            _cell(r["presolve_s"], "{:.2f}") + " (" + _cell(r["presolve_cols_removed"], "{:,}") + ")",
            _cell(r["setup_s"], "{:.1f}"),
            _cell(r["root_lp_s"], "{:.1f}") + " (" + _cell(r["root_lp_iters"], "{:,}") + ")",
            _cell(r["root_end_s"], "{:.1f}") + " (" + _cell(r["root_cuts"]) + ")",
            _cell(r["restarts"]) + (f" ({r['restart_s']:.1f})" if r["restarts"] else ""), _cell(r["nodes"], "{:,}"),
            _cell(r["lp_iters"], "{:,}") + " (" + " / ".join(_cell(r[k], "{:,}") for k in (
                "strong_branching_iters", "separation_iters", "heuristic_iters")) + ")",
            _cell(r["submip_s"], "{:.2f}") + " [" + _cell(r["submip_calls"]) + "]",
            _cell(r["total_s"], "{:.2f}"), _cell(r["gap"], "{:.1e}"), _cell(r["status"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _median(values: list[Any]) -> float:
    known = [float(v) for v in values if v is not None]
    return float(np.median(known)) if known else float("nan")


def medians(rows: list[dict[str, Any]]) -> str:
    """Markdown: per size and option set, the median over seeds of the main times, and the worst gap."""
    head = ("| jobs | options | rounds | optimal | set-up + restarts s | root LP at s | sub-MIP s | B&B nodes "
            "(max) | HiGHS total s (median) | (max) |")
    lines = [head, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    keys = sorted({(r["jobs"], r["config"]) for r in rows}, key=lambda k: (k[0], list(CONFIGS).index(k[1])))
    for n, config in keys:
        rs = [r for r in rows if (r["jobs"], r["config"]) == (n, config)]
        optimal = sum(r["status"] == "Optimal" for r in rs)
        setup = _median([(r["setup_s"] or 0.0) + (r["restart_s"] or 0.0) for r in rs])
        lines.append(
            f"| {n} | {config} | {len(rs)} | {optimal} | {setup:.1f} | {_median([r['root_lp_s'] for r in rs]):.1f} | "
            f"{_median([r['submip_s'] for r in rs]):.1f} | {max(r['nodes'] or 0 for r in rs):,} | "
            f"{_median([r['total_s'] for r in rs]):.2f} | {max(r['total_s'] or 0.0 for r in rs):.2f} |")
    return "\n".join(lines) + "\n"


def report(rows: list[dict[str, Any]], command: str, load: float | None) -> str:
    """The Markdown page: medians per size and option set, then one line per solve, then the notes."""
    where = f"load average {load:.1f} on {os.cpu_count()} cores at the start" if load is not None else ""
    note = ("HiGHS's clock from the start of its run (model building and `fast` not included). `deadline` = "
            "the options `exact` gives HiGHS with a time limit, and without one on all-integer rounds such as "
            "these; `defaults` = HiGHS's defaults (before, `exact` without a time limit); `no-submip` = the "
            "defaults without the RINS, RENS and root reduced-cost sub-MIPs; `no-presolve` = the defaults "
            "without presolve. Set-up = from the end of presolve to the first progress line; restarts = the "
            "time from the last progress line before a restart to the first after it; root LP at = the time of "
            "the first line with the root LP's bound. gap = HiGHS's final relative gap. Times depend on the "
            "machine and its load; iterations and nodes much less.")
    return "\n".join([
        "# HiGHS log summary of `exact`'s MILP", "",
        f"`{command}` ({where})." if where else f"`{command}`.", "",
        "## Medians per size and option set", "", medians(rows),
        "## Every solve", "", table(rows), note, ""])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(FULL_SIZES), help="numbers of jobs")
    ap.add_argument("--seeds", type=int, default=1, help="random rounds per size (seeds 0..k-1, default 1)")
    ap.add_argument("--configs", nargs="+", choices=list(CONFIGS), default=list(CONFIGS), help="option sets")
    ap.add_argument("--threads", type=int, default=None, help="HiGHS threads (default HiGHS's)")
    ap.add_argument("--quick", action="store_true", help="256 and 1,024 jobs, deadline and defaults, seed 0")
    ap.add_argument("--logs", type=Path, default=None, help="keep the raw HiGHS logs in this folder")
    ap.add_argument("--out", type=Path, default=Path("docs/results"), help="output folder (default docs/results)")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes, args.seeds, args.configs = list(QUICK_SIZES), 1, list(QUICK_CONFIGS)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        logs = args.logs if args.logs is not None else Path(tmp)
        logs.mkdir(parents=True, exist_ok=True)
        for n in sorted(args.sizes):
            for seed in range(args.seeds):
                for config in args.configs:
                    r = solve_logged(n, seed, config, logs / f"highs_{n}_{seed}_{config}.log", args.threads)
                    rows.append(r)
                    print(f"[highs-log] N={n} seed={seed} {config}: {r['total_s']} s, {r['nodes']} nodes, "
                          f"{r['status']}", file=sys.stderr, flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "highs_log_summary.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    command = ("python benchmarks/highs_log_summary.py --quick" if args.quick else
               "python benchmarks/highs_log_summary.py --sizes " + " ".join(map(str, sorted(args.sizes)))
               + f" --seeds {args.seeds} --configs " + " ".join(args.configs))
    md = report(rows, command, load)
    (args.out / "highs_log_summary.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
