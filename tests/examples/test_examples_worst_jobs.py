"""examples/worst_jobs.py: causes and waits checked against the simulation's own records; where it writes."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from _examples import load_example, read_csv, table_rows

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "tests" / "data" / "traces" / "generic" / "my_cluster.csv"
CLUSTER, UNTIL = "T4=4", 12.0          # a small cluster: some of the sample's jobs queue for several rounds


def _job(scale: int = 1, finish: float = 7200.0) -> SimpleNamespace:
    # 3,600 iterations at 1 it/s fair throughput: ideal 1 h; finish at 2 h gives rho 2.
    return SimpleNamespace(id="j", model="m", scale=scale, arrival=0.0, finish=finish, iterations=3600.0,
                           fair_throughput=1.0)


@pytest.mark.parametrize(("job", "history", "cause", "plans_waited"), [
    # arrived to a full cluster, first placed by the next plan 300 s later: the wait for the boundary explains it
    (_job(finish=3900.0), [(300.0, True, 1.0, 0.0)], "boundary", 0),
    # left out by two plans, placed by the third: the wait explains it, but it queued for rounds
    (_job(finish=4320.0), [(0.0, False, 0.0, 0.0), (360.0, False, 0.0, 1.0), (720.0, True, 1.0, 2.0)], "queued", 2),
    # first placed 3,500 s after its arrival (no plan recorded before): longer than a round is no boundary wait
    (_job(finish=7200.0), [(3500.0, True, 1.0, 0.0)], "queued", 0),
    # a gang left out of a round while active
    (_job(scale=4), [(0.0, True, 1.0, 0.0), (360.0, False, 0.0, 0.5)], "gang", 0),
    # placed every round but finished owing
    (_job(), [(0.0, True, 0.5, 0.0), (360.0, True, 0.5, 0.4)], "unpaid", 0),
    # placed every round below its fair progress, nothing owed at the end
    (_job(), [(0.0, True, 0.5, 0.0), (360.0, True, 0.5, 0.0)], "shared", 0),
])
def test_explain_gives_each_cause(job: SimpleNamespace, history: list, cause: str, plans_waited: int) -> None:
    row = load_example("worst_jobs").explain(job, history, 360.0)
    assert row["cause"] == cause
    assert row["plans_waited"] == plans_waited
    assert row["rho"] == pytest.approx((job.finish - job.arrival) / 3600.0)


def test_a_start_between_rounds_is_the_first_start() -> None:
    mod = load_example("worst_jobs")
    history = [(3500.0, True, 1.0, 0.0)]    # first planned at 3,500 s ...
    row = mod.explain(_job(finish=7200.0), history, 360.0, first_start=0.0)   # ... but started at its arrival
    assert row["first_wait_s"] == 0.0 and row["plans_waited"] == 0 and row["cause"] not in ("boundary", "queued")
    row = mod.explain(_job(finish=3900.0), [(0.0, False, 0.0, 0.0), (360.0, True, 1.0, 0.0)], 360.0, first_start=300.0)
    assert row["first_wait_s"] == 300.0 and row["plans_waited"] == 1 and row["cause"] == "queued"


def _compare_setting(**overrides: Any) -> tuple[dict[str, Any], Any]:
    """The fairshare policy's defaults and ``fairshare compare``'s simulation options, read independently."""
    from fairshare.cli import build_parser
    from fairshare.policies import policy_options
    from fairshare.sim import SimConfig

    a = build_parser().parse_args(["compare"])
    options = {"round_length": a.round_length, "epsilon": a.epsilon, "restart_overhead": a.restart_overhead,
               "max_pairs_per_job": a.max_pairs, "colocation": not a.no_colocation, "starts": a.starts,
               "until": UNTIL * 3600.0}
    cfg = SimConfig(**{**options, **overrides})
    return policy_options("fairshare"), cfg


def _sample_trace(folder: Path) -> Path:
    """The shipped generic sample imported for T4 and A10 (12 h of arrivals), as a JSON trace."""
    from fairshare.sim.catalog import load_catalog
    from fairshare.sim.importers import CsvColumns, import_trace
    from fairshare.sim.traces import format_trace

    cols = CsvColumns(arrival="submitted", gpus="gpus", duration="runtime_min", time_unit="min", id="job")
    res = import_trace([SAMPLE], "csv", catalog=load_catalog("modern"), columns=cols, fractional="whole",
                       gpu_types=("T4", "A10"), window=(0, 12))
    trace = folder / "sample.json"
    trace.write_text(format_trace(res.trace, "json"))
    return trace


def _run_script(cwd: Path, trace: Path, *extra: str) -> list[dict[str, str]]:
    mod = load_example("worst_jobs")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(cwd)
        assert mod.main(["--trace", str(trace), "--catalog", "modern", "--cluster", CLUSTER, "--until", f"{UNTIL:g}",
                         "--name", "w", "--out", "reports/here", *extra]) == 0
    return read_csv(cwd / "reports" / "here" / "w.csv")


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The script on the shipped generic sample (12 h on 4 T4), run from an empty folder with ``--out``."""
    cwd = tmp_path_factory.mktemp("cwd")
    trace = _sample_trace(tmp_path_factory.mktemp("trace"))
    rows = _run_script(cwd, trace)
    return {"cwd": cwd, "trace": trace, "rows": rows, "md": (cwd / "reports/here/w.md").read_text(),
            "mod": load_example("worst_jobs")}


def _check_against_the_records(rows: list[dict[str, str]], trace: Path, cfg: Any) -> Any:
    """Rerun the same simulation without the script; first starts from the GPU holds, plans from the rounds."""
    from fairshare.policies import get_policy
    from fairshare.sim import read_trace, simulate
    from fairshare.sim.catalog import load_catalog

    cat = load_catalog("modern")
    res = simulate(read_trace(trace, catalog=cat), CLUSTER, get_policy("fairshare"), config=cfg, catalog=cat,
                   show_progress=False, record_holds=True)
    first: dict[str, float] = {}
    for h in res.holds:
        for j in h.jobs:
            first[j] = min(first.get(j, h.start), h.start)
    plan_times = np.array([r.start for r in res.rounds])       # one round record per plan
    expect = {}
    for job in res.jobs:
        if not np.isfinite(job.finish):
            continue
        ideal = job.iterations / job.fair_throughput
        jct = job.finish - job.arrival
        if jct / ideal > 1.05:
            wait = first[job.id] - job.arrival
            plans = int(((plan_times >= job.arrival) & (plan_times < first[job.id])).sum())
            expect[job.id] = (jct / ideal, wait, plans, (jct - wait) / ideal <= 1.05)
    by_id = {r["id"]: r for r in rows}
    assert set(by_id) == set(expect)
    for jid, (rho, wait, plans, wait_explains) in expect.items():
        r = by_id[jid]
        assert float(r["rho"]) == pytest.approx(rho)
        assert float(r["first_wait_s"]) == pytest.approx(wait, abs=1e-6)
        assert int(r["plans_waited"]) == plans
        assert (r["cause"] in ("boundary", "queued")) == wait_explains
        if wait_explains:
            assert r["cause"] == ("boundary" if plans == 0 and wait < cfg.round_length else "queued")
    return res


def test_causes_and_waits_match_the_simulation_records(sample_run: dict[str, Any]) -> None:
    _, cfg = _compare_setting()
    _check_against_the_records(sample_run["rows"], sample_run["trace"], cfg)
    # the sample has jobs that waited several rounds; none of them is a boundary wait
    several = [r for r in sample_run["rows"] if int(r["plans_waited"]) >= 2]
    assert several and all(r["cause"] != "boundary" for r in several)
    assert any(r["cause"] == "queued" for r in several)


def test_with_event_replanning_the_plans_at_events_are_counted(tmp_path: Path) -> None:
    """``--starts events``: passed to the simulation as compare passes it; every plan, at a boundary or an event,
    counts in ``plans_waited``."""
    trace = _sample_trace(tmp_path)
    rows = _run_script(tmp_path, trace, "--starts", "events", "--event-spacing", "60")
    _, cfg = _compare_setting(starts="events", event_spacing=60.0)
    res = _check_against_the_records(rows, trace, cfg)
    assert any(r.length < cfg.round_length for r in res.rounds)    # it did plan at events
    md = (tmp_path / "reports/here/w.md").read_text()
    assert "starts 'events' (at least 60 s between plans)" in md


def test_report_states_the_compare_defaults_and_counts_by_class(sample_run: dict[str, Any]) -> None:
    opts, cfg = _compare_setting()
    md, rows, mod = sample_run["md"], sample_run["rows"], sample_run["mod"]
    for k in ("mode", "priority", "shortfall_price"):
        assert f"{k} {opts[k]!r}" in md
    assert f"{cfg.round_length:g} s rounds, starts {cfg.starts!r}" in md
    assert f"restart overhead {cfg.restart_overhead:g} s" in md
    assert f"the trace sample.json on {CLUSTER} (catalog modern, until {UNTIL:g} h)" in md
    assert all(float(r["rho"]) > 1.05 and r["seed"] == "0" and r["cause"] in mod.CAUSES for r in rows)
    table = {r[0]: r for r in table_rows(md, "duration class (alone on the fastest type)")}
    n = len(mod.CAUSES)
    for cls, row in table.items():
        mine = [r for r in rows if r["class"] == cls]
        assert [int(x) for x in row[1:n + 1]] == [sum(r["cause"] == c for r in mine) for c in mod.CAUSES]
        assert int(row[n + 1]) == len(mine)
        assert int(row[n + 2]) == sum(int(r["plans_waited"]) > 0 for r in mine)
    assert sum(int(r[n + 1]) for r in table.values()) == len(rows)


def _files(root: Path) -> set[Path]:
    return {Path(d, f).relative_to(root) for d, _, fs in os.walk(root) for f in fs}


def test_out_is_the_only_place_written(sample_run: dict[str, Any]) -> None:
    assert _files(sample_run["cwd"]) == {Path("reports/here/w.md"), Path("reports/here/w.csv")}


def test_a_default_run_writes_under_results_and_nothing_under_docs(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    docs = REPO / "docs"
    before = {p: p.stat().st_mtime_ns for p in docs.rglob("*")}
    (tmp_path / "docs" / "results").mkdir(parents=True)        # a checkout's layout, seen from its root
    monkeypatch.chdir(tmp_path)
    mod = load_example("worst_jobs")
    assert mod.main(["--quick"]) == 0
    written = _files(tmp_path)
    assert {p.parent for p in written} == {Path("results")} and {p.suffix for p in written} == {".md", ".csv"}
    assert len(written) == 2 and len({p.stem for p in written}) == 1
    assert not any((tmp_path / "docs").rglob("*.*"))
    assert {p: p.stat().st_mtime_ns for p in docs.rglob("*")} == before
    md = next((tmp_path / "results").glob("*.md")).read_text()
    assert "Command: `python examples/worst_jobs.py --quick`" in md


@pytest.mark.parametrize("argv", [
    ["--cluster", "T4=2"],                                   # --cluster without --trace
    ["--trace", "t.json", "--seeds", "1"],                   # seeds with a trace
    ["--name", "../docs/results/x"],                         # a name that is a path
    ["--name", "sub/x"],
    ["--priority", "nope"],                                  # the policy refuses it, before any run
    ["--starts", "nope"],
    ["--round-length", "-1"],
    ["--trace", "t.json", "--catalog", "nope"],              # an unknown catalog
    ["--trace", "no_such_trace.json"],                       # a trace that cannot be read
])
def test_refused_arguments(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        load_example("worst_jobs").main([*argv, "--out", str(tmp_path / "o")])
    assert e.value.code == 2
    assert "error: --" in capsys.readouterr().err                  # the message names the option
    assert not (tmp_path / "o").exists()


def test_the_recorder_is_the_policy_to_the_simulator() -> None:
    """Whatever the simulator asks of the policy (its name, whether it re-plans at events, ...) is the policy's."""
    from fairshare.policies import get_policy

    pol = get_policy("fairshare", priority="none")
    rec = load_example("worst_jobs").Recorder(pol)
    assert rec.name == pol.name and rec.priority == "none" and rec.mode == pol.mode
    assert getattr(rec, "replans_on_events", None) == getattr(pol, "replans_on_events", None)
    with pytest.raises(AttributeError):
        _ = rec.no_such_attribute
