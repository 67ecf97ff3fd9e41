"""The policy interface: a round state in, an :class:`~fairshare.allocation.Allocation` out.

Every policy — fairshare itself and the peers it is compared with — is a subclass of :class:`Policy`
registered under its name with :func:`register`, and implements one method, :meth:`Policy.place`: from a
:class:`RoundState` to a :class:`Placed`, the 0/1 values of the round's placement columns (each job alone,
co-located with one partner, or not placed) with a status and a message. :meth:`Policy.allocate` is the
template around it, the same for every policy (as networkx's flow front end builds every algorithm's result
in one place): it times ``place``, checks the placement and assembles the allocation with
:meth:`Allocation.from_columns <fairshare.allocation.Allocation.from_columns>`, so that every policy reports
E, E/C, shortfall and progress in the same units, with ``mode=None`` and ``policy=name``. An infeasible
placement is a bug of the policy, not bad input: it raises :class:`~fairshare.errors.PolicyError`.

Variants are constructor flags (``GavelPolicy(space_sharing=True)``), never new if/elif branches;
:func:`policy_options` lists a registered policy's flags with their defaults. The simulator calls
``allocate`` once per round; policies may keep state between rounds only through what :class:`RoundState`
carries, so runs are deterministic and a policy object can be reused across runs.

The peers that solve a time-share program (``gavel``, ``gavel-ss``, ``ftf``, ``max-throughput``, ``las``)
also expose ``plan(state) -> TimeSharePlan``: the fractional optimum of their program, before ``place`` turns
it into the round's integer placement, so that anyone can check it (``tests/policies/test_gavel_reference.py`` checks
it against the optima of Gavel's own code).

Examples
--------
A policy that places nothing, run through the template:

>>> from dataclasses import dataclass
>>> from fairshare.allocation import Status
>>> from fairshare.formulation import build_model
>>> from fairshare.problem import RoundProblem
>>> @dataclass(frozen=True)
... class Idle(Policy):
...     name = "idle"
...     def place(self, state: RoundState) -> Placed:
...         return Placed(np.zeros(state.model.columns.num), Status.HEURISTIC, "nothing placed")
>>> p = RoundProblem.from_dict({"gpus": {"A": 1}, "jobs": [{"id": "a", "scale": 1, "throughput": {"A": 2.0}}]})
>>> alloc = Idle().allocate(RoundState.first_round(build_model(p)))
>>> alloc.report.policy, alloc.report.mode, alloc.placements, alloc.report.message
('idle', None, (), 'nothing placed')
"""

from __future__ import annotations

import dataclasses
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

import numpy as np

from fairshare._validate import readonly
from fairshare.allocation import Allocation, Status
from fairshare.errors import InvalidInputError, PolicyError
from fairshare.formulation import RoundModel
from fairshare.problem import RoundProblem
from fairshare.validators import placement_violations

__all__ = ["Placed", "Policy", "RoundState", "SupportsAllocate", "TimeSharePlan", "get_policy", "policy_names",
           "policy_options", "policy_summary", "register"]


@dataclass(frozen=True, slots=True)
class RoundState:
    """What a policy may look at when it plans a round.

    Attributes
    ----------
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

    model: RoundModel
    time: float
    round_length: float
    arrival: np.ndarray
    attained_service: np.ndarray
    received: np.ndarray
    done_iterations: np.ndarray
    remaining_iterations: np.ndarray

    @property
    def problem(self) -> RoundProblem:
        """The round (``model.problem``): throughputs, co-location candidates, weights, deficits, epsilon."""
        return self.model.problem

    @classmethod
    def first_round(cls, model: RoundModel, *, round_length: float = 360.0, time: float = 0.0) -> RoundState:
        """A state with no history (every job just arrived): for tests and one-off rounds."""
        n, g = model.problem.num_jobs, len(model.problem.gpu_types)
        z = np.zeros(n)
        return cls(model, time, round_length, np.full(n, time), z, np.zeros((n, g)), z,
                   np.full(n, np.inf))


@dataclass(frozen=True, slots=True)
class Placed:
    """What :meth:`Policy.place` returns: an integer placement of the round's columns.

    Attributes
    ----------
    x : array (M,)
        0/1 value of each placement column of ``state.model`` (read-only float64).
    status : Status
        ``OPTIMAL`` only when a solver proved the policy's own problem optimal and ``x`` is that very optimum;
        otherwise ``HEURISTIC``.
    message : str
        What the policy wants reported (solver status text, counts, ...).
    """

    x: np.ndarray
    status: Status
    message: str = ""

    def __post_init__(self) -> None:
        """Store ``x`` as a read-only float64 array."""
        object.__setattr__(self, "x", readonly(np.asarray(self.x, dtype=np.float64)))


@dataclass(frozen=True, slots=True)
class TimeSharePlan:
    """A time-share plan of a round: the fraction of the round's time each placement column runs.

    What the ``plan`` method of the LP-based peers (``gavel``, ``gavel-ss``, ``ftf``, ``max-throughput``,
    ``las``) returns: the fractional optimum of the policy's program, before it is turned into the round's
    integer placement. It satisfies Gavel's constraints (docs/policies.md): ``x >= 0``, every job's time
    (over all columns that contain it) ``<= 1``, every type's GPUs ``sum_c size_c x_c <= C_g``, and no pair
    column unless the policy space-shares.

    Attributes
    ----------
    x : array (M,)
        Time fraction of each column of ``state.model.columns`` (0 on columns the policy does not use);
        read-only float64.
    job_values : array (N,)
        The per-job terms of the objective at ``x``: the normalised level of each job for a max-min policy,
        ``rho_j`` for FTF, the job's throughput ``tau_j`` for max-throughput.
    objective : float
        The policy's objective at ``x`` (the min, max or sum of ``job_values``; with the default options it is
        Gavel's objective value, in Gavel's units).
    bound : float
        The optimum as proven by the solver: the LP optimum, or for FTF the best lower bound on the smallest
        ``max_j rho_j``. ``objective`` is within the solver's tolerance of it (within 1e-7 relative for the
        max-min policies, whose refinement keeps every level at ``(1 - 1e-7)`` of the optimum; within the
        policy's ``tol`` for FTF).
    optimal : bool
        Every program behind ``x`` was proven optimal (or the plan is optimal by construction).
    solves : int
        Number of LPs solved.
    message : str
        Solver status text (or how the plan was made).
    """

    x: np.ndarray
    job_values: np.ndarray
    objective: float
    bound: float
    optimal: bool
    solves: int
    message: str = ""

    def __post_init__(self) -> None:
        """Store the arrays read-only, as float64."""
        object.__setattr__(self, "x", readonly(np.asarray(self.x, dtype=np.float64)))
        object.__setattr__(self, "job_values", readonly(np.asarray(self.job_values, dtype=np.float64)))


@runtime_checkable
class SupportsAllocate(Protocol):
    """Anything the simulator can run as a policy: an object with ``allocate(state) -> Allocation``.

    Every :class:`Policy` is one; so is a duck-typed object of any class with such a method. Optional class
    attributes read with a default: ``name`` (the policy's name in results), ``replans_on_events`` and
    ``sees_running_jobs`` (both ``False``; see :class:`Policy`).
    """

    def allocate(self, state: RoundState) -> Allocation:
        """The round's allocation."""
        ...


class Policy(ABC):
    """A scheduling policy: implement :meth:`place`; :meth:`allocate` is the same for every policy.

    ``name`` is the registry name, set by :func:`register` (a policy used without registering sets it as a
    class attribute). Subclasses are frozen dataclasses whose fields are the policy's flags.

    ``Policy`` is nominal: a class is one by subclassing it. Where any object with an ``allocate(state)``
    method will do (the simulator), the check is :class:`SupportsAllocate`.

    ``replans_on_events`` says whether the scheduler the policy reproduces plans again when a job arrives or
    finishes (the simulator's ``starts="events"``); the peers' published schedulers plan at round boundaries.
    ``sees_running_jobs`` says whether it plans with the running jobs' placements and restart costs (the round
    problem's ``running``); the peers' published policies do not, and the simulator leaves it out of their rounds.
    """

    name: ClassVar[str]
    replans_on_events: ClassVar[bool] = False
    sees_running_jobs: ClassVar[bool] = False

    @abstractmethod
    def place(self, state: RoundState) -> Placed:
        """Plan the round: 0/1 values of the columns of ``state.model``, a status and a message."""

    def allocate(self, state: RoundState) -> Allocation:
        """Plan one round: the template around :meth:`place`. Do not override it; implement :meth:`place`.

        Times :meth:`place` (``time.perf_counter``; reported as ``solve_seconds``), checks its placement with
        :func:`~fairshare.validators.placement_violations` and builds the allocation with ``mode=None`` and
        ``policy=self.name``. (Only :class:`~fairshare.policies.fairshare.FairsharePolicy` overrides it,
        because its result is a solve mode's own allocation; its docstring says why.)

        Raises
        ------
        PolicyError
            If the placement is infeasible (over capacity, a job placed twice, values not 0/1): a bug of the
            policy.
        """
        t0 = time.perf_counter()
        placed = self.place(state)
        seconds = time.perf_counter() - t0
        _check_placement(self.name, state.model, placed.x)
        return Allocation.from_columns(state.model, placed.x, status=placed.status, mode=None, policy=self.name,
                                       solve_seconds=seconds, message=placed.message)


def _check_placement(policy: str, model: RoundModel, x: np.ndarray) -> None:
    """Raise :class:`~fairshare.errors.PolicyError` naming ``policy`` and the first violation of ``x``."""
    bad = placement_violations(model, x)
    if bad:
        raise PolicyError(f"policy {policy!r} returned an infeasible placement: {bad[0]}")


_P = TypeVar("_P", bound=Policy)
_REGISTRY: dict[str, type[Policy]] = {}


def register(name: str) -> Callable[[type[_P]], type[_P]]:
    """Class decorator: set the policy's ``name`` and make it constructible by name through :func:`get_policy`.

    A new policy is one class: ``@register("mine") @dataclass(frozen=True) class Mine(Policy): ...`` with a
    ``place`` method. Registering a name again replaces the earlier class.
    """

    def deco(cls: type[_P]) -> type[_P]:
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return deco


def policy_names() -> tuple[str, ...]:
    """Registered policy names."""
    _load_builtin()
    return tuple(sorted(_REGISTRY))


def policy_options(name: str) -> dict[str, object]:
    """The options (flags) of the policy registered as ``name``, with their defaults, in declaration order.

    These are the keyword arguments :func:`get_policy` accepts for ``name`` (the fields of its dataclass).

    Raises
    ------
    InvalidInputError
        For an unknown name.

    Examples
    --------
    >>> policy_options("gavel")
    {'space_sharing': False, 'normalization': 'proportional', 'refine': True}
    """
    cls = _registered(name)
    if not dataclasses.is_dataclass(cls):
        return {}
    out: dict[str, object] = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def policy_summary(name: str) -> str:
    """One line about the policy registered as ``name``: the first line of its class docstring.

    Raises
    ------
    InvalidInputError
        For an unknown name.

    Examples
    --------
    >>> policy_summary("gavel-ss")
    "Gavel's max-min fairness with space sharing: ``gavel`` with ``space_sharing=True``."
    """
    doc = _registered(name).__doc__ or ""
    lines = [ln.strip() for ln in doc.strip().splitlines()]
    return lines[0] if lines else ""


def _registered(name: str) -> type[Policy]:
    """The class registered as ``name``."""
    _load_builtin()
    if name not in _REGISTRY:
        raise InvalidInputError("policy", name, f"unknown policy (known: {', '.join(sorted(_REGISTRY))})")
    return _REGISTRY[name]


def get_policy(name: str, **options: Any) -> Policy:
    """Construct the policy registered as ``name`` with keyword options (its flags).

    Raises
    ------
    InvalidInputError
        For an unknown name.
    """
    return _registered(name)(**options)


def _load_builtin() -> None:
    import fairshare.policies  # noqa: F401  (registers the built-in policies)
