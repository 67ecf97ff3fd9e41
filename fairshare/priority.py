"""Priority rules: what a round's spare capacity is for (the ``pi_j`` of the round problem, spec section 7).

Fairness fixes each job's floor; the efficiency term, weighted by per-job priorities ``pi_j``, decides who gets
what fairness leaves over. The round problem takes priorities as given (default 1). A *rule* computes them every
round from each job's history (:class:`JobHistory`); the :class:`~fairshare.Engine` and the ``fairshare`` policy
apply one.

Rules
-----
``none`` (:class:`NoPriority`)
    ``pi_j = 1``: the formulation as first published.
``remaining`` (:class:`Remaining`)
    Shortest remaining work first. With ``R_j`` = remaining iterations / ``Tmax_j`` (seconds of best-GPU time
    left), ``pi_j = clip((median_k R_k / R_j) ** exponent, lo, hi)``. A job whose remaining work is unknown
    (infinite or missing) gets 1.
``finish-time`` (:class:`FinishTime`)
    Protect the jobs heading for the worst finish-time fairness. Each job's projected ratio is
    ``rho_j = (age_j + remaining_j / Tfair_j) / ((done_j + remaining_j) / Tfair_j)``: the time it will have taken
    if it runs at its fair throughput from now on, over the time it would take at that throughput alone (Themis'
    finish-time fairness, projected). ``pi_j = clip((rho_j / median_k rho_k) ** exponent, lo, hi)``: jobs already
    behind their fair finish time get more of the spare capacity. Jobs with unknown work get 1.
A callable ``rule(problem, history) -> array`` is a rule of the user's own.

Examples
--------
>>> import numpy as np
>>> from fairshare import RoundProblem
>>> p = RoundProblem.from_dict({"gpus": {"A": 2}, "jobs": [
...     {"id": "short", "scale": 1, "throughput": {"A": 1.0}},
...     {"id": "long", "scale": 1, "throughput": {"A": 1.0}}]})
>>> history = JobHistory(remaining_iterations=np.array([100.0, 400.0]))
>>> Remaining().priorities(p, history).tolist()   # median 250 s: 2.5 for the short job, 0.625 for the long one
[2.5, 0.625]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from fairshare._validate import check_array, check_shape, is_real, row_max
from fairshare.errors import InvalidInputError
from fairshare.fair_share import fair_share
from fairshare.problem import RoundProblem

__all__ = ["RULES", "FinishTime", "JobHistory", "NoPriority", "PriorityRule", "Remaining", "priority_rule",
           "rule_from_options"]


@dataclass(frozen=True, slots=True)
class JobHistory:
    """What a priority or shortfall-price rule may know of each job of the round, in the round's job order.

    Attributes
    ----------
    remaining_iterations : array (N,)
        Iterations left (``inf``: unknown).
    done_iterations : array (N,), optional
        Iterations done so far (default 0).
    age : array (N,), optional
        Seconds since the job arrived (default 0).
    """

    remaining_iterations: np.ndarray
    done_iterations: np.ndarray = field(default_factory=lambda: np.zeros(0))
    age: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def checked(self, n: int) -> JobHistory:
        """The history with defaults filled in for ``n`` jobs, validated (naming the field on error)."""
        rem = np.asarray(self.remaining_iterations, dtype=np.float64)
        check_shape(rem, (n,), "remaining_iterations")
        finite_or_0 = np.where(np.isposinf(rem) | np.isnan(rem), 0.0, rem)  # inf and nan mean "unknown"
        check_array(finite_or_0, finite_or_0 >= 0, "remaining_iterations", "must be >= 0 (inf: unknown)")
        done = np.zeros(n) if len(self.done_iterations) == 0 else np.asarray(self.done_iterations, np.float64)
        age = np.zeros(n) if len(self.age) == 0 else np.asarray(self.age, np.float64)
        check_shape(done, (n,), "done_iterations")
        check_shape(age, (n,), "age")
        check_array(done, done >= 0, "done_iterations", "must be finite and >= 0")
        check_array(age, age >= 0, "age", "must be finite and >= 0")
        return JobHistory(np.where(np.isnan(rem), np.inf, rem), done, age)


@runtime_checkable
class PriorityRule(Protocol):
    """A rule: ``priorities(problem, history)`` returns ``pi`` (N,), finite and >= 0."""

    def priorities(self, problem: RoundProblem, history: JobHistory) -> np.ndarray:
        """The priorities of the round's jobs."""
        ...


def _check_clip(clip: tuple[float, float]) -> tuple[float, float]:
    lo, hi = (tuple(clip) + (None, None))[:2] if isinstance(clip, (tuple, list)) else (None, None)
    if not (is_real(lo) and is_real(hi) and 0 <= lo <= hi):  # type: ignore[operator]
        raise InvalidInputError("priority_clip", clip, "must be two numbers lo <= hi, lo >= 0")
    return float(lo), float(hi)  # type: ignore[arg-type]


def _check_exponent(p: float) -> float:
    if not (is_real(p) and 0 <= p <= 10):
        raise InvalidInputError("priority_exponent", p, "must be a number in [0, 10]")
    return float(p)


def _relative(values: np.ndarray, known: np.ndarray, exponent: float, clip: tuple[float, float],
              invert: bool) -> np.ndarray:
    """``clip((median / v) ** p)`` (``invert``) or ``clip((v / median) ** p)`` over the known values; 1 elsewhere."""
    pi = np.ones(len(values))
    ok = known & np.isfinite(values) & (values > 0)
    if ok.any():
        med = float(np.median(values[ok]))
        ratio = med / values[ok] if invert else values[ok] / med
        pi[ok] = np.clip(ratio**exponent, *clip)
    return pi


@dataclass(frozen=True, slots=True)
class NoPriority:
    """``pi_j = 1`` for every job."""

    def priorities(self, problem: RoundProblem, history: JobHistory) -> np.ndarray:
        """All ones."""
        return np.ones(problem.num_jobs)


@dataclass(frozen=True, slots=True)
class _Relative:
    """A rule ``clip(ratio ** exponent, lo, hi)`` of a per-job quantity against its median over the round."""

    exponent: float = 1.0
    clip: tuple[float, float] = (0.05, 20.0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "exponent", _check_exponent(self.exponent))
        object.__setattr__(self, "clip", _check_clip(self.clip))


@dataclass(frozen=True, slots=True)
class Remaining(_Relative):
    """Shortest remaining work first (see the module documentation)."""

    def priorities(self, problem: RoundProblem, history: JobHistory) -> np.ndarray:
        """``clip((median R / R_j) ** exponent)`` with ``R_j`` the best-GPU seconds left."""
        s = history.checked(problem.num_jobs)
        tmax = (row_max(np.where(problem.runnable, problem.throughput, 0.0)) if problem.num_jobs
                else np.zeros(0))
        with np.errstate(divide="ignore", invalid="ignore"):
            left = s.remaining_iterations / tmax
        return _relative(left, np.isfinite(s.remaining_iterations), self.exponent, self.clip, invert=True)


@dataclass(frozen=True, slots=True)
class FinishTime(_Relative):
    """Jobs heading for the worst projected finish-time fairness first (see the module documentation)."""

    def priorities(self, problem: RoundProblem, history: JobHistory) -> np.ndarray:
        """``clip((rho_j / median rho) ** exponent)`` with ``rho_j`` the projected finish-time ratio."""
        s = history.checked(problem.num_jobs)
        if problem.num_jobs == 0:
            return np.ones(0)
        tfair = fair_share(problem).fair_throughput
        total = (s.done_iterations + s.remaining_iterations) / tfair
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = (s.age + s.remaining_iterations / tfair) / total
        return _relative(rho, np.isfinite(s.remaining_iterations), self.exponent, self.clip, invert=False)


RULES: dict[str, Callable[..., PriorityRule]] = {"none": NoPriority, "remaining": Remaining,
                                                 "finish-time": FinishTime}
"""Rule names -> rule classes (constructor keywords: ``exponent``, ``clip``; ``none`` takes none)."""


@dataclass(frozen=True, slots=True)
class _Callable:
    fn: Callable[[RoundProblem, JobHistory], Any]

    def priorities(self, problem: RoundProblem, history: JobHistory) -> np.ndarray:
        pi = np.asarray(self.fn(problem, history), dtype=np.float64)
        check_shape(pi, (problem.num_jobs,), "priority")
        check_array(pi, pi >= 0, "priority", "a priority rule must return finite values >= 0")
        return pi


def priority_rule(rule: str | PriorityRule | Callable[[RoundProblem, JobHistory], Any] | None = None,
                  **params: Any) -> PriorityRule:
    """A priority rule from a name (``"none"``, ``"remaining"``, ``"finish-time"``), a rule or a callable.

    Parameters
    ----------
    rule : str, rule object or callable, optional
        ``None`` is ``"none"``. A callable ``rule(problem, history)`` returns the priorities (N,).
    **params
        Keywords of a named rule (``exponent``, ``clip``).

    Raises
    ------
    InvalidInputError
        For an unknown name, parameters the rule does not take, or parameters with a bad value.
    """
    found: PriorityRule = named_rule("priority", RULES, PriorityRule, _Callable, rule, params)
    return found


def named_rule(field: str, registry: Mapping[str, Callable[..., Any]], protocol: type, wrap: Callable[[Any], Any],
               rule: object, params: Mapping[str, Any]) -> Any:
    """A rule by name from ``registry``, a rule object following ``protocol``, or a callable wrapped by ``wrap``.

    ``None`` is ``"none"``. Errors name ``field``. Shared by the priority and the shortfall-price rules.
    """
    if rule is None:
        rule = "none"
    if isinstance(rule, str):
        if rule not in registry:
            raise InvalidInputError(field, rule, f"unknown rule (known: {', '.join(registry)})")
        try:
            return registry[rule](**params)
        except TypeError:
            raise InvalidInputError(field, rule, f"takes no options {sorted(params)}") from None
    if params:
        raise InvalidInputError(field, type(rule).__name__, "options apply to named rules only")
    if isinstance(rule, protocol):
        return rule
    if callable(rule):
        return wrap(rule)
    raise InvalidInputError(field, rule, "must be a rule name, a rule object or a callable")


def rule_from_options(options: Mapping[str, Any]) -> PriorityRule:
    """The rule given by ``priority``, ``priority_exponent`` and ``priority_clip`` entries of ``options``."""
    params: dict[str, Any] = {}
    if options.get("priority_exponent") is not None:
        params["exponent"] = options["priority_exponent"]
    if options.get("priority_clip") is not None:
        params["clip"] = tuple(options["priority_clip"])
    return priority_rule(options.get("priority"), **params)
