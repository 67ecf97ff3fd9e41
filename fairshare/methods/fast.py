"""``fast``: the tightened LP relaxation rounded to a feasible placement, then improved when the gap is large.

The steps are :func:`fairshare.methods.relax.round_relaxation` (tightened LP, greedy rounding with a fill step,
local search and polish when the gaps call for them). The result is always feasible; its status is
``heuristic`` and ``mip_gap`` is certified by the LP bound.

With ``partitions > 1`` the round is split first (:mod:`fairshare.methods.partition`), its parts solved through
the ``executor`` given. With ``warm_start=True`` the LP is solved by pricing, seeded from the
:class:`~fairshare.methods.warm.WarmStart` given as ``warm`` (:mod:`fairshare.methods.warm`).
"""

from __future__ import annotations

import time
from concurrent.futures import Executor

from fairshare.allocation import Status
from fairshare.formulation import RoundModel
from fairshare.methods import partition
from fairshare.methods.kept import KeptLP
from fairshare.methods.options import SolveOptions
from fairshare.methods.relax import round_relaxation
from fairshare.methods.rounding import dot
from fairshare.methods.solved import Solved, relative_gap
from fairshare.methods.warm import WarmStart

__all__ = ["solve"]


def solve(model: RoundModel, opts: SolveOptions, *, warm: WarmStart | KeptLP | None = None,
          executor: Executor | None = None) -> Solved:
    """Solve ``model`` the fast way (see the module documentation).

    With ``opts.partitions > 1`` the round is split (:func:`fairshare.methods.partition.solve`), its parts run
    through ``executor`` when one is given. With ``opts.warm_start`` the LP is solved by pricing, seeded from
    and updating ``warm`` when one is given. With a :class:`~fairshare.methods.kept.KeptLP` as ``warm`` (with or
    without ``warm_start``) the LP is the kept one changed into this round's.
    """
    if opts.partitions > 1:
        return partition.solve(model, opts, executor=executor)
    t0 = time.perf_counter()
    lp = model.tightened_lp()
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    r = round_relaxation(model, lp, opts, warm=warm if opts.warm_start or isinstance(warm, KeptLP) else None)
    gap = relative_gap(r.bound, dot(model.value, r.x))
    return Solved(x=r.x, status=Status.HEURISTIC, mip_gap=gap, bound=r.bound + model.obj_null, message=r.message,
                  relaxation=None, build_seconds=build_s, solve_seconds=time.perf_counter() - t1)
