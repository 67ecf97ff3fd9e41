"""Two versions of fairshare timed on the same simulated rounds, run after run in turn.

This machine's speed drifts by a quarter within an hour, so two versions timed an hour apart (or one after the
other, once each) cannot be compared. This script checks out ``--base`` (any git revision) into a temporary
worktree and runs ``benchmarks/round_parts.py`` of the base and of the working tree in turn, ``--runs`` times
each, on the same window of rounds of the long trace (``--no-polish --warm-start``), each run in a new
process. It reports every run's ms per round, the median of each version, the ratio of the medians (this
version / base) and the median of each pair's ratio; interleaving spreads the machine's drift over both
versions. It also reports each run's time in HiGHS's own runs and the pairs' ratio per ms of HiGHS: where
the two versions give HiGHS the same work, HiGHS's time is a yardstick of the machine's speed in that run.
The base must have ``round_parts.py`` (added to ``examples/`` on 3 December 2026, commit 7926005; in
``benchmarks/`` since 4 December 2026).

Usage::

    python benchmarks/versions_ab.py --base 28fd6b2                     # rounds 6,000-7,000, 3 runs each
    python benchmarks/versions_ab.py --base 28fd6b2 --first 12000 --last 13000 --runs 2
    python benchmarks/versions_ab.py --base cae4758 --first 2000 --last 3000 --runs 5 --name versions_ab_small
    python benchmarks/versions_ab.py --base HEAD --quick                 # a smoke test (seconds)
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__:  # python -m benchmarks.versions_ab
    from ._common import log, write_report
else:  # python benchmarks/versions_ab.py
    from _common import log, write_report

ROOT = Path(__file__).resolve().parents[1]
_MS = re.compile(r"; ([0-9.]+) ms per round")
_HIGHS = re.compile(r"^\| HiGHS run \| ([0-9.]+) \|", re.MULTILINE)


def run_window(tree: Path, first: int, last: int, jobs: int, out: Path) -> tuple[float, float]:
    """Milliseconds per round of rounds ``first``-``last``, and of HiGHS's runs in them.

    Timed by ``tree``'s own round_parts.py, in a new process.
    """
    env = {**os.environ, "PYTHONPATH": str(tree)}
    script = tree / "benchmarks" / "round_parts.py"
    if not script.exists():  # a base from before the performance tools moved to benchmarks/
        script = tree / "examples" / "round_parts.py"
    cmd = [sys.executable, str(script), "--first", str(first), "--last", str(last), "--jobs", str(jobs),
           "--out", str(out)]
    done = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"[versions_ab] {' '.join(cmd)} failed in {tree}:\n{done.stderr[-2000:]}")
    text = (out / "round_parts.md").read_text()
    match, highs = _MS.search(text), _HIGHS.search(text)
    if match is None or highs is None:
        raise SystemExit(f"[versions_ab] no 'ms per round' or 'HiGHS run' row in {out / 'round_parts.md'}")
    return float(match.group(1)), float(highs.group(1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="git revision to compare with (e.g. a commit or HEAD~3)")
    ap.add_argument("--runs", type=int, default=3, help="runs of each version, in turn")
    ap.add_argument("--first", type=int, default=6000, help="first timed round")
    ap.add_argument("--last", type=int, default=7000, help="last round replayed")
    ap.add_argument("--jobs", type=int, default=100_000, help="jobs in the trace (6 jobs/h, seed 0)")
    ap.add_argument("--quick", action="store_true", help="2,000 jobs, rounds 100-150, one run each")
    ap.add_argument("--out", type=Path, default=Path("docs/results"))
    ap.add_argument("--name", default="versions_ab", help="report file name in --out, without .md")
    args = ap.parse_args(argv)
    if args.quick:
        args.jobs, args.first, args.last, args.runs = 2000, 100, 150, 1
    if args.runs < 1 or not 1 <= args.first <= args.last:
        ap.error("--runs must be >= 1 and 1 <= --first <= --last")
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    base = subprocess.run(["git", "rev-parse", "--short", args.base], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    times: dict[str, list[float]] = {"base": [], "this": []}
    highs: dict[str, list[float]] = {"base": [], "this": []}
    with tempfile.TemporaryDirectory(prefix="fairshare-ab-") as tmp:
        tree = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(tree), base], cwd=ROOT, check=True)
        try:
            for k in range(args.runs):
                for name, where in (("base", tree), ("this", ROOT)):
                    ms, highs_ms = run_window(where, args.first, args.last, args.jobs, Path(tmp) / f"{name}{k}")
                    times[name].append(ms)
                    highs[name].append(highs_ms)
                    log(f"run {k + 1}/{args.runs} {name}: {ms:.2f} ms per round (HiGHS {highs_ms:.2f})")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False)
    med = {name: statistics.median(v) for name, v in times.items()}
    lines = [f"# Two versions on the same rounds: base {base} against this version ({head}, working tree)", "",
             f"Rounds {args.first:,}-{args.last:,} of {args.jobs:,} Gavel-recipe jobs at 6 jobs/h, seed 0, "
             "V100=36,P100=36,K80=36, fairshare fast `--no-polish --warm-start`, timed by each version's own "
             f"`benchmarks/round_parts.py`, runs in turn (base first), {args.runs} each.", "",
             "| run | base (ms per round) | this version (ms per round) | this / base | base: HiGHS's runs (ms) | "
             "this: HiGHS's runs (ms) | this / base, each per ms of HiGHS |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    ratios = [t / b for b, t in zip(times["base"], times["this"], strict=True)]
    per_highs = [(t / th) / (b / bh) if th > 0 and bh > 0 else float("nan")
                 for b, t, bh, th in zip(times["base"], times["this"], highs["base"], highs["this"], strict=True)]
    lines += [f"| {k + 1} | {b:.2f} | {t:.2f} | {r:.2f} | {bh:.2f} | {th:.2f} | {q:.2f} |"
              for k, (b, t, r, bh, th, q) in enumerate(zip(times["base"], times["this"], ratios, highs["base"],
                                                           highs["this"], per_highs, strict=True))]
    lines += [f"| median | {med['base']:.2f} | {med['this']:.2f} | {statistics.median(ratios):.2f} | "
              f"{statistics.median(highs['base']):.2f} | {statistics.median(highs['this']):.2f} | "
              f"{statistics.median(per_highs):.2f} |", "",
              f"This version takes **{med['this'] / med['base']:.2f}** of the base's time per round (ratio of the "
              f"medians; the median of the runs' own ratios, each pair run back to back, is "
              f"{statistics.median(ratios):.2f}).", "",
              "Per ms of HiGHS's own runs (a round's time divided by the time HiGHS took in it, this version's "
              f"over the base's), the median pair gives {statistics.median(per_highs):.2f}. Where both versions "
              "hand HiGHS the same LPs with the same options, HiGHS's time measures the machine's speed in that "
              "run, and this ratio removes most of the drift between runs; where a version changes what HiGHS "
              "solves or how, it does not apply."]
    write_report(args.out, f"{args.name}.md", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
