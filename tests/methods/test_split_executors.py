"""Split rounds on executors that misbehave: fork-started pools, dead pools, shut-down pools, non-executors.

The contract (docs/reliability.md, "Split rounds"): a split round through any executor finishes or raises a
fairshare error; it never hangs, and an executor that fails is replaced by solving the parts in this process.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import pytest

from fairshare import allocate
from fairshare.errors import InvalidInputError
from fairshare.testing.random_rounds import random_round
from fairshare.validators import allocation_violations

ROOT = Path(__file__).resolve().parents[2]

# A split round whose parts polish (part-of-a-GPU requests) on a fork-started pool, after the parent has run
# HiGHS (the sample LP that prices the GPUs): before the fix the children waited forever on HiGHS threads
# that stayed in the parent, at 100 % CPU.
_FORK_SCRIPT = textwrap.dedent("""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from fairshare import allocate
    from fairshare.testing.random_rounds import random_round
    d = random_round(300, seed=3).to_dict()
    for k, j in enumerate(d["jobs"]):
        if j["scale"] == 1 and k % 5 < 2:
            j["scale"] = [0.3, 0.5, 0.25][k % 3]
    scale = {j["id"]: j["scale"] for j in d["jobs"]}
    d["colocation"] = [c for c in d.get("colocation", []) if scale[c["jobs"][0]] == scale[c["jobs"][1]]]
    allocate(d, mode="exact", time_limit=5)  # HiGHS's MILP pool started in the parent before the fork
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
        a = allocate(d, mode="fast", partitions=4, executor=pool)
    print("done", a.status, a.report.message)
""")


def _run_isolated(script: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run ``script`` in a new session; on timeout kill the whole session (no orphaned workers)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        pytest.fail(f"the split round did not finish in {timeout} s")
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs the fork start method")
def test_a_split_round_on_a_fork_started_pool_finishes_after_the_parent_solved() -> None:
    r = _run_isolated(_FORK_SCRIPT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "done heuristic split into 4 parts, 4 polished" in r.stdout


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_solves_after_the_parent_used_highs_in_another_thread() -> None:
    """The hook renews the HiGHS layer's locks and pool in the child whatever the parent was doing."""
    script = textwrap.dedent("""
        import os, threading
        from fairshare import allocate
        from fairshare.testing.random_rounds import random_round
        p = random_round(60, seed=1)
        threading.Thread(target=allocate, args=(p,), kwargs={"mode": "exact", "threads": 2}).start()
        allocate(p, mode="exact", threads=2)
        pid = os.fork()
        if pid == 0:
            a = allocate(p, mode="exact", threads=1)
            os._exit(0 if str(a.status) == "optimal" else 3)
        print("child", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    """)
    r = _run_isolated(script, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "child 0" in r.stdout


def test_a_pool_whose_worker_was_killed_falls_back_to_this_process() -> None:
    p = random_round(120, seed=2)
    want = allocate(p, mode="fast", partitions=3)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        pool.submit(abs, 1).result()
        os.kill(next(iter(pool._processes)), signal.SIGKILL)  # noqa: SLF001
        first = allocate(p, mode="fast", partitions=3, executor=pool)
        second = allocate(p, mode="fast", partitions=3, executor=pool)  # the pool stays broken: the next round too
    for a in (first, second):
        assert not allocation_violations(p, a)
        assert a.placements == want.placements
        assert "solved in this process" in a.report.message and "BrokenProcessPool" in a.report.message


def test_a_shut_down_pool_falls_back_to_this_process() -> None:
    p = random_round(80, seed=4)
    pool = ThreadPoolExecutor(2)
    pool.shutdown()
    a = allocate(p, mode="fast", partitions=2, executor=pool)
    assert a.placements == allocate(p, mode="fast", partitions=2).placements
    assert "solved in this process" in a.report.message


class _Failing(Executor):
    """An executor whose every future fails like a lost remote worker."""

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def, override]
        f: Future[object] = Future()
        f.set_exception(ConnectionError("worker lost"))
        return f


def test_failed_futures_are_solved_again_here() -> None:
    p = random_round(80, seed=5)
    a = allocate(p, mode="fast", partitions=2, executor=_Failing())
    assert a.placements == allocate(p, mode="fast", partitions=2).placements
    assert "ConnectionError" in a.report.message


@pytest.mark.parametrize("bad", ["string", 3, object()])
def test_allocate_refuses_an_executor_that_is_not_one(bad: object) -> None:
    with pytest.raises(InvalidInputError, match="executor"):
        allocate(random_round(8, seed=0), mode="fast", partitions=2, executor=bad)  # type: ignore[arg-type]
