"""Smoke tests of the benchmark scripts at tiny sizes: they run and write what docs/performance.md cites."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests._examples import load_benchmark as load
from tests._examples import table_rows as md_table

ROOT = Path(__file__).resolve().parents[2]


def test_bench_round_quick(tmp_path) -> None:
    assert load("bench_round").main(["--quick", "--out", str(tmp_path)]) == 0
    with open(tmp_path / "bench_round.csv") as f:
        rows = list(csv.DictReader(f))
    modes = {(r["jobs"], r["mode"]) for r in rows}
    assert {("64", m) for m in ("fast", "lp", "exact", "plain-round")} <= modes
    for r in rows:
        if r["mode"] == "fast" and r["value_loss"]:
            assert -1e-9 <= float(r["value_loss"]) <= 0.02  # the quality target
    assert "Speed-up of `fast` over `exact`" in (tmp_path / "bench_round.md").read_text()


def test_bench_simulation_small(tmp_path) -> None:
    mod = load("bench_simulation")
    assert mod.main(["--jobs", "12", "--jobs-per-hour", "30", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "bench_simulation.md").read_text()
    assert "12 of 12 jobs finished" in text


def test_bench_long_trace_small(tmp_path) -> None:
    mod = load("bench_long_trace")
    assert mod.main(["--jobs", "300", "--rounds", "40", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "bench_long_trace.md").read_text()
    assert "offered load" in text
    rows = [line for line in text.splitlines() if line.startswith(("| default |", "| no-polish |"))]
    assert any(line.startswith("| no-polish-warm |") for line in text.splitlines())
    assert len(rows) == 2
    default, plain = ([c.strip() for c in r.strip("|").split("|")] for r in rows)
    assert default[1] == plain[1] == "40"                       # the same rounds were replayed
    assert default[-2].split(" / ")[0] == plain[-2].split(" / ")[0]  # the same trace: same first round
    assert float(plain[7].split()[0]) == 0.0                    # no polish time without the polish
    assert "Wall time per round, no-polish / default:" in text


def test_round_parts_quick(tmp_path) -> None:
    mod = load("round_parts")
    before = [getattr(owner, attr) for owner, attr, _ in mod.PARTS]
    run_before = mod.highs_solver.IncrementalLP.run
    assert mod.main(["--quick", "--out", str(tmp_path)]) == 0
    assert [getattr(owner, attr) for owner, attr, _ in mod.PARTS] == before  # every timer removed again
    text = (tmp_path / "round_parts.md").read_text()
    per_round = float(text.split(" ms per round (")[0].split("; ")[-1])
    rows = {c[0]: (float(c[1]), float(c[2])) for c in md_table(text, "part")}
    assert set(rows) == {label for _, _, label in mod.PARTS}
    assert rows["policy (allocate)"][0] > 0 and rows["HiGHS run"][0] > 0
    assert all(ms <= per_round + 1e-9 and share <= 1.0 for ms, share in rows.values())
    # a part inside another never takes longer than it
    assert rows["HiGHS run"][0] <= rows["LP and rounding"][0] <= rows["policy (allocate)"][0]
    # these small rounds are solved as one LP: no pricing pass to report, and the timer on the runs removed
    assert "No round of the window was solved by pricing" in text
    assert mod.highs_solver.IncrementalLP.run is run_before
    assert mod.main(["--jobs", "50", "--first", "5000", "--last", "5000", "--out", str(tmp_path)]) == 1


def test_round_parts_pricing_passes(tmp_path, monkeypatch) -> None:
    import fairshare.methods.warm as warm

    mod = load("round_parts")
    monkeypatch.setattr(warm, "PRICING_MIN_COLUMNS", 0)  # price every round, so that small rounds have passes
    assert mod.main(["--quick", "--out", str(tmp_path), "--name", "passes"]) == 0
    assert not (tmp_path / "round_parts.md").exists()
    text = (tmp_path / "passes.md").read_text()
    n_rounds = int(text.split(" ms per round (")[1].split(" rounds")[0].replace(",", ""))
    per_round = float(text.split("HiGHS's runs in pricing: ")[1].split(" per round")[0])
    table = md_table(text, "pricing pass")
    passes = [row[0] for row in table]
    assert passes[0] == "1" and passes == sorted(passes)
    runs = [float(row[1]) for row in table]
    # one first pass per priced round (every round here), and no numbered pass more often than the one before
    # it (a round reaches pass k + 1 only through pass k; "4 and later" counts every run from the fourth on)
    assert runs[0] == pytest.approx(1.0, abs=0.01)
    numbered = [r for p, r in zip(passes, runs) if p.isdigit()]
    assert all(later <= earlier + 0.01 for earlier, later in zip(numbered, numbered[1:]))
    assert sum(runs) == pytest.approx(per_round, abs=0.02 * len(runs))
    assert all(float(row[2]) > 0 and float(row[3]) >= 0 for row in table)
    assert all(float(row[4].split(" x ")[0].replace(",", "")) > 0 for row in table)
    assert n_rounds == 51


def test_pricing_batch_quick(tmp_path) -> None:
    import fairshare.methods.warm as warm

    before = warm.PRICING_BATCH
    assert load("pricing_batch").main(["--quick", "--batches", "0", "3", "--out", str(tmp_path)]) == 0
    assert warm.PRICING_BATCH == before  # the module's cap restored
    text = (tmp_path / "pricing_batch.md").read_text()
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith(("| no cap |", "| 3 |"))]
    assert [r[0] for r in rows] == ["no cap", "3"]
    assert rows[0][-2:] == rows[1][-2:]  # short queues are solved cold: the cap changes nothing there


def test_no_polish_quality_quick(tmp_path) -> None:
    assert load("no_polish_quality").main(["--quick", "--workers", "1", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "no_polish_quality.md").read_text()
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith(("| het108 | ", "| het108+h200 | "))]
    assert {(r[0], r[1]) for r in rows if r[1] in ("default", "no-polish")} == {
        (c, v) for c in ("het108", "het108+h200") for v in ("default", "no-polish")}
    ratios = [r for r in rows if r[1] == "0"]  # seed-by-seed rows
    assert len(ratios) == 2 and all(float(r[2]) > 0 for r in ratios)


def test_repeat_under_load_quick_repeats_exactly_with_one_thread(tmp_path) -> None:
    # one HiGHS thread: every run of the same simulation, alone or two at once, gives the same mean JCT
    assert load("repeat_under_load").main(["--quick", "--alone", "1", "--threads", "1", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "repeat_under_load.md").read_text()
    rows = [line.split(" | ") for line in text.splitlines() if line.startswith("| threads=1 |")]
    assert len(rows) == 3 and {r[1] for r in rows} == {"alone", "2 at once"}
    assert len({r[2] for r in rows}) == 1
    assert "threads=1: 1 distinct mean JCT in 3 runs." in text and "default pool" not in text


def test_versions_ab_quick(tmp_path) -> None:
    import pytest

    if not (ROOT / ".git").exists():
        pytest.skip("needs the git repository (a source archive has no history to compare with)")
    mod = load("versions_ab")
    assert mod.main(["--base", "HEAD", "--quick", "--out", str(tmp_path), "--name", "ab"]) == 0
    assert not (tmp_path / "versions_ab.md").exists()
    text = (tmp_path / "ab.md").read_text()
    runs = [line for line in text.splitlines() if line.startswith("| 1 |")]
    assert len(runs) == 1
    base_ms, this_ms, pair_ratio, base_highs, this_highs, per_highs = (
        float(c) for c in runs[0].strip("|").split("|")[1:])
    assert base_ms > 0 and this_ms > 0 and 0 < base_highs <= base_ms and 0 < this_highs <= this_ms
    assert abs(pair_ratio - this_ms / base_ms) <= 0.011   # one pair: its ratio is the ratio of the medians
    # the cells are rounded to 0.01: a relative tolerance covers sub-millisecond HiGHS times of --quick
    assert abs(per_highs - (this_ms / this_highs) / (base_ms / base_highs)) <= 0.03 * per_highs + 0.01
    assert f"the median pair gives {per_highs:.2f}" in text
    ratio = float(text.split("takes **")[1].split("**")[0])
    assert abs(ratio - this_ms / base_ms) <= 0.011
    assert "fairshare-ab-" not in _git("worktree", "list")  # the base's worktree is removed again


def _git(*args: str) -> str:
    import subprocess

    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def test_bench_presolve_quick(tmp_path) -> None:
    import fairshare.methods.warm as warm
    import fairshare.solvers.highs as highs

    before = (warm.solve_relaxation, highs._run_by)
    assert load("bench_presolve").main(["--quick", "--repeats", "1", "--out", str(tmp_path)]) == 0
    assert (warm.solve_relaxation, highs._run_by) == before  # the capture and the status spy removed again
    line = next(x for x in (tmp_path / "bench_presolve_quick.md").read_text().splitlines()
                if x.startswith("| 6 |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    lps = int(cells[4])
    assert lps > 0 and float(cells[5]) > 0 and float(cells[6]) > 0
    # where presolve removed nothing, the point is the same without it
    assert int(cells[9]) >= int(cells[8]) and int(cells[8]) <= lps


def test_bench_highs_options_quick(tmp_path, monkeypatch) -> None:
    import fairshare.methods.relax as relax
    import fairshare.methods.warm as warm
    import fairshare.sim.ledger as ledger
    import fairshare.solvers.highs as highs

    mod = load("bench_highs_options")
    before = (relax.solve_priced, highs.IncrementalLP.__init__, ledger._Ledger.problem)
    assert mod.main(["--quick", "--repeats", "1", "--out", str(tmp_path)]) == 0
    assert "No round of rounds 100-120 was solved by pricing" in (tmp_path / "bench_highs_options_quick.md").read_text()
    monkeypatch.setattr(warm, "PRICING_MIN_COLUMNS", 0)  # price every round, so that these small rounds are kept
    assert mod.main(["--quick", "--repeats", "1", "--out", str(tmp_path)]) == 0
    # the capture, the round counter and the options removed again
    assert (relax.solve_priced, highs.IncrementalLP.__init__, ledger._Ledger.problem) == before
    text = (tmp_path / "bench_highs_options_quick.md").read_text()
    kept = int(text.split(" rounds solved by pricing")[0].split(": ")[-1])
    assert kept == 21  # every round of 100-120 (each has jobs, and every round is priced here)
    rows = {c[0]: c[1:] for c in md_table(text, "HiGHS options")}
    assert list(rows) == [label for label, _ in mod.VARIANTS]
    reference = rows["fairshare's options"]
    assert float(reference[1]) == 1.0 and reference[4] == f"{kept} of {kept}"  # the reference against itself
    for cells in rows.values():
        assert float(cells[0]) > 0 and float(cells[2]) >= 1.0  # every priced round runs HiGHS at least once
        assert 0 <= int(cells[4].split(" of ")[0]) <= kept


def test_bench_highs_options_sets_the_options() -> None:
    import numpy as np

    import fairshare.solvers.highs as highs
    from fairshare.formulation import CscArrays, LinearProgram

    def option(h: object, name: str) -> object:
        got = h.getOptionValue(name)  # type: ignore[attr-defined]
        return got[1] if isinstance(got, tuple) else got  # (status, value) in some highspy versions

    mod = load("bench_highs_options")
    lp = LinearProgram(np.ones(1), CscArrays(np.array([0, 1], np.int32), np.array([0], np.int32), np.ones(1), (1, 1)),
                       np.full(1, -np.inf), np.ones(1), np.zeros(1), np.ones(1), 1)
    defaults = {k: option(highs.IncrementalLP(lp).highs, k) for _, options in mod.VARIANTS for k in options}
    for label, options in mod.VARIANTS[1:]:
        assert options and all(defaults[k] != v for k, v in options.items()), label  # each variant changes something
        with mod.highs_options(options):
            h = highs.IncrementalLP(lp).highs
            assert all(option(h, k) == v for k, v in options.items()), label
        assert all(option(highs.IncrementalLP(lp).highs, k) == defaults[k] for k in options)  # restored
    with pytest.raises(RuntimeError, match="no_such_option"), mod.highs_options({"no_such_option": 1}):
        highs.IncrementalLP(lp)


def test_bench_engine_memory_runs_a_few_rounds(capsys) -> None:
    mod = load("bench_engine_memory")
    points = mod.run(40, 20)
    assert [r for r, _, _ in points] == [20, 40]
    assert mod.main(["--rounds", "40", "--every", "10"]) == 0
    assert "per 1,000 rounds" in capsys.readouterr().out
