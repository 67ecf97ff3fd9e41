"""Sweeps over seeds, loads and policies, run in parallel through a ``concurrent.futures.Executor``.

A sweep is a list of :class:`RunSpec` (everything one simulation needs, picklable). :func:`run_sweep` submits
one task per spec to any executor with the standard ``submit`` interface: a ``ProcessPoolExecutor`` by
default, a ``ThreadPoolExecutor``, or a Dask distributed client's executor for sweeps that outgrow one
machine::

    from dask.distributed import Client
    with Client("scheduler-address:8786") as client:
        results = run_sweep(specs, executor=client.get_executor())

Each task generates its trace from its seed (or reads it), so nothing large crosses process boundaries,
and results come back in the order of ``specs`` whatever order the tasks finish in.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from fairshare.errors import InvalidInputError
from fairshare.sim.result import SimulationResult
from fairshare.sim.simulator import simulate

__all__ = ["PARENT_POLL_SECONDS", "RunSpec", "run_spec", "run_sweep", "stop_pool", "watch_parent"]


@dataclass(frozen=True)
class RunSpec:
    """One simulation of a sweep.

    Parameters
    ----------
    policy : str
        Registered policy name.
    cluster : str
        ``"V100=36,P100=36,K80=36"``.
    trace : dict
        Keyword arguments of :func:`fairshare.sim.traces.generate_trace` (``num_jobs``, ``jobs_per_hour``,
        ``seed``, ...), or ``{"path": FILE}`` to read a trace file.
    policy_options : dict
        Constructor options of the policy.
    sim_options : dict
        Keyword arguments of :func:`fairshare.sim.simulator.simulate`: the fields of
        :class:`~fairshare.sim.config.SimConfig` (``round_length``, ``epsilon``, ...), ``catalog`` and
        ``show_progress``.
    label : str
        Name of the run in tables (default: the policy name).
    catalog : tuple of str
        Catalogs to merge, in order: names of :data:`~fairshare.sim.catalog.CATALOGS` or parts, or catalog
        file paths (what ``--catalog`` gives on the command line). Empty: the default catalog, or the
        ``catalog`` of ``sim_options``. The generator draws its models from it and a trace file's models are
        checked against it.
    """

    policy: str
    cluster: str
    trace: dict[str, Any]
    policy_options: dict[str, Any] = field(default_factory=dict)
    sim_options: dict[str, Any] = field(default_factory=dict)
    label: str = ""
    catalog: tuple[str, ...] = ()


def run_spec(spec: RunSpec) -> SimulationResult:
    """Run one spec in this process (the task a sweep submits)."""
    from fairshare.sim.catalog import load_catalog
    from fairshare.sim.traces import generate_trace, read_trace

    opts = {"show_progress": False, **spec.sim_options}
    if spec.catalog:
        if "catalog" in opts:
            raise InvalidInputError("catalog", spec.catalog, "give the catalog in RunSpec.catalog or in "
                                    "sim_options, not both")
        names = (spec.catalog,) if isinstance(spec.catalog, str) else tuple(spec.catalog)
        opts["catalog"] = load_catalog(names)
    tr = dict(spec.trace)
    if "path" in tr:
        trace = read_trace(tr["path"], catalog=opts.get("catalog"))
    else:
        trace = generate_trace(**{"catalog": opts.get("catalog"), **tr})
    return simulate(trace, spec.cluster, spec.policy, policy_options=spec.policy_options,
                    name=spec.label or spec.policy, **opts)


def _safe_context() -> multiprocessing.context.BaseContext:
    """Worker processes that do not inherit this process's threads.

    HiGHS keeps a pool of worker threads once it has solved anything; a child *forked* from such a process
    inherits its locks but not its threads and can deadlock in its first solve. ``forkserver`` (children
    forked from a clean server process) or ``spawn`` avoid that.
    """
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def run_sweep(specs: Sequence[RunSpec], *, executor: Executor | None = None, max_workers: int | None = None,
              show_progress: bool = True) -> list[SimulationResult]:
    """Run every spec, in parallel through ``executor``.

    Parameters
    ----------
    specs : sequence of RunSpec
    executor : concurrent.futures.Executor, optional
        Any executor with ``submit``; default a ``ProcessPoolExecutor`` with ``max_workers`` processes
        (default: the number of CPUs), started with ``forkserver`` (``spawn`` where that is missing) so that
        workers never inherit HiGHS's threads. A Dask ``Client.get_executor()`` drops in.
    show_progress : bool
        One line on stderr per finished run.

    Returns
    -------
    list of SimulationResult
        In the order of ``specs``.
    """
    specs = list(specs)
    own = executor is None
    ex = executor if executor is not None else \
        ProcessPoolExecutor(max_workers=max_workers or os.cpu_count() or 1, mp_context=_safe_context(),
                            initializer=watch_parent, initargs=(os.getpid(),))
    try:
        futures = {ex.submit(run_spec, s): i for i, s in enumerate(specs)}
        results: list[SimulationResult | None] = [None] * len(specs)
        for n, fut in enumerate(as_completed(futures), 1):
            i = futures[fut]
            res = results[i] = fut.result()
            if show_progress:
                print(f"[sweep] {n}/{len(specs)} {specs[i].label or specs[i].policy} "
                      f"({res.wall_seconds:.1f} s)", file=sys.stderr, flush=True)
    except BaseException:  # an error, Ctrl-C or the command's SIGTERM: stop the own pool's workers now
        if own:
            stop_pool(ex)
        raise
    if own:
        ex.shutdown()
    return [r for r in results if r is not None]


PARENT_POLL_SECONDS = 0.5
"""How often a worker of :func:`run_sweep`'s own pool checks that the process that started it is alive."""


def watch_parent(pid: int) -> None:
    """Pool initializer: a daemon thread that ends this worker when process ``pid`` has ended.

    A worker of a ``forkserver`` pool is the server's child, not the caller's, so it outlives a caller killed
    by a signal it cannot handle (``kill -9``); this thread ends it within :data:`PARENT_POLL_SECONDS`.
    """
    def watch() -> None:
        while _alive(pid):
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="fairshare-watch-parent", daemon=True).start()


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not yet reaped, counts as ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - another user's process took the pid
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):  # no /proc (macOS): os.kill is all there is
        return True


def stop_pool(ex: Executor) -> None:
    """Shut ``ex`` down without waiting for its running tasks: pending ones cancelled, workers terminated."""
    workers = list((getattr(ex, "_processes", None) or {}).values())  # no public way before Python 3.14
    ex.shutdown(wait=False, cancel_futures=True)
    for w in workers:
        w.terminate()
    deadline = time.monotonic() + 5.0
    for w in workers:
        w.join(max(0.0, deadline - time.monotonic()))


def grid(policies: Iterable[str], seeds: Iterable[int], loads: Iterable[float], *, cluster: str,
         num_jobs: int, **trace_kwargs: Any) -> list[RunSpec]:
    """The full grid policies x seeds x loads (jobs/hour) as specs with generated traces."""
    return [RunSpec(policy=p, cluster=cluster,
                    trace={"num_jobs": num_jobs, "jobs_per_hour": load, "seed": seed, **trace_kwargs},
                    label=p) for p in policies for seed in seeds for load in loads]
