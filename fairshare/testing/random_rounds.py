"""Random rounds shaped like the real catalog, for benchmarks and property tests.

Four GPU types (K80, P100, V100, H200; capacity split 30/30/30/10 %), gang sizes 1/2/4/8 with probabilities
70/10/15/5 %, alone throughputs with catalog-like speedups (V100 base; K80 0.15-0.45x, P100 0.5-0.95x,
H200 1.5-4x; 5 % of jobs cannot run on K80, 30 % have no H200 data), about ``pairs_per_job`` co-location
candidates per job among jobs of the same gang size, each member slowed to 35-100 % of its alone throughput
(combined normalised throughput median about 1.35, as in Gavel's V100 data), optional heavy weights and
carried deficits. Everything is drawn from ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import numpy as np

from fairshare.problem import RoundProblem

__all__ = ["GPU_TYPES", "fractional_round", "random_round"]

GPU_TYPES = ("K80", "P100", "V100", "H200")
_CAP_SPLIT = np.array([0.3, 0.3, 0.3, 0.1])
_SCALES = np.array([1, 2, 4, 8])
_SCALE_P = np.array([0.70, 0.10, 0.15, 0.05])


def random_round(
    num_jobs: int,
    *,
    seed: int = 0,
    num_gpus: int | None = None,
    pairs_per_job: float = 4.0,
    weighted_fraction: float = 0.0,
    deficit_fraction: float = 0.5,
    epsilon: float = 0.0,
    fairness_weight: float = 100.0,
) -> RoundProblem:
    """A random round of ``num_jobs`` jobs on about ``num_jobs / 2`` GPUs (see the module doc).

    Examples
    --------
    >>> p = random_round(64, seed=1)
    >>> p.num_jobs, p.gpu_types, p.total_gpus >= 32
    (64, ('K80', 'P100', 'V100', 'H200'), True)
    """
    rng = np.random.default_rng(seed)
    n = int(num_jobs)
    total = max(8, round(n / 2)) if num_gpus is None else int(num_gpus)
    cap = np.floor(_CAP_SPLIT * total).astype(np.int64)
    cap[2] += total - cap.sum()
    scale = rng.choice(_SCALES, size=n, p=_SCALE_P)
    scale = np.minimum(scale, cap.max())
    base = np.exp(rng.normal(np.log(20.0), 1.0, size=n)) * np.sqrt(scale)
    ratio = np.column_stack([rng.uniform(0.15, 0.45, n), rng.uniform(0.5, 0.95, n), np.ones(n),
                             rng.uniform(1.5, 4.0, n)])
    ratio[rng.random(n) < 0.05, 0] = 0.0
    ratio[rng.random(n) < 0.30, 3] = 0.0
    tput = base[:, None] * ratio
    runnable = (tput > 0) & (scale[:, None] <= cap[None, :])
    nowhere = ~runnable.any(axis=1)  # make sure every job can run somewhere (V100 always fits)
    tput[nowhere, 2] = base[nowhere]
    runnable = (tput > 0) & (scale[:, None] <= cap[None, :])

    weight = np.where(rng.random(n) < weighted_fraction, 5.0, 1.0)
    deficit = np.where(rng.random(n) < deficit_fraction, rng.uniform(0.0, 2.0, n), 0.0)

    # co-location candidates among jobs of equal scale
    k = int(np.ceil(pairs_per_job / 2))
    a_list, b_list = [], []
    for s in np.unique(scale):
        members = np.flatnonzero(scale == s)
        if len(members) < 2:
            continue
        a = np.repeat(members, k)
        b = members[rng.integers(0, len(members), size=len(a))]
        a_list.append(a)
        b_list.append(b)
    if a_list:
        a = np.concatenate(a_list)
        b = np.concatenate(b_list)
        keep = a != b
        lo, hi = np.minimum(a, b)[keep], np.maximum(a, b)[keep]
        both = runnable[lo] & runnable[hi]
        has = both.any(axis=1)
        lo, hi, both = lo[has], hi[has], both[has]
        # one random type on which both can run
        score = np.where(both, rng.random(both.shape), -1.0)
        g = score.argmax(axis=1)
        key = np.unique((lo * n + hi) * len(GPU_TYPES) + g)
        g = key % len(GPU_TYPES)
        pair = key // len(GPU_TYPES)
        lo, hi = pair // n, pair % n
        slow = rng.uniform(0.35, 1.0, size=(len(lo), 2))
        pt = np.column_stack([tput[lo, g], tput[hi, g]]) * slow
        pj = np.column_stack([lo, hi])
    else:
        pj, g, pt = np.zeros((0, 2), np.int64), np.zeros(0, np.int64), np.zeros((0, 2))
    return RoundProblem(gpu_types=GPU_TYPES, capacity=cap, job_ids=tuple(f"j{i}" for i in range(n)),
                        scale=scale, throughput=tput, weight=weight, deficit=deficit, pair_jobs=pj,
                        pair_gpu=g, pair_throughput=pt, epsilon=epsilon, fairness_weight=fairness_weight)


def fractional_round(num_jobs: int, *, seed: int = 0) -> RoundProblem:
    """:func:`random_round` in which 30 % of the one-GPU jobs ask for 0.1-0.7 of a GPU (steps of 0.05).

    A job asking for part of a GPU keeps no co-location candidate.

    Examples
    --------
    >>> p = fractional_round(64, seed=1)
    >>> bool((p.scale < 1).any()), p.num_jobs
    (True, 64)
    """
    p = random_round(num_jobs, seed=seed)
    rng = np.random.default_rng(seed + 2000)
    one = np.flatnonzero(p.scale == 1)
    part = rng.choice(one, size=int(0.3 * len(one)), replace=False)
    scale = p.scale.astype(np.float64)
    scale[part] = np.round(rng.uniform(0.1, 0.7, len(part)) / 0.05) * 0.05
    keep = ~np.isin(p.pair_jobs, part).any(axis=1)
    return p.replace(scale=scale, pair_jobs=p.pair_jobs[keep], pair_gpu=p.pair_gpu[keep],
                     pair_throughput=p.pair_throughput[keep])
