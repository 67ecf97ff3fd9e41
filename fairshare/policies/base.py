"""The policy interface: round state in, placement (an :class:`~fairshare.allocation.Allocation`) out.

Every policy — fairshare itself and the peers it is compared with — is a class with a ``name`` and an
``allocate(state)`` method, registered under that name with :func:`register`. Variants are constructor
flags (``GavelPolicy(space_sharing=True)``), never new if/elif branches. The simulator calls ``allocate`` once
per round with a :class:`RoundState`; policies may keep state between rounds only through what
:class:`RoundState` carries (so runs are deterministic and policies can be reused across runs).

A policy returns an integer placement (each job alone, co-located with one partner, or not placed) as an
:class:`~fairshare.allocation.Allocation`; :func:`allocation_from_columns` builds one from 0/1 column values
of :class:`~fairshare.formulation.RoundModel` so that every policy reports E, E/C, shortfall and progress
in the same units.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from fairshare.allocation import Allocation, Status
from fairshare.errors import InvalidInputError
from fairshare.formulation import RoundModel

__all__ = ["Policy", "RoundState", "allocation_from_columns", "get_policy", "policy_names", "register"]


@dataclass(frozen=True, slots=True)
class RoundState:
    """What a policy may look at when it plans a round.

    Attributes
    ----------
    problem : RoundProblem
        The round (throughputs, co-location candidates, weights, carried deficits, epsilon, lambda).
    model : RoundModel
        Fair shares, placement columns and their coefficients, computed once per round.
    time : float
        Simulated time at the start of the round, s.
    round_length : float
        Length of the round, s.
    arrival : array (N,)
        Arrival time of each job, s.
    attained_service : array (N,)
        GPU-seconds each job has received so far (``scale x seconds run``, any type; LAS uses it).
    received : array (N, G)
        Seconds each job has run on each GPU type so far (alone or co-located).
    done_iterations, remaining_iterations : arrays (N,)
        Work done and left.
    """

    problem: Any
    model: RoundModel
    time: float
    round_length: float
    arrival: np.ndarray
    attained_service: np.ndarray
    received: np.ndarray
    done_iterations: np.ndarray
    remaining_iterations: np.ndarray

    @classmethod
    def first_round(cls, model: RoundModel, *, round_length: float = 360.0, time: float = 0.0) -> RoundState:
        """A state with no history (every job just arrived): for tests and one-off rounds."""
        n, g = model.problem.num_jobs, len(model.problem.gpu_types)
        z = np.zeros(n)
        return cls(model.problem, model, time, round_length, np.full(n, time), z, np.zeros((n, g)), z,
                   np.full(n, np.inf))


@runtime_checkable
class Policy(Protocol):
    """A scheduling policy. ``name`` is its registry name; ``allocate`` plans one round."""

    name: str

    def allocate(self, state: RoundState) -> Allocation: ...


_REGISTRY: dict[str, Callable[..., Policy]] = {}


def register(name: str) -> Callable[[Callable[..., Policy]], Callable[..., Policy]]:
    """Class decorator: make a policy constructible by name through :func:`get_policy`."""

    def deco(factory: Callable[..., Policy]) -> Callable[..., Policy]:
        _REGISTRY[name] = factory
        return factory

    return deco


def policy_names() -> tuple[str, ...]:
    """Registered policy names."""
    _load_builtin()
    return tuple(sorted(_REGISTRY))


def get_policy(name: str, **options: Any) -> Policy:
    """Construct the policy registered as ``name`` with keyword options.

    Raises
    ------
    InvalidInputError
        For an unknown name.
    """
    _load_builtin()
    if name not in _REGISTRY:
        raise InvalidInputError("policy", name, f"unknown policy (known: {', '.join(sorted(_REGISTRY))})")
    return _REGISTRY[name](**options)


def _load_builtin() -> None:
    import fairshare.policies  # noqa: F401  (registers the built-in policies)


def allocation_from_columns(model: RoundModel, x: np.ndarray, *, mode: str, seconds: float,
                            status: Status = Status.HEURISTIC, message: str = "",
                            build_seconds: float = 0.0) -> Allocation:
    """An integer :class:`Allocation` from 0/1 column values ``x`` of ``model``.

    Raises
    ------
    InvalidInputError
        If ``x`` is not a feasible integer placement (a policy bug must not pass silently).
    """
    from fairshare.validators import placement_violations

    x = np.asarray(x, dtype=np.float64)
    bad = placement_violations(model, x)
    if bad:
        raise InvalidInputError("placement", bad[0], f"policy {mode!r} returned an infeasible placement")
    return Allocation.from_columns(model, x, status=status, mode=None, policy=mode, build_seconds=build_seconds,
                                   solve_seconds=seconds, message=message)


def timed(fn: Callable[[], np.ndarray]) -> tuple[np.ndarray, float]:
    """Run ``fn`` and return its result and wall time (``time.perf_counter``)."""
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t
