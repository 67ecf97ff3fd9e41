"""What a solve method returns (:class:`Solved`) and the gap every method reports (:func:`relative_gap`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairshare.allocation import Status

__all__ = ["Solved", "relative_gap"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Solved:
    """The outcome of one solve method, before it becomes an :class:`~fairshare.allocation.Allocation`.

    Attributes
    ----------
    x : array (M,) or None
        Placement column values (0/1, or time fractions for ``lp``); ``None``: no solution.
    status : Status
    mip_gap : float or None
        Relative gap on the achievable improvement (see :func:`relative_gap`).
    bound : float or None
        Proven upper bound on section 3's objective (or the LP optimum).
    message : str
        The solver's own status text.
    relaxation : str or None
        ``lp``: which relaxation was solved.
    build_seconds, solve_seconds : float
        Building the LP arrays; solving (and rounding, polishing).
    """

    x: np.ndarray | None
    status: Status
    mip_gap: float | None
    bound: float | None
    message: str
    relaxation: str | None = None
    build_seconds: float = 0.0
    solve_seconds: float = 0.0


def relative_gap(bound: float, value: float) -> float:
    """Relative gap on the achievable improvement: ``max(0, bound - value) / |bound|``.

    ``value`` and ``bound`` are gains over the empty placement (``objective - obj_null``); a bound that is
    not finite gives ``inf``.

    Examples
    --------
    >>> relative_gap(10.0, 9.0)
    0.1
    """
    if not np.isfinite(bound):
        return float("inf")
    return max(0.0, bound - value) / max(abs(bound), 1e-9)
