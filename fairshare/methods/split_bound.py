"""The certified bound of a split round (:mod:`fairshare.methods.partition`).

For any ``u >= 0`` (one per job) and ``y >= 0`` (one per GPU type), the Lagrangian bound
``sum_j u_j + sum_g C_g y_g + sum_c max(0, v_c - u_a(c) - u_b(c) - size_c y_g(c))`` bounds every placement of
the whole round (:func:`dual_bound`). At the parts' LP duals it charges in full every candidate split between
parts, and each part's prices hold for its own GPUs only; :func:`tighten_bound` lowers it by descent on ``u``
at fixed prices ``y``. Whatever the multipliers, the value returned is the bound evaluated exactly at them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fairshare.formulation import RoundModel
from fairshare.methods.lp import lagrangian_bound

__all__ = ["BOUND_ITERATIONS", "BOUND_SMOOTHING", "dual_bound", "tighten_bound"]

BOUND_ITERATIONS = 30
"""Steps of the descent of :func:`tighten_bound` after a split round is merged."""

BOUND_SMOOTHING = 0.01
"""Smoothing of :func:`tighten_bound`'s descent, relative to the mean value of the columns it looks at."""

def dual_bound(model: RoundModel, job_dual: np.ndarray, cap_dual: np.ndarray) -> float:
    """The Lagrangian bound of the module documentation at ``u = job_dual``, ``y = cap_dual`` (clipped at 0).

    Valid for every placement of ``model``, whatever the multipliers; equal to the LP optimum at the LP's
    own duals (:func:`fairshare.methods.lp.lagrangian_bound`).

    Examples
    --------
    >>> from fairshare.formulation import build_model
    >>> from fairshare.problem import RoundProblem
    >>> m = build_model(RoundProblem(["V100"], [1], ["a", "b"], [1, 1], [[2.0], [1.0]]))
    >>> dual_bound(m, np.zeros(2), np.zeros(1)) == float(m.value.sum())
    True
    """
    return lagrangian_bound(model, job_dual, cap_dual)


def tighten_bound(model: RoundModel, job_dual: np.ndarray, cap_dual: np.ndarray, *,
                  iterations: int = BOUND_ITERATIONS) -> float:
    """:func:`dual_bound` lowered from ``u = job_dual``, ``y = cap_dual`` by descent on ``u`` (``y`` fixed).

    At ``y`` fixed, the bound is a convex function of ``u`` alone, ``sum_j u_j + sum_c max(0, r_c)`` with
    ``r_c = v_c - size_c y_g(c) - u_a(c) - u_b(c)`` (plus ``C @ y``). Its kinks stall coordinate descent, so it
    is smoothed: each ``max(0, r)`` becomes ``tau log(1 + exp(r / tau))`` with ``tau`` :data:`BOUND_SMOOTHING`
    times the mean value of the columns worth more than their GPUs at ``y``, and ``iterations`` steps of
    projected L-BFGS (``u >= 0``) descend on it. The bound returned is the exact :func:`dual_bound` at the
    point reached (or at the start, when that is lower): a valid bound whatever the descent did, since the
    bound holds at every ``u, y >= 0``. Then each ``y_g`` is set, once, to the price at which the columns of
    type ``g`` still worth more fill its GPUs, kept only if it lowers the bound.
    """
    u = np.maximum(job_dual, 0.0)
    y = np.maximum(cap_dual, 0.0)
    best = dual_bound(model, u, y)
    live = _Live(model, y)
    if len(live.w) == 0 or iterations <= 0:
        return best
    tau = BOUND_SMOOTHING * float(live.w.mean())
    u = _projected_lbfgs(lambda v: live.smoothed(v, tau), u, iterations)
    best = min(best, dual_bound(model, u, y))
    return min(best, dual_bound(model, u, _capacity_step(model, u)))


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    # not ``a @ b``: a multi-threaded BLAS dot product on a loaded machine costs a thousand times more
    return float(np.add.reduce(a * b))


def _projected_lbfgs(fg: Callable[[np.ndarray], tuple[float, np.ndarray]], x: np.ndarray, iterations: int,
                     memory: int = 7) -> np.ndarray:
    """The point reached from ``x`` by ``iterations`` steps of L-BFGS projected on ``x >= 0``, minimising ``fg``.

    ``fg(x)`` returns the function and its gradient. Each step takes the L-BFGS direction on the free
    variables (those above 0 or whose gradient points up), projects the step on ``x >= 0`` and halves it
    until the function falls enough (Armijo); it stops early when no step lowers the function.
    """
    f, g = fg(x)
    steps: list[tuple[np.ndarray, np.ndarray]] = []
    for _ in range(iterations):
        free = (x > 0) | (g < 0)
        q = np.where(free, g, 0.0)
        alphas = []
        for s, dg in reversed(steps):
            rho = 1.0 / _dot(dg, s)
            alpha = rho * _dot(s, q)
            q -= alpha * dg
            alphas.append((rho, alpha))
        if steps:
            s, dg = steps[-1]
            q *= _dot(s, dg) / _dot(dg, dg)
        else:
            q /= max(float(np.abs(q).max()), 1e-12)
        for (s, dg), (rho, alpha) in zip(steps, reversed(alphas)):
            q += (alpha - rho * _dot(dg, q)) * s
        d = -np.where(free, q, 0.0)
        if _dot(g, d) >= 0:  # not a descent direction: start again from the gradient
            d = -np.where(free, g, 0.0)
            steps = []
        t = 1.0
        for _ in range(30):
            x_new = np.maximum(x + t * d, 0.0)
            f_new, g_new = fg(x_new)
            if f_new <= f + 1e-4 * _dot(g, x_new - x):
                break
            t *= 0.5
        else:
            return x
        s, dg = x_new - x, g_new - g
        if _dot(s, dg) > 1e-12:
            steps = (steps + [(s, dg)])[-memory:]
        x, f, g = x_new, f_new, g_new
    return x


class _Live:
    """The columns of ``model`` worth more than their GPUs at price ``y`` (the others add nothing to the bound).

    For ``u >= 0`` a column with ``v_c - size_c y_g(c) <= 0`` has no positive reduced value, so the bound at
    ``y`` needs these columns only.
    """

    def __init__(self, model: RoundModel, y: np.ndarray) -> None:
        c = model.columns
        w = model.value - c.size * y[c.gpu]
        on = np.flatnonzero(w > 0)
        self.n = model.problem.num_jobs
        self.w = w[on]
        self.a = c.job_a[on]
        self.pair_at = np.flatnonzero(c.is_pair[on])
        self.b = c.job_b[on][self.pair_at]

    def smoothed(self, u: np.ndarray, tau: float) -> tuple[float, np.ndarray]:
        """``sum u + sum tau log(1 + exp(r / tau))`` over the live columns, and its gradient in ``u``."""
        r = self.w - u[self.a]
        r[self.pair_at] -= u[self.b]
        t = r / tau
        e = np.exp(-np.abs(t))
        value = float(u.sum() + tau * (np.maximum(t, 0.0) + np.log1p(e)).sum())
        share = np.where(t >= 0, 1.0 / (1.0 + e), e / (1.0 + e))  # d/dr of the smoothed max(0, r)
        grad = 1.0 - np.bincount(self.a, weights=share, minlength=self.n)
        grad -= np.bincount(self.b, weights=share[self.pair_at], minlength=self.n)
        return value, grad


def _capacity_step(model: RoundModel, u: np.ndarray) -> np.ndarray:
    """Per type, the price minimising the bound with ``u`` fixed: where the columns worth more fill the GPUs."""
    c, p = model.columns, model.problem
    reduced = model.value - u[c.job_a] - np.where(c.is_pair, u[np.maximum(c.job_b, 0)], 0.0)
    y = np.zeros(len(p.capacity))
    for g in range(len(p.capacity)):
        on = np.flatnonzero((c.gpu == g) & (reduced > 0))
        ratio = reduced[on] / c.size[on]
        order = np.argsort(-ratio, kind="stable")
        filled = np.cumsum(c.size[on][order])
        k = int(np.searchsorted(filled, p.capacity[g], side="right"))
        y[g] = ratio[order][k] if k < len(on) else 0.0
    return y
