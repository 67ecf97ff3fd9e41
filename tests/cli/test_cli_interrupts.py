"""Interrupted commands: no process outlives ``compare``, and a run folder is complete or marked incomplete."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fairshare.cli import main
from fairshare.cli.simulate import INCOMPLETE, RUN_FILES

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ("jct_cdf.png", "rho_cdf.png", "efficiency.png", "solver_time.png")


def _session(sid: int) -> list[int]:
    """Live (not zombie) processes of session ``sid``."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != b"Z":
            pids.append(int(entry))
    return pids


def _compare_then_signal(tmp_path: Path, sig: int) -> tuple[int, list[int], list[int]]:
    """Start ``compare --workers 2``, signal the command once its workers run; (status, before, after)."""
    assert main(["trace", "-o", str(tmp_path / "t.csv"), "--jobs", "100", "--jobs-per-hour", "4", "--seed", "1"]) == 0
    cmd = [sys.executable, "-m", "fairshare", "compare", "--trace", str(tmp_path / "t.csv"), "--cluster",
           "V100=8,P100=8,K80=8", "--max-rounds", "400", "--workers", "2", "--policy", "fairshare", "--policy",
           "gavel", "--out", str(tmp_path / "out"), "--no-plots"]
    p = subprocess.Popen(cmd, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(_session(p.pid)) < 4 and time.monotonic() < deadline:  # command, server, tracker, workers
            time.sleep(0.2)
        time.sleep(1.0)  # the workers are simulating
        before = _session(p.pid)
        p.send_signal(sig)
        p.wait(timeout=60)
        time.sleep(PARENT_GRACE)
        after = _session(p.pid)
    finally:
        for pid in _session(p.pid):  # whatever the outcome, leave nothing behind
            os.kill(pid, signal.SIGKILL)
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, before, after


PARENT_GRACE = 3.0  # seconds: workers poll their parent every 0.5 s; the server and tracker follow them


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_sigterm_to_compare_stops_every_process_it_started(tmp_path: Path) -> None:
    status, before, after = _compare_then_signal(tmp_path, signal.SIGTERM)
    assert len(before) >= 4
    assert status == 143
    assert after == []


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_kill_9_to_compare_leaves_no_worker(tmp_path: Path) -> None:
    status, before, after = _compare_then_signal(tmp_path, signal.SIGKILL)
    assert len(before) >= 4
    assert status == -signal.SIGKILL
    assert after == []


def _simulate(out: Path, *extra: str) -> int:
    trace = ROOT / "fairshare" / "data" / "default_trace.csv"
    return main(["simulate", "--trace", str(trace), "--cluster", "V100=8,P100=8,K80=8", "--max-rounds", "5",
                 "--policy", "fifo", "--out", str(out), *extra])


def _old_run(out: Path) -> None:
    """What an earlier run leaves in ``out``: every run file, and one file that is not the run's."""
    out.mkdir()
    for name in RUN_FILES:
        (out / name).write_text("old run")
    (out / "notes.txt").write_text("mine")


def test_a_no_plots_run_leaves_no_figure_of_an_earlier_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _old_run(out)
    assert _simulate(out, "--no-plots") == 0
    left = {p.name for p in out.iterdir()}
    assert not left & set(FIGURES)
    assert not (out / "records.json.gz").exists()
    assert "old run" not in (out / "results.md").read_text()
    assert INCOMPLETE not in left
    assert (out / "notes.txt").read_text() == "mine"  # only the run's own files are removed


@pytest.mark.parametrize("stop", [KeyboardInterrupt, OSError])
def test_a_run_stopped_while_writing_is_marked_incomplete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          stop: type[BaseException]) -> None:
    from fairshare.sim import plots

    def interrupted(*args: object, **kwargs: object) -> None:
        raise stop(28, "No space left on device") if stop is OSError else stop()

    monkeypatch.setattr(plots, "plot_rho_cdf", interrupted)
    out = tmp_path / "out"
    _old_run(out)
    assert _simulate(out) == (130 if stop is KeyboardInterrupt else 2)
    assert (out / INCOMPLETE).is_file()
    assert "interrupted" in (out / INCOMPLETE).read_text()
    assert not any((out / name).exists() and (out / name).read_bytes() == b"old run" for name in RUN_FILES)


def test_a_run_stopped_before_writing_leaves_the_earlier_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # Ctrl-C while simulating

    out = tmp_path / "out"
    _old_run(out)
    monkeypatch.setattr("fairshare.sim.sweep.run_spec", interrupted)
    assert _simulate(out) == 130
    assert all((out / name).read_text() == "old run" for name in RUN_FILES)
    assert not (out / INCOMPLETE).exists()
