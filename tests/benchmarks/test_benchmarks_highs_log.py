"""Smoke test of benchmarks/highs_log_summary.py: the parser on a known log, and a ``--quick`` run."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from _examples import load_benchmark, read_csv

# A HiGHS 1.16 MIP log of exact's MILP (random_round(2048, seed=0), HiGHS defaults), blank lines and the
# legend shortened: presolve, two restarts, sub-MIPs in presolve and solve.
LOG = """MIP has 2052 rows; 11586 cols; 27257 nonzeros; 11586 integer variables (11586 binary)
Presolving model
2052 rows, 11586 cols, 27257 nonzeros 0s
2052 rows, 11243 cols, 26228 nonzeros 0s
Presolve reductions: rows 2052(-0); columns 11243(-343); nonzeros 26228(-1029)

        Nodes      |    B&B Tree     |            Objective Bounds              |  Dynamic Constraints |       Work
Src  Proc. InQueue |  Leaves   Expl. | BestBound    BestSol              Gap |   Cuts   InLp Confl. | LpIters     Time

 z       0       0         0   0.00%   inf          -0                 Large        0      0      0         0     0.6s
 J       0       0         0   0.00%   inf          2153.490377        Large        0      0      0         0     0.7s
 S       0       0         0   0.00%   544680.60236  220497.18469    147.02%        0      0      0         0     1.0s
         0       0         0   0.00%   221436.778025  220497.18469     0.43%        0      0      0      2277     1.0s
 L       0       0         0   0.00%   221436.359627  221435.924936    0.00%       39     19     12      2347     4.7s

99.4% inactive integer columns, restarting
Model after restart has 47 rows, 63 cols (63 bin., 0 int., 0 impl., 0 cont., 0 dom.fix.), and 152 nonzeros

         0       0         0   0.00%   221436.359627  221435.924936    0.00%       10      0      0      2508     4.9s

11.1% inactive integer columns, restarting
Model after restart has 44 rows, 56 cols (56 bin., 0 int., 0 impl., 0 cont., 0 dom.fix.), and 139 nonzeros

         0       0         0   0.00%   221436.359627  221435.924936    0.00%       10      0      0      2519     5.0s
         0       0         0   0.00%   221436.359627  221435.924936    0.00%       10     10      7      2529     5.0s
         3       0         1 100.00%   221436.049415  221435.924936    0.00%     1193     10     17      2814     5.4s

Solving report
  Status            Optimal
  Primal bound      221435.924936
  Dual bound        221436.049415
  Gap               5.6e-05% (tolerance: 0.0001%)
  P-D integral      0.97
  Solution status   feasible
                    221435.924936 (objective)
                    3.5527136788e-15 (integrality violation)
  Timing            5.35
                    0.46 (Presolve)
                        MIP    time [calls] = 0.17 [1]
                        subMIP time [calls] = 0.29 [21]
                    4.89 (Solve)
                        MIP    time [calls] = 2.90 [1]
                        subMIP time [calls] = 1.99 [21]
                    0.00 (Postsolve)
                        MIP    time [calls] = 0.00 [1]
                        subMIP time [calls] = 0.00 [21]
  Max sub-MIP depth 18
  Nodes             3
  Repair LPs        0
  LP iterations     2814
                    73 (strong br.)
                    179 (separation)
                    247 (heuristics)
"""


def test_parse_log_reads_every_field() -> None:
    r = load_benchmark("highs_log_summary").parse_log(LOG)
    assert (r["rows"], r["cols"]) == (2052, 11586)
    assert (r["presolve_rows_removed"], r["presolve_cols_removed"]) == (0, 343)
    assert r["presolve_s"] == pytest.approx(0.46)
    assert r["setup_s"] == pytest.approx(0.6 - 0.46)
    assert (r["root_lp_s"], r["root_lp_iters"]) == (1.0, 2277)
    assert (r["root_end_s"], r["root_cuts"]) == (5.0, 10)  # the last line of node 0, after both restarts
    assert r["restarts"] == 2 and r["restart_s"] == pytest.approx((4.9 - 4.7) + (5.0 - 4.9))
    assert (r["nodes"], r["lp_iters"]) == (3, 2814)
    assert (r["strong_branching_iters"], r["separation_iters"], r["heuristic_iters"]) == (73, 179, 247)
    assert r["submip_s"] == pytest.approx(0.29 + 1.99) and r["submip_calls"] == 21
    assert r["total_s"] == pytest.approx(5.35) and r["status"] == "Optimal"
    assert r["gap"] == pytest.approx(5.6e-7)
    assert (r["primal_bound"], r["dual_bound"]) == (221435.924936, 221436.049415)


def test_parse_log_without_presolve_or_report() -> None:
    mod = load_benchmark("highs_log_summary")
    head = LOG[: LOG.index("Solving report")].replace(LOG[LOG.index("Presolving"): LOG.index("\n\n")], "")
    r = mod.parse_log(head)
    assert r["presolve_cols_removed"] is None and r["status"] is None and r["nodes"] is None
    assert r["setup_s"] is None and r["submip_s"] is None  # no report: neither can be told
    assert r["root_lp_iters"] == 2277


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    out = tmp_path_factory.mktemp("highs_log")
    mod = load_benchmark("highs_log_summary")
    assert mod.main(["--quick", "--out", str(out)]) == 0
    return mod, out


def test_quick_run_fields_are_present_and_plausible(quick: tuple[Any, Path]) -> None:
    mod, out = quick
    rows = read_csv(out / "highs_log_summary.csv")
    assert {(int(r["jobs"]), r["config"]) for r in rows} == {
        (n, c) for n in mod.QUICK_SIZES for c in mod.QUICK_CONFIGS}
    for r in rows:
        assert r["status"] == "Optimal", r
        cols, nodes, lp_iters = int(r["cols"]), int(r["nodes"]), int(r["lp_iters"])
        assert cols > int(r["jobs"]) and int(r["rows"]) > int(r["jobs"])  # one row per job, one per type
        root_iters = int(r["root_lp_iters"])
        assert 0 < root_iters <= lp_iters and nodes >= 0  # 0: solved at the root without branching
        total = float(r["total_s"])
        assert 0 <= float(r["presolve_s"]) <= total and 0 <= float(r["setup_s"]) <= total
        assert 0 <= float(r["root_lp_s"]) <= float(r["root_end_s"]) <= total + 0.05  # the log has 0.1 s steps
        assert total <= float(r["wall_s"]) + 0.05
        primal, dual = float(r["primal_bound"]), float(r["dual_bound"])
        assert primal <= dual + 1e-9 * abs(dual)  # a maximisation: the dual bound is above
        assert float(r["gap"]) <= 1e-6 and (dual - primal) / abs(primal) <= 1e-6 + 1e-9
        if r["config"] == "deadline":  # presolve and sub-MIPs off
            assert r["presolve_cols_removed"] == "" and float(r["submip_s"]) == 0 and int(r["submip_calls"]) == 0
        else:
            assert int(r["presolve_cols_removed"]) >= 0
    # both option sets prove the same optimum of the same round
    for n in mod.QUICK_SIZES:
        values = [float(r["primal_bound"]) for r in rows if int(r["jobs"]) == n]
        assert max(values) - min(values) <= 2e-6 * max(abs(v) for v in values)


def _body(lines: list[str]) -> tuple[list[str], list[list[str]]]:
    """The header cells and the body rows (cells) of the first Markdown table in ``lines``."""
    start = next(i for i, line in enumerate(lines) if line.startswith("| jobs"))
    header = [c.strip() for c in lines[start].split("|")[1:-1]]
    body = []
    for line in lines[start + 2:]:
        if not line.startswith("| "):
            break
        body.append([c.strip() for c in line.split("|")[1:-1]])
    return header, body


def test_quick_run_tables(quick: tuple[Any, Path]) -> None:
    mod, out = quick
    md = (out / "highs_log_summary.md").read_text()
    assert "python benchmarks/highs_log_summary.py --quick" in md
    medians, every = md.split("## Every solve")
    header, body = _body(medians.splitlines())
    assert [(int(c[0]), c[1]) for c in body] == [(n, c) for n in mod.QUICK_SIZES for c in mod.QUICK_CONFIGS]
    assert all(len(c) == len(header) and c[2] == c[3] == "1" for c in body)  # one round, proven optimal
    assert all(0 < float(c[-2]) <= float(c[-1]) for c in body)  # median <= max HiGHS time
    header, body = _body(every.splitlines())
    assert len(body) == len(mod.QUICK_SIZES) * len(mod.QUICK_CONFIGS)
    assert all(len(cells) == len(header) for cells in body)
    assert all(cells[-1] == "Optimal" and not math.isnan(float(cells[-3])) for cells in body)
