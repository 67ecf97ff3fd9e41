"""Sweeps through the standard Executor interface: processes, threads, and a Dask distributed client."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from fairshare.sim.sweep import RunSpec, grid, run_spec, run_sweep

TRACE = {"num_jobs": 12, "jobs_per_hour": 30, "multi_gpu": False}
SIM = {"round_length": 3600.0}


def specs() -> list[RunSpec]:
    return [RunSpec(policy=p, cluster="V100=2,P100=2,K80=2", trace={**TRACE, "seed": s}, sim_options=SIM,
                    label=f"{p}-{s}") for p in ("fairshare", "fifo") for s in (0, 1)]


def finishes(results) -> list[list[float]]:
    return [[j.finish for j in r.jobs] for r in results]


def test_results_come_back_in_spec_order_and_match_serial_runs() -> None:
    serial = [run_spec(s) for s in specs()]
    with ThreadPoolExecutor(max_workers=2) as ex:
        threaded = run_sweep(specs(), executor=ex, show_progress=False)
    assert [r.policy for r in threaded] == [s.label for s in specs()]
    assert finishes(threaded) == finishes(serial)


def test_process_pool_is_the_default() -> None:
    out = run_sweep(specs()[:2], max_workers=2, show_progress=False)
    assert finishes(out) == finishes([run_spec(s) for s in specs()[:2]])


def test_dask_client_executor_drops_in() -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as lc, \
            distributed.Client(lc) as client:
        out = run_sweep(specs()[:2], executor=client.get_executor(), show_progress=False)
    assert finishes(out) == finishes([run_spec(s) for s in specs()[:2]])


def test_grid_is_the_full_product() -> None:
    g = grid(["a", "b"], [0, 1, 2], [2.0, 4.0], cluster="V100=1", num_jobs=5)
    assert len(g) == 12
    assert {(s.policy, s.trace["seed"], s.trace["jobs_per_hour"]) for s in g} == {
        (p, s, load) for p in "ab" for s in (0, 1, 2) for load in (2.0, 4.0)}


def test_process_pool_after_highs_has_run_in_this_process() -> None:
    # HiGHS's thread pool exists once anything was solved here; a forked worker would inherit its locks and
    # could deadlock. The default pool must not fork from this process.
    from fairshare import allocate
    from fairshare.testing.random_rounds import random_round

    allocate(random_round(300, seed=0), mode="exact")
    out = run_sweep(specs()[:2], max_workers=2, show_progress=False)
    assert [r.policy for r in out] == [s.label for s in specs()[:2]]
