"""Consecutive rounds: what a scheduler sees from one round to the next, for warm-start tests and benchmarks.

A pool of :func:`~fairshare.testing.random_rounds.random_round` jobs is drawn once; each round keeps the active
jobs, then ``churn`` of them leave and as many new ones arrive. Deficits are carried from ``fast``'s placement
of each round (cold, default options), as the Engine and the simulator carry them, or held as drawn.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fairshare.fair_share import next_deficit
from fairshare.formulation import build_model
from fairshare.methods import fast
from fairshare.methods.options import SolveOptions
from fairshare.problem import RoundProblem
from fairshare.testing.random_rounds import random_round

__all__ = ["consecutive_rounds"]


def consecutive_rounds(jobs: int, rounds: int, *, churn: int = 8, seed: int = 0, carry_deficits: bool = True,
                       num_gpus: int | None = None, **round_options: Any) -> list[RoundProblem]:
    """``rounds`` consecutive rounds of ``jobs`` jobs on ``max(8, jobs // 2)`` GPUs (or ``num_gpus``).

    Parameters
    ----------
    jobs, rounds : int
        Active jobs per round and number of rounds.
    churn : int
        Departures (and as many arrivals) after each round (at most ``jobs - 1``).
    seed : int
        Seed of the job pool and of who leaves.
    carry_deficits : bool
        Carry each job's deficit from ``fast``'s placement (default); False keeps the drawn deficits, so
        that consecutive rounds differ by arrivals and departures only.
    num_gpus : int, optional
        GPUs of the cluster (default ``max(8, jobs // 2)``); far fewer than the jobs make a long queue.
    **round_options
        Keyword arguments of :func:`~fairshare.testing.random_rounds.random_round` (``fairness_weight``,
        ``epsilon``, ...).

    Examples
    --------
    >>> rs = consecutive_rounds(20, 3, churn=2)
    >>> [p.num_jobs for p in rs], len(set(rs[0].job_ids) & set(rs[1].job_ids))
    ([20, 20, 20], 18)
    """
    gpus = max(8, jobs // 2) if num_gpus is None else int(num_gpus)
    pool = random_round(jobs + rounds * churn, seed=seed, num_gpus=gpus, **round_options)
    rng = np.random.default_rng(seed + 1)
    active = np.arange(jobs)
    arriving = jobs
    deficit = pool.deficit.copy()
    out = []
    for _ in range(rounds):
        rows = np.sort(active)
        p = pool.take_jobs(rows).replace(deficit=deficit[rows])
        out.append(p)
        if carry_deficits:
            m = build_model(p)
            x = fast.solve(m, SolveOptions()).x
            assert x is not None
            deficit[rows] = next_deficit(p.deficit, p.epsilon, m.evaluate(x).progress)
        gone = rng.choice(len(active), size=min(churn, len(active) - 1), replace=False)
        active = np.concatenate([np.delete(active, gone), np.arange(arriving, arriving + len(gone))])
        arriving += len(gone)
    return out
