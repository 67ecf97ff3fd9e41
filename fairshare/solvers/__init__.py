"""Solver backends behind one contract: a :class:`LinearProgram` (or a round model) in, a :class:`SolverOutcome` out.

Backends
--------
:func:`solve_lp`
    HiGHS through highspy (:mod:`fairshare.solvers.highs`): the array-built LP or MILP passed whole.
:func:`solve_reference`
    The readable Pyomo reference model of the round (:mod:`fairshare.solvers.pyomo`), solved with HiGHS.

Every backend reports the same :class:`SolverOutcome`, with a :class:`Termination` mapped from the backend's
own status by one table, and keeps the backend's status text in ``message``. Layers above (solve methods,
policies) import this package, never ``highspy`` or ``pyomo``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from fairshare._compat import StrEnum
from fairshare.formulation import LinearProgram

if TYPE_CHECKING:  # pragma: no cover
    from fairshare.formulation import RoundModel

__all__ = ["LinearProgram", "SolverOutcome", "Termination", "solve_lp", "solve_reference"]


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


def solve_lp(lp: LinearProgram, **options: Any) -> SolverOutcome:
    """Solve ``lp`` (a maximisation) with HiGHS; see :func:`fairshare.solvers.highs.solve_highs` for options.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> lp = LinearProgram(np.array([1.0, 2.0]), sp.csc_matrix(np.ones((1, 2))), np.array([-np.inf]),
    ...                    np.array([1.0]), np.zeros(2), np.ones(2), 2)
    >>> out = solve_lp(lp)
    >>> str(out.termination), round(out.objective, 6), [abs(v) for v in out.x.round(6).tolist()]
    ('optimal', 2.0, [0.0, 1.0])
    """
    from fairshare.solvers.highs import solve_highs

    return solve_highs(lp, **options)


def solve_reference(model: RoundModel, *, integer: bool, time_limit: float | None = None,
                    mip_rel_gap: float = 1e-6, threads: int | None = None, seed: int = 0,
                    verbose: bool = False) -> SolverOutcome:
    """Solve the spec's section 3 problem as written in the Pyomo reference model (HiGHS underneath).

    ``x`` holds the placement columns of ``model.columns``; ``objective`` and ``bound`` are in section 3's
    units (not offset by ``obj_null``).
    """
    from fairshare.solvers.pyomo import solve_pyomo

    return solve_pyomo(model, integer=integer, time_limit=time_limit, mip_rel_gap=mip_rel_gap,
                       threads=threads, seed=seed, verbose=verbose)
