r"""The efficiency-fairness picture: every policy as a point, fairshare's epsilon x priority settings as curves.

Reads two kinds of result tables that other scripts wrote and draws one figure, nothing is simulated here:

* ``main_comparison.csv`` (``examples/main_comparison.py``): one row per cluster x load x policy, mean over
  seeds; each policy becomes a point.
* one or more ``priority_rules.csv`` (``examples/priority_rules.py``): one row per cluster x load x epsilon x
  priority rule of the ``fairshare`` policy; each rule becomes a curve through its epsilon values (a single
  point when it was run at one epsilon).

The figure has one row per setting (cluster at a load) and two panels per row: mean JCT against the unfair
fraction (jobs with rho > 1.05), and mean JCT against the worst job's rho. Lower-left is better in both. It is
written as ``priority_tradeoff.png`` next to a table of the points it shows (``priority_tradeoff.md``).

Usage::

    python examples/priority_tradeoff.py \\
        --main docs/results/main_comparison.csv \\
        --rules docs/results/priority_rules.csv docs/results/priority_rules_eps.csv \\
        --anchor "remaining p=1:fairshare" "none:fairshare-none" --out docs/results
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

#: (cluster, load) settings drawn, in order; the issue's yardstick is 4 jobs/h on both clusters
SETTINGS: tuple[tuple[str, float], ...] = (("het108", 4.0), ("het108+h200", 4.0))
#: policies of the main comparison left out of the picture (their points are far off the scale)
FAR_OFF = ("fifo",)
#: a policy whose mean JCT is above this multiple of the best is named in the panel's title, not drawn
ZOOM = 1.15
#: colours of the peers' points: none of C0, C1 (the curves) or C7 (grey, fairshare-none's point)
PEER_COLORS = ("C2", "C3", "C4", "C5", "C6", "C8", "C9")


def read_points(main_csv: Path) -> dict[tuple[str, float], dict[str, tuple[float, float, float]]]:
    """Per setting, per policy: (mean JCT h, unfair fraction, max rho), means over seeds."""
    out: dict[tuple[str, float], dict[str, tuple[float, float, float]]] = defaultdict(dict)
    with main_csv.open(newline="") as f:
        for r in csv.DictReader(f):
            key = (r["cluster"], float(r["load (jobs/h)"]))
            out[key][r["policy"]] = (float(r["mean_jct_h_mean"]), float(r["unfair_fraction_mean"]),
                                     float(r["max_rho_mean"]))
    return out


def read_curves(rule_csvs: Sequence[Path]) -> dict[tuple[str, float], dict[str, list[tuple[float, float, float,
                                                                                           float]]]]:
    """Per setting, per rule: [(epsilon, mean JCT h, unfair fraction, max rho)] sorted by epsilon."""
    out: dict[tuple[str, float], dict[str, list[tuple[float, float, float, float]]]] = defaultdict(
        lambda: defaultdict(list))
    for path in rule_csvs:
        with path.open(newline="") as f:
            for r in csv.DictReader(f):
                key = (r["cluster"], float(r["load"]))
                out[key][r["rule"]].append((float(r["epsilon"]), float(r["mean_jct_h"]),
                                            float(r["unfair_fraction"]), float(r["max_rho"])))
    for rules in out.values():
        for pts in rules.values():
            pts.sort()
    return out


def anchor(points: dict[tuple[str, float], dict[str, tuple[float, float, float]]],
           curves: dict[tuple[str, float], dict[str, list[tuple[float, float, float, float]]]],
           rule: str, policy: str) -> None:
    """Add ``policy``'s main-comparison point to ``rule``'s curve as its epsilon-0 point.

    In every setting where the policy has a point and the rule none at epsilon 0 (same traces, same policy
    options: the same run).
    """
    for key, pts in points.items():
        if policy in pts and not any(q[0] == 0.0 for q in curves[key][rule]):
            jct, unfair, rho = pts[policy]
            curves[key][rule].append((0.0, jct, unfair, rho))
            curves[key][rule].sort()


def draw(points: dict[tuple[str, float], dict[str, tuple[float, float, float]]],
         curves: dict[tuple[str, float], dict[str, list[tuple[float, float, float, float]]]],
         settings: Sequence[tuple[str, float]], path: Path) -> None:
    """The figure: a row per setting, panels (unfair fraction, max rho) x mean JCT."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.2 * len(settings)))
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(settings), 2, squeeze=False)
    for row, key in enumerate(settings):
        pts_here = {n: p for n, p in points.get(key, {}).items() if n not in FAR_OFF}
        best = min([p[0] for p in pts_here.values()] + [q[1] for c in curves.get(key, {}).values() for q in c])
        near = {n: p for n, p in pts_here.items() if p[0] <= ZOOM * best}
        off = sorted(set(pts_here) - set(near))
        for col, (idx, xlabel) in enumerate(((1, "unfair fraction (rho > 1.05)"), (2, "max rho (worst job)"))):
            ax = axes[row][col]
            for i, (name, p) in enumerate(sorted(near.items())):
                own = name.startswith("fairshare")  # fairshare's points in black and grey, the curves in C0, C1
                color = ("black" if name == "fairshare" else "0.55") if own else PEER_COLORS[i % len(PEER_COLORS)]
                ax.scatter([p[idx]], [p[0]], marker="o" if own else "s", s=36, zorder=3, color=color)
                ax.annotate(name, (p[idx], p[0]), textcoords="offset points", xytext=(4, 3), fontsize=7)
            for rule, pts in sorted(curves.get(key, {}).items()):
                xs, ys = [q[idx + 1] for q in pts], [q[1] for q in pts]
                ax.plot(xs, ys, "--", marker=".", linewidth=1, label=f"fairshare, {rule}")
                for q in pts:
                    ax.annotate(f"eps {q[0]:g}", (q[idx + 1], q[1]), textcoords="offset points", xytext=(3, -9),
                                fontsize=6, color="0.4")
            if col == 1:
                ax.axvline(1.05, color="0.7", linewidth=0.8)
            ax.set_xlabel(xlabel)
            ax.set_ylabel("mean JCT (h)")
            title = f"{key[0]}, {key[1]:g} jobs/h (mean over seeds)"
            if off:
                title += f"\noff the scale (mean JCT > {ZOOM:g}x the best): {', '.join(off)}"
            ax.set_title(title, fontsize=8)
            ax.grid(True, alpha=0.3)
            if row == 0 and col == 0 and curves.get(key):
                ax.legend(fontsize=6, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def table(points: dict[tuple[str, float], dict[str, tuple[float, float, float]]],
          curves: dict[tuple[str, float], dict[str, list[tuple[float, float, float, float]]]],
          settings: Sequence[tuple[str, float]]) -> list[str]:
    """The figure's points as a markdown table."""
    lines = ["| cluster | load | policy / fairshare rule | epsilon | mean JCT (h) | unfair | max rho |",
             "|:---|---:|:---|---:|---:|---:|---:|"]
    for key in settings:
        for name, p in sorted(points.get(key, {}).items()):
            lines.append(f"| {key[0]} | {key[1]:g} | {name} | (its own) | {p[0]:.2f} | {100 * p[1]:.1f} % | "
                         f"{p[2]:.2f} |")
        for rule, pts in sorted(curves.get(key, {}).items()):
            for eps, jct, unfair, rho in pts:
                lines.append(f"| {key[0]} | {key[1]:g} | fairshare, {rule} | {eps:g} | {jct:.2f} | "
                             f"{100 * unfair:.1f} % | {rho:.2f} |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--main", type=Path, default=Path("docs/results/main_comparison.csv"))
    ap.add_argument("--rules", type=Path, nargs="+", default=[Path("docs/results/priority_rules.csv")])
    ap.add_argument("--out", type=Path, default=Path("docs/results"))
    ap.add_argument("--settings", nargs="+", default=None, metavar="CLUSTER@LOAD",
                    help="settings to draw, e.g. het108@4 (default: both clusters at 4 jobs/h)")
    ap.add_argument("--anchor", nargs="+", default=[], metavar="RULE:POLICY",
                    help="start RULE's curve at POLICY's point of the main comparison, as epsilon 0 (the main "
                         "comparison runs at epsilon 0), e.g. 'remaining p=1:fairshare' 'none:fairshare-none'")
    args = ap.parse_args(argv)
    settings = SETTINGS if args.settings is None else tuple(
        (s.split("@")[0], float(s.split("@")[1])) for s in args.settings)
    points, curves = read_points(args.main), read_curves(args.rules)
    for spec in args.anchor:
        rule, sep, policy = spec.rpartition(":")
        if not sep or not rule:
            ap.error(f"--anchor {spec!r}: must be RULE:POLICY")
        anchor(points, curves, rule, policy)
    missing = [k for k in settings if k not in points and k not in curves]
    if missing:
        ap.error(f"no rows for {missing} in {args.main} or {[str(p) for p in args.rules]}")
    args.out.mkdir(parents=True, exist_ok=True)
    draw(points, curves, settings, args.out / "priority_tradeoff.png")
    lines = table(points, curves, settings)
    (args.out / "priority_tradeoff.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"[priority_tradeoff] wrote {args.out / 'priority_tradeoff.png'} and priority_tradeoff.md", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
