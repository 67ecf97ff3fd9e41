"""Solve methods: one module per mode, one signature, a table instead of an if-ladder.

Each method takes a built :class:`~fairshare.formulation.RoundModel`, checked
:class:`~fairshare.methods.options.SolveOptions` and, as keywords, the inputs that are not plain options: a
``warm`` :class:`~fairshare.methods.warm.WarmStart` and an ``executor`` for the parts of a split round (used by
``fast``). It returns a :class:`Solved`: column values, status, gap, bound and the solver's message. The front
end (:func:`fairshare.allocate`) turns that into an :class:`~fairshare.allocation.Allocation` in one place.
Shared steps: :mod:`~fairshare.methods.relax` (the tightened LP rounded), :mod:`~fairshare.methods.rounding`,
:mod:`~fairshare.methods.lp`.

========  ==========================================  =====================================
mode      method                                      status
========  ==========================================  =====================================
exact     :func:`fairshare.methods.exact.solve`       ``optimal`` / ``time_limit`` / ``no_solution``
lp        :func:`fairshare.methods.lp.solve`          ``optimal`` (time fractions)
fast      :func:`fairshare.methods.fast.solve`        ``heuristic`` (with a certified gap)
========  ==========================================  =====================================
"""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Protocol

from fairshare.formulation import RoundModel
from fairshare.methods import exact, fast, lp
from fairshare.methods.kept import KeptLP
from fairshare.methods.options import MODES, Mode, SolveOptions
from fairshare.methods.solved import Solved, relative_gap
from fairshare.methods.warm import WarmStart

__all__ = ["METHODS", "MODES", "Method", "Mode", "SolveOptions", "Solved", "relative_gap"]



class Method(Protocol):
    """The signature every solve method has."""

    def __call__(self, model: RoundModel, opts: SolveOptions, *, warm: WarmStart | KeptLP | None = None,
                 executor: Executor | None = None) -> Solved:
        """Solve ``model`` with ``opts``; ``warm`` and ``executor`` as :func:`fairshare.allocate` takes them."""


METHODS: dict[Mode, Method] = {Mode.EXACT: exact.solve, Mode.LP: lp.solve, Mode.FAST: fast.solve}
"""Mode -> method."""
