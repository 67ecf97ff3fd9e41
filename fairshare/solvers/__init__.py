"""Solver backends behind one contract: a :class:`LinearProgram` (or a round model) in, a :class:`SolverOutcome` out.

Backends
--------
:func:`solve_lp`
    HiGHS through highspy (:mod:`fairshare.solvers.highs`): the array-built LP or MILP passed whole.
:func:`solve_reference`
    The readable Pyomo reference model of the round (:mod:`fairshare.solvers.pyomo`), solved with HiGHS.

Every backend reports the same :class:`SolverOutcome`, with a :class:`Termination` mapped from the backend's
own status by one table, and keeps the backend's status text in ``message``. What a backend can do is data:
:data:`BACKENDS` maps each ``backend`` option value to a :class:`Backend` and its :class:`Feature` set (MILPs,
array-built models, a choice of LP algorithm, duals, an :class:`IncrementalLP` kept between solves, deadlines,
threads), and the solve methods ask it instead of naming a backend. The contract types live in
:mod:`fairshare.solvers.base`. Layers above (solve methods, policies) import this package, never ``highspy``
or ``pyomo``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fairshare.errors import InvalidInputError
from fairshare.formulation import LinearProgram
from fairshare.solvers import highs
from fairshare.solvers.base import BASIS_BASIC, BASIS_LOWER, BASIS_UPPER, Backend, Feature, SolverOutcome, Termination
from fairshare.solvers.highs import IncrementalLP

if TYPE_CHECKING:  # pragma: no cover
    from fairshare.formulation import RoundModel

__all__ = ["BACKENDS", "BASIS_BASIC", "BASIS_LOWER", "BASIS_UPPER", "Backend", "Feature", "IncrementalLP",
           "LinearProgram", "SolverOutcome", "Termination", "backend", "solve_lp", "solve_reference"]

BACKENDS: dict[str, Backend] = {
    "highs": Backend("highs", "HiGHS through highspy: the array-built LP or MILP passed whole",
                     frozenset(Feature)),
    "pyomo": Backend("pyomo", "the readable Pyomo reference model of section 3, solved with HiGHS",
                     frozenset({Feature.INTEGER, Feature.THREADS})),
}
"""Every backend by its ``backend`` option name, with what it can do."""


def backend(name: str) -> Backend:
    """The backend called ``name``; an unknown name raises :class:`~fairshare.errors.InvalidInputError`."""
    if name not in BACKENDS:
        raise InvalidInputError("backend", name, f"must be one of {', '.join(repr(b) for b in BACKENDS)}")
    return BACKENDS[name]



def solve_lp(lp: LinearProgram, **options: Any) -> SolverOutcome:
    """Solve ``lp`` (a maximisation) with HiGHS; see :func:`fairshare.solvers.highs.solve_highs` for options.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> lp = LinearProgram(np.array([1.0, 2.0]), sp.csc_matrix(np.ones((1, 2))), np.array([-np.inf]),
    ...                    np.array([1.0]), np.zeros(2), np.ones(2), 2)
    >>> out = solve_lp(lp)
    >>> str(out.termination), round(out.objective, 6), [abs(v) for v in out.x.round(6).tolist()]
    ('optimal', 2.0, [0.0, 1.0])
    """
    return highs.solve_highs(lp, **options)  # looked up at call time, so the backend's module can be patched


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

