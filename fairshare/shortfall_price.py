"""Shortfall-price rules: what one round of a job's shortfall costs (the ``f_j`` of spec section 10).

The round problem prices a job's shortfall at ``lambda * w_j * f_j`` per unit of one round's fair progress and
takes ``f_j`` as given (default 1). A round of delay costs a short job a large part of its fair finish time
and a long job a small part, and finish-time fairness (``rho_j = JCT_j / ideal_j``) weighs a delay by
``1 / ideal_j``. A *rule* computes the prices every round from the jobs' history; the :class:`~fairshare.Engine`
and the ``fairshare`` policy apply one.

Rules
-----
``none`` (:class:`NoPrice`)
    ``f_j = 1``: the formulation of sections 3-4.
``finish-time`` (:class:`FinishTimePrice`)
    ``f_j = clip((ideal_gm / ideal_j) ** exponent, lo, hi)``, with ``ideal_j = work_j / Tfair_j`` the job's fair
    completion time (``work_j``: its total iterations, done plus remaining, or with ``basis="remaining"`` the
    remaining ones) and ``ideal_gm`` the geometric mean of ``ideal`` over the round's jobs whose work is known
    (jobs of unknown work get 1). Normalising by the geometric mean keeps the prices' scale against
    ``lambda`` and the efficiency term whatever the round length and the jobs' sizes.
A callable ``rule(problem, history, fair_throughput) -> array`` is a rule of the user's own.

Examples
--------
>>> import numpy as np
>>> from fairshare import RoundProblem
>>> from fairshare.priority import JobHistory, named_rule
>>> p = RoundProblem.from_dict({"gpus": {"A": 2}, "jobs": [
...     {"id": "short", "scale": 1, "throughput": {"A": 1.0}},
...     {"id": "long", "scale": 1, "throughput": {"A": 1.0}}]})
>>> history = JobHistory(remaining_iterations=np.array([100.0, 400.0]))
>>> FinishTimePrice().prices(p, history, np.ones(2)).round(6).tolist()   # ideal 100 s and 400 s: mean 200 s
[2.0, 0.5]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from fairshare._validate import check_array, check_shape, is_real
from fairshare.errors import InvalidInputError
from fairshare.priority import JobHistory, named_rule
from fairshare.problem import MAX_VALUE, RoundProblem

__all__ = ["PRICE_RULES", "FinishTimePrice", "NoPrice", "ShortfallPriceRule", "price_rule",
           "price_rule_from_options"]


@runtime_checkable
class ShortfallPriceRule(Protocol):
    """A rule: ``prices(problem, history, fair_throughput)`` returns ``f`` (N,), finite and > 0."""

    def prices(self, problem: RoundProblem, history: JobHistory, fair_throughput: np.ndarray) -> np.ndarray:
        """The shortfall prices of the round's jobs (``fair_throughput``: ``Tfair_j``, spec section 2)."""
        ...


@dataclass(frozen=True, slots=True)
class NoPrice:
    """``f_j = 1`` for every job."""

    def prices(self, problem: RoundProblem, history: JobHistory, fair_throughput: np.ndarray) -> np.ndarray:
        """All ones."""
        return np.ones(problem.num_jobs)


@dataclass(frozen=True, slots=True)
class FinishTimePrice:
    """Shortfall priced in finish-time units (see the module documentation).

    Parameters
    ----------
    exponent : float
        In [0, 10]; 0 gives every job 1.
    clip : (float, float)
        ``0 < lo <= hi``: the range of the prices.
    basis : {"total", "remaining"}
        The work whose fair completion time sets the price.
    """

    exponent: float = 1.0
    clip: tuple[float, float] = (0.05, 20.0)
    basis: str = "total"

    def __post_init__(self) -> None:
        if not (is_real(self.exponent) and 0 <= self.exponent <= 10):
            raise InvalidInputError("shortfall_price_exponent", self.exponent, "must be a number in [0, 10]")
        clip = self.clip
        lo, hi = (tuple(clip) + (None, None))[:2] if isinstance(clip, (tuple, list)) else (None, None)
        if not (is_real(lo) and is_real(hi) and 0 < lo <= hi <= MAX_VALUE):  # type: ignore[operator]
            raise InvalidInputError("shortfall_price_clip", clip, "must be two numbers 0 < lo <= hi")
        if self.basis not in ("total", "remaining"):
            raise InvalidInputError("shortfall_price_basis", self.basis, "must be 'total' or 'remaining'")
        object.__setattr__(self, "exponent", float(self.exponent))
        object.__setattr__(self, "clip", (float(lo), float(hi)))  # type: ignore[arg-type]

    def prices(self, problem: RoundProblem, history: JobHistory, fair_throughput: np.ndarray) -> np.ndarray:
        """``clip((ideal_gm / ideal_j) ** exponent)`` over the jobs whose work is known; 1 elsewhere."""
        n = problem.num_jobs
        s = history.checked(n)
        tfair = np.asarray(fair_throughput, dtype=np.float64)
        check_shape(tfair, (n,), "fair_throughput")
        work = s.remaining_iterations if self.basis == "remaining" else s.done_iterations + s.remaining_iterations
        f = np.ones(n)
        with np.errstate(divide="ignore", invalid="ignore"):
            ideal = work / tfair
        ok = np.isfinite(ideal) & (ideal > 0)
        if ok.any():
            log = np.log(ideal[ok])
            f[ok] = np.clip(np.exp((float(log.mean()) - log) * self.exponent), *self.clip)
        return f


PRICE_RULES: dict[str, Callable[..., ShortfallPriceRule]] = {"none": NoPrice, "finish-time": FinishTimePrice}
"""Rule names -> rule classes (constructor keywords: ``exponent``, ``clip``, ``basis``; ``none`` takes none)."""


@dataclass(frozen=True, slots=True)
class _Callable:
    fn: Callable[[RoundProblem, JobHistory, np.ndarray], Any]

    def prices(self, problem: RoundProblem, history: JobHistory, fair_throughput: np.ndarray) -> np.ndarray:
        f = np.asarray(self.fn(problem, history, fair_throughput), dtype=np.float64)
        check_shape(f, (problem.num_jobs,), "shortfall_price")
        check_array(f, f > 0, "shortfall_price", "a shortfall-price rule must return finite values > 0")
        return f


def price_rule(rule: str | ShortfallPriceRule | Callable[..., Any] | None = None,
               **params: Any) -> ShortfallPriceRule:
    """A shortfall-price rule from a name (``"none"``, ``"finish-time"``), a rule object or a callable.

    Parameters
    ----------
    rule : str, rule object or callable, optional
        ``None`` is ``"none"``. A callable ``rule(problem, history, fair_throughput)`` returns the prices (N,).
    **params
        Keywords of a named rule (``exponent``, ``clip``, ``basis``).

    Raises
    ------
    InvalidInputError
        For an unknown name, parameters the rule does not take, or parameters with a bad value.
    """
    found: ShortfallPriceRule = named_rule("shortfall_price", PRICE_RULES, ShortfallPriceRule, _Callable, rule,
                                           params)
    return found


def price_rule_from_options(options: Mapping[str, Any]) -> ShortfallPriceRule:
    """The rule given by the ``shortfall_price``, ``..._exponent``, ``..._clip`` and ``..._basis`` entries."""
    params: dict[str, Any] = {}
    for key in ("exponent", "clip", "basis"):
        value = options.get(f"shortfall_price_{key}")
        if value is not None:
            params[key] = tuple(value) if key == "clip" else value
    return price_rule(options.get("shortfall_price"), **params)
