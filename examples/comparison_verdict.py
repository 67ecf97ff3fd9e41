"""Who wins the main comparison, and by how much: the README's table and the dominance check, from the runs CSV.

Reads ``main_comparison_runs.csv`` (one row per simulation, written by ``examples/main_comparison.py``) and
writes ``main_comparison_verdict.md``: for every setting (cluster at a load)

* the table the README shows (one row per policy, means over seeds, sorted by mean JCT);
* the dominance check of one policy (``--policy``, default ``fairshare``) against every other: a peer
  *dominates* it when the peer is at least as good on mean JCT, unfair fraction and max rho and better on one
  of them (lower is better for all three; means over seeds);
* its mean JCT against the best *fair* peer's (the lowest mean JCT among the policies with a fairness goal:
  ``gavel``, ``gavel-ss``, ``ftf``, ``gandiva-fair``, ``las``), as a relative difference;
* seed by seed, in how many seeds its mean JCT is below each peer's (same trace per seed).

Nothing is simulated here, so the verdict can be recomputed from a committed runs CSV::

    python examples/comparison_verdict.py                                  # docs/results/main_comparison_runs.csv
    python examples/comparison_verdict.py --runs R.csv --out DIR --policy fairshare-none
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

#: peers with a fairness goal (max-min, finish-time fairness, equal shares); the yardstick of the JCT gain
FAIR_PEERS = ("gavel", "gavel-ss", "ftf", "gandiva-fair", "las")
#: the three metrics of the dominance check (all lower-is-better) and their table labels
CRITERIA = (("mean_jct_h", "mean JCT"), ("unfair_fraction", "unfair fraction"), ("max_rho", "max rho"))
TABLE = (("mean_jct_h", "mean JCT (h)", "{:.2f}"), ("p99_jct_h", "p99 JCT (h)", "{:.1f}"),
         ("unfair_fraction", "unfair jobs (rho > 1.05)", "pct"), ("max_rho", "max rho", "{:.2f}"),
         ("jain", "Jain", "{:.3f}"), ("utilization", "E/C", "{:.3f}"),
         ("solver_ms", "policy time per round (ms)", "{:.1f}"))

Setting = tuple[str, str]  # (cluster, load)


def read_runs(path: Path) -> dict[Setting, dict[str, dict[int, dict[str, float]]]]:
    """Setting -> policy -> seed -> metrics, from a runs CSV."""
    out: dict[Setting, dict[str, dict[int, dict[str, float]]]] = defaultdict(lambda: defaultdict(dict))
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            key = (row["cluster"], row["load_jobs_per_hour"])
            out[key][row["policy"]][int(row["seed"])] = {k: float(v) for k, v in row.items()
                                                          if k not in ("cluster", "load_jobs_per_hour", "policy",
                                                                       "seed")}
    return out


def means(by_seed: dict[int, dict[str, float]]) -> dict[str, float]:
    """Mean over seeds of every metric."""
    keys = next(iter(by_seed.values())).keys()
    return {k: float(np.mean([m[k] for m in by_seed.values()])) for k in keys}


def dominates(a: dict[str, float], b: dict[str, float]) -> bool:
    """Whether ``a`` is at least as good as ``b`` on every criterion and better on one (lower is better)."""
    ge = all(a[k] <= b[k] for k, _ in CRITERIA)
    return ge and any(a[k] < b[k] for k, _ in CRITERIA)


def verdict(policies: dict[str, dict[int, dict[str, float]]], policy: str) -> dict[str, object]:
    """The dominance check and the JCT gap of ``policy`` in one setting (see the module doc)."""
    m = {p: means(s) for p, s in policies.items()}
    me = m[policy]
    dominated_by = [p for p in m if p != policy and dominates(m[p], me)]
    fair = [p for p in FAIR_PEERS if p in m and p != policy]
    best = min(fair, key=lambda p: m[p]["mean_jct_h"]) if fair else None
    gap = (me["mean_jct_h"] - m[best]["mean_jct_h"]) / m[best]["mean_jct_h"] if best else float("nan")
    seeds = {p: (sum(policies[policy][s]["mean_jct_h"] < policies[p][s]["mean_jct_h"]
                     for s in policies[policy] if s in policies[p]), len(policies[p]))
             for p in m if p != policy}
    return {"means": m, "dominated_by": dominated_by, "best_fair": best, "gap": gap, "seeds_below": seeds}


def _fmt(value: float, spec: str) -> str:
    return f"{100 * value:.1f} %" if spec == "pct" else spec.format(value)


def render(runs: dict[Setting, dict[str, dict[int, dict[str, float]]]], policy: str) -> str:
    """The Markdown page (see the module doc)."""
    lines = [f"Verdict of `{policy}` on the main comparison (means over seeds; lower is better for mean JCT, the "
             "unfair fraction and max rho).", ""]
    for (cluster, load), policies in runs.items():
        if policy not in policies:
            continue
        v = verdict(policies, policy)
        m = v["means"]
        assert isinstance(m, dict)
        lines += [f"## {cluster} at {load} jobs/h", "",
                  "| policy | " + " | ".join(label for _, label, _ in TABLE) + " |",
                  "|:---|" + "---:|" * len(TABLE)]
        for p in sorted(m, key=lambda p: m[p]["mean_jct_h"]):
            name = f"`{p}`"
            lines.append(f"| {name} | " + " | ".join(_fmt(m[p][k], spec) for k, _, spec in TABLE) + " |")
        dom = v["dominated_by"]
        best = v["best_fair"]
        lines += ["", f"- dominated by: {', '.join(f'`{p}`' for p in dom) if dom else 'no peer'} (on mean JCT, "
                  "unfair fraction and max rho together)"]
        if best is not None:
            lines.append(f"- mean JCT against the best fair peer (`{best}`, {m[best]['mean_jct_h']:.2f} h): "
                         f"{100 * float(v['gap']):+.1f} %")
        seeds = v["seeds_below"]
        assert isinstance(seeds, dict)
        lines.append("- seeds where its mean JCT is below the peer's: "
                     + ", ".join(f"`{p}` {k}/{n}" for p, (k, n) in sorted(seeds.items())))
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, default=Path("docs/results/main_comparison_runs.csv"))
    ap.add_argument("--out", type=Path, default=Path("docs/results"))
    ap.add_argument("--policy", default="fairshare", help="the policy whose verdict is written (default fairshare)")
    args = ap.parse_args(argv)
    runs = read_runs(args.runs)
    if not any(args.policy in p for p in runs.values()):
        ap.error(f"--policy {args.policy!r}: no run of it in {args.runs}")
    text = render(runs, args.policy)
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.policy == "fairshare" else f"_{args.policy}"
    path = args.out / f"main_comparison_verdict{suffix}.md"
    path.write_text(text + "\n")
    print(text)
    print(f"[comparison_verdict] wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
