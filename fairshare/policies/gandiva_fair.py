"""``gandiva-fair``: equal GPU-time shares, fast-GPU time traded for slow-GPU time by speedup.

Source: Chaudhary et al., EuroSys'20, "Balancing Efficiency and Fairness in Heterogeneous GPU Clusters for
Deep Learning" (Gandiva_fair).

Shares
    Every job (a user of the paper; the round has no tenants) starts with its fair share of every GPU type:
    ``H[j, g] = s_j * xfair[j, g]`` GPU-seconds per second, with ``xfair`` the model's fair allocation
    (``model.fair.shares``: weighted water-filling of the cluster, spread over the types in proportion to
    capacity; spec round-problem.md section 2). This is the paper's "equal share of each GPU generation".
Trading (the paper's automated resource trading)
    Types are ordered by speed (median over jobs of ``T[j, g] / Tmax_j``, ties by type index). For every pair
    of a faster type ``F`` and a slower type ``S`` (fastest ``F`` first, and for it the slowest ``S`` first),
    each job's speedup is ``r_j = T[j, F] / T[j, S]`` (``inf`` if it can run only on ``F``, 0 if only on
    ``S``; jobs that can run on neither do not trade). Buyers are taken in decreasing speedup, sellers in
    increasing speedup (ties by job index). While the current buyer ``b`` values fast time more than the
    current seller ``k`` (``r_b > r_k``), ``b`` buys ``d`` GPU-seconds of ``F`` from ``k`` and pays ``p * d``
    GPU-seconds of ``S``, at the second-price-like rate ``p = clip(r_next, r_k, r_b)``, where ``r_next`` is
    the speedup of the next buyer in line (the best competing bid; ``r_k`` when there is none); ``p`` is also
    kept within the finite positive speedups seen on the pair, so that a job that can run on only one of the
    two types trades at a finite, positive rate. Both sides gain (weakly) in their own throughput: the buyer
    gets ``r_b d`` slow-GPU equivalents for ``p d <= r_b d``, the seller ``p d >= r_k d``. The amount ``d`` is
    the largest that the seller can deliver (``H[k, F]``), the buyer can pay for (``H[b, S] / p``) and that
    keeps both jobs within their whole gang for the whole round (``sum_g H[j, g] <= s_j``); then the exhausted
    side is replaced by the next in line. GPU-seconds are conserved, so capacity still holds. (The paper
    states the rule between two users and two GPU generations; the pairing order over several types and the
    price bounds are our choices.)
Round
    The traded shares ``h[j, g] = H[j, g] / s_j`` are time fractions per (job, type); Gavel's priority rule
    turns them into this round's placement, then a fill pass
    (:func:`fairshare.policies._timeshare.priority_round`). Gandiva_fair itself runs a stride scheduler per
    server with tickets; a priority (deficit-like) rule over whole rounds plays the same part here. No
    co-location (the paper's packing is a separate mechanism of Gandiva).
Status
    ``heuristic``: no optimisation problem is solved.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairshare.allocation import Status
from fairshare.formulation import RoundModel
from fairshare.policies._timeshare import priority_round
from fairshare.policies.base import Placed, Policy, RoundState, register

__all__ = ["GandivaFairPolicy", "TradeResult", "traded_shares", "type_speed_order"]

_EPS = 1e-12


@dataclass(frozen=True, slots=True)
class TradeResult:
    """Shares after trading.

    Attributes
    ----------
    shares : array (N, G)
        Time fractions ``h[j, g]`` of each job's gang on each type.
    initial : array (N, G)
        The fair shares before trading.
    trades : int
        Number of trades made.
    """

    shares: np.ndarray
    initial: np.ndarray
    trades: int


def type_speed_order(model: RoundModel) -> np.ndarray:
    """Type indices from fastest to slowest: by the median over runnable jobs of ``T[j, g] / Tmax_j``."""
    p = model.problem
    g = len(p.gpu_types)
    speed = np.zeros(g)
    if p.num_jobs:
        norm = np.where(p.runnable, p.throughput / model.tmax[:, None], np.nan)
        has = p.runnable.any(axis=0)
        speed[has] = np.nanmedian(norm[:, has], axis=0)
    return np.lexsort((np.arange(g), -speed))


def _trade_pair(hf: list[float], hs: list[float], total: list[float], cap: list[float], r: np.ndarray) -> int:
    """Trade fast-type time ``hf`` for slow-type time ``hs`` in place (module doc); return the trade count."""
    jobs = np.flatnonzero(~np.isnan(r))
    if len(jobs) < 2:
        return 0
    rj = r[jobs]
    buyers = jobs[np.lexsort((jobs, -rj))].tolist()
    sellers = jobs[np.lexsort((jobs, rj))].tolist()
    finite = rj[np.isfinite(rj) & (rj > 0)]
    lo, hi = (float(finite.min()), float(finite.max())) if len(finite) else (1.0, 1.0)
    rl = r.tolist()
    nb = len(buyers)
    i = k = trades = 0
    while i < nb and k < len(sellers):
        b, s = buyers[i], sellers[k]
        if not rl[b] > rl[s] * (1.0 + 1e-9):
            break
        if hs[b] <= _EPS:
            i += 1
            continue
        if hf[s] <= _EPS:
            k += 1
            continue
        r_next = rl[buyers[i + 1]] if i + 1 < nb else rl[s]
        price = min(max(min(max(r_next, rl[s]), rl[b]), lo), hi)
        d = min(hf[s], hs[b] / price)
        if price > 1.0:
            room = (cap[s] - total[s]) / (price - 1.0)
            if room <= _EPS:
                k += 1
                continue
            d = min(d, room)
        elif price < 1.0:
            room = (cap[b] - total[b]) / (1.0 - price)
            if room <= _EPS:
                i += 1
                continue
            d = min(d, room)
        hf[b] += d
        hf[s] -= d
        hs[b] -= price * d
        hs[s] += price * d
        total[b] += d - price * d
        total[s] += price * d - d
        trades += 1
    return trades


def traded_shares(model: RoundModel) -> TradeResult:
    """Fair shares of every type, then speedup-based trades between every pair of types (module doc).

    Examples
    --------
    >>> from fairshare.problem import RoundProblem
    >>> from fairshare.formulation import build_model
    >>> p = RoundProblem.from_dict({"gpus": {"fast": 1, "slow": 1}, "jobs": [
    ...     {"id": f"j{i}", "scale": 1, "throughput": {"fast": f, "slow": 1.0}}
    ...     for i, f in enumerate([4.0, 1.5, 1.2, 1.1])]})
    >>> res = traded_shares(build_model(p))
    >>> res.shares[:, 0].round(4).tolist()  # fast-GPU time moved to the jobs with the larger speedups
    [0.4167, 0.4583, 0.125, 0.0]
    """
    p = model.problem
    scale = p.scale.astype(np.float64)
    initial = np.asarray(model.fair.shares, dtype=np.float64)
    gpu_time = initial * scale[:, None]
    total = gpu_time.sum(axis=1).tolist()
    cap = scale.tolist()
    runnable = p.runnable
    order = type_speed_order(model).tolist()
    trades = 0
    for a, fast in enumerate(order):
        for slow in reversed(order[a + 1:]):
            tf = np.where(runnable[:, fast], p.throughput[:, fast], 0.0)
            ts = np.where(runnable[:, slow], p.throughput[:, slow], 0.0)
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(ts > 0, tf / ts, np.where(tf > 0, np.inf, np.nan))
            hf, hs = gpu_time[:, fast].tolist(), gpu_time[:, slow].tolist()
            trades += _trade_pair(hf, hs, total, cap, r)
            gpu_time[:, fast], gpu_time[:, slow] = hf, hs
    shares = np.clip(gpu_time / scale[:, None], 0.0, 1.0) if p.num_jobs else gpu_time
    return TradeResult(shares, initial, trades)


@register("gandiva-fair")
@dataclass(frozen=True)
class GandivaFairPolicy(Policy):
    """Gandiva_fair: equal (weighted) GPU-time shares, fast-GPU time traded for slow-GPU time by speedup.

    Parameters
    ----------
    trading : bool
        Trade between types (``False``: every job keeps its fair share of every type).
    """

    trading: bool = True

    def place(self, state: RoundState) -> Placed:
        """Traded shares (:func:`traded_shares`) as time-share targets, rounded by Gavel's priority rule."""
        model = state.model
        c = model.columns
        if self.trading:
            res = traded_shares(model)
            shares, note = res.shares, f"{res.trades} trades"
        else:
            shares, note = np.asarray(model.fair.shares), "no trading"
        target = np.where(c.is_pair, 0.0, shares[c.job_a, c.gpu]) if c.num else np.zeros(0)
        return Placed(priority_round(model, state, target), Status.HEURISTIC, note)
