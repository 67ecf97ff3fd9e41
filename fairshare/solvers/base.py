"""The solver contract: what a backend reports and what it can do.

A backend returns a :class:`SolverOutcome` whose :class:`Termination` says why it stopped; what it can do is a
:class:`Backend` with a set of :class:`Feature` values, data that the solve methods consult instead of naming a
backend.

Backends import these types from here; :mod:`fairshare.solvers` re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairshare._compat import StrEnum

__all__ = ["BASIS_BASIC", "BASIS_LOWER", "BASIS_UPPER", "Backend", "Feature", "SolverOutcome", "Termination"]

BASIS_LOWER, BASIS_BASIC, BASIS_UPPER = 0, 1, 2
"""A basis in backend-neutral codes: a column or row at its lower bound, basic, or at its upper bound."""


class Termination(StrEnum):
    """Why a backend stopped, in the backend-neutral words of fairshare.

    ``OPTIMAL``: proven optimal (a MILP within its relative gap). ``TIME_LIMIT``: the time limit was hit (a
    point may or may not be available). ``LIMIT``: another work limit (nodes, iterations, solutions).
    ``INFEASIBLE``, ``UNBOUNDED``: as proven by the solver. ``INTERRUPTED``: stopped from outside.
    ``ERROR``: the solver failed; ``message`` says how.
    """

    OPTIMAL = "optimal"
    TIME_LIMIT = "time_limit"
    LIMIT = "limit"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    INTERRUPTED = "interrupted"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class SolverOutcome:
    """What one solver run returned.

    Attributes
    ----------
    x : array or None
        Column values; ``None`` when the solver has no primal feasible point.
    objective : float
        Objective of ``x`` (nan without a point).
    bound : float
        Proven upper bound of the maximisation (the optimum of an LP solved to optimality; the dual bound of
        a MILP; nan or inf when none is known).
    termination : Termination
    message : str
        The backend's own status text.
    seconds : float
        Wall time of the solve call.
    mip_gap : float
        The backend's relative MIP gap (0 for an LP solved to optimality; inf without a point).
    col_dual, row_dual : array or None
        Reduced costs and row duals (LPs only).
    """

    x: np.ndarray | None
    objective: float
    bound: float
    termination: Termination
    message: str
    seconds: float
    mip_gap: float = float("inf")
    col_dual: np.ndarray | None = None
    row_dual: np.ndarray | None = None

    @property
    def optimal(self) -> bool:
        """The solver proved optimality."""
        return self.termination is Termination.OPTIMAL

    @property
    def has_solution(self) -> bool:
        """A primal feasible point is available in ``x``."""
        return self.x is not None


class Feature(StrEnum):
    """One thing a backend can do.

    ``INTEGER``: solves MILPs (binary columns). ``ARRAY_MODEL``: takes a
    :class:`~fairshare.formulation.LinearProgram` built from arrays (the tightened column formulation);
    a backend without it solves only the reference model of section 3. ``LP_ALGORITHM``: lets the caller choose
    the LP algorithm (simplex, interior point, first-order). ``DUALS``: returns row and column duals of an LP.
    ``INCREMENTAL``: keeps a model between solves, so that columns and rows can be added or deleted, costs and
    bounds changed, and the next solve starts from the kept basis (:class:`fairshare.solvers.IncrementalLP`).
    ``DEADLINE``: stops at an absolute deadline. ``THREADS``: runs on a chosen number of threads.
    """

    INTEGER = "integer"
    ARRAY_MODEL = "array_model"
    LP_ALGORITHM = "lp_algorithm"
    DUALS = "duals"
    INCREMENTAL = "incremental"
    DEADLINE = "deadline"
    THREADS = "threads"


@dataclass(frozen=True, slots=True)
class Backend:
    """A solver backend: its name (the ``backend`` option's value), what it solves and what it can do.

    Attributes
    ----------
    name : str
    description : str
    features : frozenset of Feature
    """

    name: str
    description: str
    features: frozenset[Feature]

    def supports(self, feature: Feature | str) -> bool:
        """The backend has ``feature``."""
        return Feature(feature) in self.features
