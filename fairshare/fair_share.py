r"""Fair share: the spatial part of spatiotemporal fairness (spec section 2).

Entitlement by weighted water-filling, capped by the gang size:

.. math::

    e_j = \min(s_j, \theta w_j), \qquad \sum_j e_j = \min(C', \textstyle\sum_j s_j),

where :math:`G'` is the set of types on which at least one active job can run and
:math:`C' = \sum_{g \in G'} C_g`. The fair allocation spreads the entitlement over :math:`G'` in
proportion to capacity, as time fractions of the gang, :math:`x^{fair}_{jg} = (e_j / s_j)(C_g / C')`, and
the fair throughput is :math:`T^{fair}_j = \sum_g T_{jg} x^{fair}_{jg}` (types where ``j`` cannot run give 0).

The fair allocation is feasible for the relaxed round problem: every type receives
:math:`\sum_j s_j x^{fair}_{jg} = (C_g / C') \sum_j e_j \le C_g` and every job
:math:`\sum_g x^{fair}_{jg} = e_j / s_j \le 1`.

A job that asks for part of one GPU (``0 < s_j < 1``, spec section 8) enters with its request as given: it is
entitled to at most ``s_j`` GPUs. (The capacity row of the round counts its share class, which is larger, so
with fractional jobs the fair allocation above fits the requests but need not fit the rounded capacity; nothing
relies on that: a round's relaxation is feasible anyway, with every job unplaced.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairshare.errors import InvalidInputError
from fairshare.problem import RoundProblem

__all__ = ["FairShare", "fair_share", "fair_share_of", "next_deficit", "water_fill"]


@dataclass(frozen=True, slots=True)
class FairShare:
    """Result of :func:`fair_share`.

    Attributes
    ----------
    entitlement : array (N,)
        ``e_j`` in GPUs.
    theta : float
        Water level (``inf`` when every gang fits).
    shares : array (N, G)
        The fair allocation ``xfair[j, g]``: time fractions of the gang on type ``g``.
    fair_throughput : array (N,)
        ``Tfair_j``, the throughput each job gets from its fair shares (the unit of progress).
    usable_types : array of bool (G,)
        ``G'``: types on which at least one job can run.
    """

    entitlement: np.ndarray
    theta: float
    shares: np.ndarray
    fair_throughput: np.ndarray
    usable_types: np.ndarray


def water_fill(scale: np.ndarray, weight: np.ndarray, total: float) -> tuple[np.ndarray, float]:
    """Weighted water-filling ``e_j = min(s_j, theta * w_j)`` with ``sum_j e_j = min(total, sum_j s_j)``.

    Parameters
    ----------
    scale, weight : array (N,)
        Caps ``s_j > 0`` and weights ``w_j > 0``.
    total : float
        Amount to share.

    Returns
    -------
    entitlement : array (N,)
    theta : float
        The water level; ``inf`` when every cap is met.

    Examples
    --------
    >>> e, theta = water_fill(np.array([1, 4, 4]), np.array([1.0, 1.0, 2.0]), 6)
    >>> e.tolist(), theta
    ([1.0, 1.6666666666666667, 3.3333333333333335], 1.6666666666666667)
    """
    s = np.asarray(scale, dtype=np.float64)
    w = np.asarray(weight, dtype=np.float64)
    w = w / w.max()  # only ratios matter; this keeps sums of huge (finite) weights finite
    if s.sum() <= total:
        return s.copy(), float("inf")
    order = np.argsort(s / w, kind="stable")
    r = (s / w)[order]
    cs = np.concatenate([[0.0], np.cumsum(s[order])])      # capped sum of the first k jobs
    wt = np.concatenate([np.cumsum(w[order][::-1])[::-1], [0.0]])  # weight of jobs k.. (uncapped)
    # Level when the first k jobs are capped: theta_k = (total - cs[k]) / wt[k]; the right k is the first with
    # theta_k <= r[k] (job k is not capped).
    k_all = np.arange(len(s))
    theta_k = (total - cs[k_all]) / wt[k_all]
    k = int(np.argmax(theta_k <= r))
    theta = float(theta_k[k])
    return np.minimum(s, theta * w), theta / float(np.asarray(weight, dtype=np.float64).max())


def fair_share(problem: RoundProblem) -> FairShare:
    """Entitlements, fair allocation and fair throughputs of a round (spec section 2).

    Raises
    ------
    InvalidInputError
        If a job has ``Tfair_j = 0`` (it can run nowhere). :class:`RoundProblem` already rejects such
        jobs, so this only guards hand-made arrays.

    Examples
    --------
    >>> p = RoundProblem.from_dict({"gpus": {"A": 1, "B": 1}, "jobs": [
    ...     {"id": "x", "scale": 1, "throughput": {"A": 2.0, "B": 1.0}},
    ...     {"id": "y", "scale": 1, "throughput": {"A": 4.0}},
    ...     {"id": "z", "scale": 1, "throughput": {"A": 4.0}}]})
    >>> fs = fair_share(p)
    >>> fs.entitlement.round(4).tolist(), fs.fair_throughput.round(4).tolist()
    ([0.6667, 0.6667, 0.6667], [1.0, 1.3333, 1.3333])
    """
    fs = fair_share_of(problem.scale, problem.weight, problem.throughput, problem.capacity)
    if (fs.fair_throughput <= 0).any():
        j = int(np.argmax(fs.fair_throughput <= 0))
        raise InvalidInputError(f"jobs[{j}]", problem.job_ids[j], "fair throughput is 0: the job can run nowhere")
    return fs


def fair_share_of(scale: np.ndarray, weight: np.ndarray, throughput: np.ndarray,
                  capacity: np.ndarray) -> FairShare:
    """:func:`fair_share` of jobs given as arrays, with no validation (the arrays of a valid round).

    For callers that need the fair share of many job sets drawn from arrays already checked (the simulator
    computes it for every arrival inside a round) and would otherwise build a :class:`RoundProblem` each time.
    A job that can run nowhere gets ``Tfair_j = 0`` here instead of an error.

    Parameters
    ----------
    scale, weight : array (N,)
        ``s_j`` (GPUs, or part of one GPU) and ``w_j > 0``.
    throughput : array (N, G)
        Alone throughputs ``T[j, g] >= 0``.
    capacity : array of int (G,)
        GPUs of each type.
    """
    runnable = (throughput > 0) & (scale[:, None] <= capacity[None, :])
    usable: np.ndarray = np.asarray(runnable.any(axis=0))
    cap = capacity.astype(np.float64)
    c_prime = float(cap[usable].sum())
    if len(scale) == 0:
        z = np.zeros(0)
        return FairShare(entitlement=z, theta=float("inf"), shares=np.zeros((0, len(cap))), fair_throughput=z,
                         usable_types=usable)
    e, theta = water_fill(scale, weight, c_prime)
    frac = np.where(usable, cap / c_prime, 0.0)
    xfair = (e / scale)[:, None] * frac[None, :]
    tfair = (np.where(runnable, throughput, 0.0) * xfair).sum(axis=1)
    for a in (e, xfair, tfair):
        a.setflags(write=False)
    return FairShare(entitlement=e, theta=theta, shares=xfair, fair_throughput=tfair, usable_types=usable)


def next_deficit(deficit: np.ndarray, epsilon: float, progress: np.ndarray) -> np.ndarray:
    """The temporal half of fairness: ``D_j <- max(0, D_j + (1 - epsilon) - rho_j)`` after a round.

    Parameters
    ----------
    deficit : array (N,)
        Deficits carried into the round, ``D_j >= 0``.
    epsilon : float
        Fairness slack of the round.
    progress : array (N,)
        Progress ``rho_j = tau_j / Tfair_j`` the round delivered.

    Returns
    -------
    array (N,)
        Deficits carried into the next round (never negative).

    Examples
    --------
    >>> next_deficit(np.array([0.0, 0.5]), 0.25, np.array([1.5, 0.25])).tolist()
    [0.0, 1.0]
    """
    return np.maximum(0.0, np.asarray(deficit, np.float64) + (1.0 - epsilon) - np.asarray(progress, np.float64))
