"""A placement's section 3 numbers recomputed from the round alone, for tests that must not trust the library.

:func:`recompute` takes the round and a list of placements (the jobs, the GPU type and the share of each, as
an allocation document lists them) and computes every reported number with the formulas of the round problem
(docs/formulation.md), in plain loops: it does not use :class:`~fairshare.formulation.RoundModel`, its columns
or its evaluation. Only the fair throughput comes from :func:`fairshare.fair_share.fair_share` (its own tests
check it). Use it to check that an allocation's reported numbers are those of its placements.

Examples
--------
>>> from fairshare import allocate
>>> from fairshare.problem import RoundProblem
>>> p = RoundProblem(["V100"], [1], ["a", "b"], [1, 1], [[2.0], [1.0]])
>>> alloc = allocate(p, mode="exact")
>>> ref = recompute(p, placements_of(alloc))
>>> bool(abs(ref["objective"] - alloc.values.objective) < 1e-9)
True
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from fairshare.allocation import Allocation
from fairshare.fair_share import fair_share
from fairshare.problem import RoundProblem

__all__ = ["placements_of", "recompute"]

PlacementRow = tuple[tuple[str, ...], str, float]


def placements_of(alloc: Allocation) -> list[PlacementRow]:
    """``(jobs, gpu type, share)`` of each placement of ``alloc``."""
    return [(p.jobs, p.gpu, p.share) for p in alloc.placements]


def recompute(problem: RoundProblem, placements: Iterable[PlacementRow]) -> dict[str, Any]:
    """Every number of a (fractional) placement, from the round alone.

    Returns
    -------
    dict
        ``tau``, ``rho``, ``sigma``, ``next_deficit`` (arrays over the jobs, in the round's order),
        ``efficiency`` (``E``), ``prioritized_efficiency`` (``E_pi``), ``shortfall`` (``S``, weights normalised
        to mean 1), ``priced_shortfall`` (``S_f = sum_j w_j f_j sigma_j`` with the shortfall prices),
        ``objective`` (``E_pi - lambda S_f``) and ``obj_null`` (the objective of placing nothing). A running job
        (spec section 11) placed on another type or beside another partner gets its throughput times
        ``max(0, 1 - restart_seconds / round_seconds)``.
    """
    n = problem.num_jobs
    idx = {j: i for i, j in enumerate(problem.job_ids)}
    pairs: dict[tuple[int, int, int], tuple[float, float]] = {}
    for (a, b), g, (ta, tb) in zip(problem.pair_jobs.tolist(), problem.pair_gpu.tolist(),
                                   problem.pair_throughput.tolist()):
        pairs[(a, b, g)] = (ta, tb)
        pairs[(b, a, g)] = (tb, ta)
    run = problem.running

    def kept(j: int, g: int, partner: int) -> float:
        """What job j keeps of its throughput in a placement on type g beside partner (-1: alone)."""
        if run is None or run.gpu[j] < 0 or (run.gpu[j] == g and run.partner[j] == partner):
            return 1.0
        return max(0.0, 1.0 - float(run.restart_seconds[j]) / run.round_seconds)

    tau = np.zeros(n)
    for jobs, gpu, share in placements:
        g = problem.gpu_types.index(gpu)
        if len(jobs) == 1:
            j = idx[jobs[0]]
            tau[j] += share * float(problem.throughput[j, g]) * kept(j, g, -1)
        else:
            a, b = idx[jobs[0]], idx[jobs[1]]
            ta, tb = pairs[(a, b, g)]
            tau[a] += share * ta * kept(a, g, b)
            tau[b] += share * tb * kept(b, g, a)
    if n == 0:
        zero = np.zeros(0)
        return {"tau": zero, "rho": zero, "sigma": zero, "next_deficit": zero, "efficiency": 0.0,
                "prioritized_efficiency": 0.0, "shortfall": 0.0, "priced_shortfall": 0.0, "objective": 0.0,
                "obj_null": 0.0}
    tfair = fair_share(problem).fair_throughput
    runnable = (problem.throughput > 0) & (problem.scale[:, None] <= problem.capacity[None, :])
    tmax = np.where(runnable, problem.throughput, 0.0).max(axis=1)
    w = problem.weight / problem.weight.max()  # the mean of weights up to 1e308 could overflow
    w = w / w.mean()
    need = 1 - problem.epsilon + problem.deficit
    rho = tau / tfair
    sigma = np.maximum(0.0, need - rho)
    work = problem.scale * tau / tmax
    e, e_pi = float(work.sum()), float((problem.priority * work).sum())
    s = float((w * sigma).sum())
    wf = w * problem.shortfall_price
    s_f = float((wf * sigma).sum())
    lam = problem.fairness_weight
    return {"tau": tau, "rho": rho, "sigma": sigma, "next_deficit": np.maximum(0.0, need - rho),
            "efficiency": e, "prioritized_efficiency": e_pi, "shortfall": s, "priced_shortfall": s_f,
            "objective": e_pi - lam * s_f, "obj_null": -lam * float(wf @ need)}
