"""Gavel's two reference shares of a round: the proportional and the isolated throughput of every job.

Gavel's policies measure a job's throughput against one of two simple shares of the cluster, neither of which
looks at gang sizes when it splits the cluster or at weights (Narayanan et al., OSDI'20; Gavel's
``ProportionalPolicy`` and ``IsolatedPolicy``):

Proportional throughput (:func:`proportional_throughput`)
    ``prop_j = sum_g (C_g / C) T[j, g]``: the throughput of job ``j`` if it ran all the time, spread over
    the types in proportion to their GPU counts (``C = sum_g C_g``). ``gavel`` normalises by it.
Isolated throughput (:func:`isolated_throughput`)
    ``iso_j = min(C / N, s_j) / s_j * prop_j``: the cluster split equally among the ``N`` jobs of the round,
    ``C / N`` GPUs of it per job (in proportion to capacity on every type), scaled down to the job's gang
    when ``C / N > s_j`` so that its time adds up to at most 1. ``ftf`` measures finish times against it.

``T[j, g]`` counts 0 where the job cannot run (no throughput, or fewer GPUs of the type than its gang):
placements that the round does not offer add nothing, so the isolated plan (``x[j, g] = min(C / N, s_j) /
s_j * C_g / C`` on the types where ``j`` runs) is always a feasible plan of the round with ``tau_j = iso_j``.
In Gavel's own rounds every job can run on every type, and the two definitions agree.
"""

from __future__ import annotations

import numpy as np

from fairshare.problem import RoundProblem

__all__ = ["isolated_throughput", "proportional_throughput"]


def proportional_throughput(problem: RoundProblem) -> np.ndarray:
    """``prop_j = sum_g (C_g / C) T[j, g]`` (steps/s) for every job of the round (module doc).

    Examples
    --------
    >>> p = RoundProblem.from_dict({"gpus": {"A": 1, "B": 3}, "jobs": [
    ...     {"id": "x", "scale": 1, "throughput": {"A": 4.0, "B": 2.0}},
    ...     {"id": "y", "scale": 2, "throughput": {"A": 8.0, "B": 4.0}}]})
    >>> proportional_throughput(p).tolist()  # y cannot run on the single A GPU
    [2.5, 3.0]
    """
    cap = problem.capacity.astype(np.float64)
    total = float(cap.sum())
    if problem.num_jobs == 0 or total <= 0:
        return np.zeros(problem.num_jobs)
    tput = np.where(problem.runnable, problem.throughput, 0.0)
    return tput @ (cap / total)


def isolated_throughput(problem: RoundProblem) -> np.ndarray:
    """``iso_j = min(C / N, s_j) / s_j * prop_j`` (steps/s) for every job of the round (module doc).

    Examples
    --------
    >>> p = RoundProblem.from_dict({"gpus": {"A": 4}, "jobs": [
    ...     {"id": "x", "scale": 1, "throughput": {"A": 3.0}},
    ...     {"id": "y", "scale": 4, "throughput": {"A": 8.0}}]})
    >>> isolated_throughput(p).tolist()  # 2 GPUs each: x is held to its one GPU, y gets half of its time
    [3.0, 4.0]
    """
    n = problem.num_jobs
    if n == 0:
        return np.zeros(0)
    scale = problem.scale.astype(np.float64)
    per_job = float(problem.capacity.sum()) / n
    return np.minimum(per_job, scale) / scale * proportional_throughput(problem)
