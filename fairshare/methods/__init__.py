"""Solve methods: one module per mode, one signature, a table instead of an if-ladder.

Each method takes a built :class:`~fairshare.formulation.RoundModel` and checked
:class:`~fairshare.methods.options.SolveOptions` and returns a :class:`Solved`: column values, status, gap,
bound and the solver's message. The front end (:func:`fairshare.allocate`) turns that into an
:class:`~fairshare.allocation.Allocation` in one place.

========  ==========================================  =====================================
mode      method                                      status
========  ==========================================  =====================================
exact     :func:`fairshare.methods.exact.solve`       ``optimal`` / ``time_limit`` / ``no_solution``
lp        :func:`fairshare.methods.lp.solve`          ``optimal`` (time fractions)
fast      :func:`fairshare.methods.fast.solve`        ``heuristic`` (with a certified gap)
========  ==========================================  =====================================
"""

from __future__ import annotations

from collections.abc import Callable

from fairshare.formulation import RoundModel
from fairshare.methods import exact, fast, lp
from fairshare.methods.options import MODES, Mode, SolveOptions
from fairshare.methods.solved import Solved, relative_gap

__all__ = ["METHODS", "MODES", "Method", "Mode", "SolveOptions", "Solved", "relative_gap"]

Method = Callable[[RoundModel, SolveOptions], Solved]
"""The signature every solve method has."""

METHODS: dict[Mode, Method] = {Mode.EXACT: exact.solve, Mode.LP: lp.solve, Mode.FAST: fast.solve}
"""Mode -> method."""
