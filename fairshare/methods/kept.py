"""The kept LP: one round's tightened LP held in HiGHS and changed into the next round's, not built again.

A live scheduler plans again after a few changes (a job arrived, one finished, a placement moved). Between two
such plans most rows and columns of the tightened LP (:meth:`fairshare.formulation.RoundModel.tightened_lp`)
are the same: :class:`KeptLP` identifies them by the job ids and GPU type they stand for and changes the LP
that HiGHS holds into the new one, touching only what differs:

- the rows and columns of jobs that left, and columns that no longer exist, are deleted;
- the rows of new jobs and the columns that are new (or whose size in the capacity row changed) are added;
- objective coefficients are set only where they changed, capacities only where they changed;

then HiGHS's dual simplex goes on from the basis it holds. The result is the optimum of the whole new LP (the
same objective value as a cold solve, with duals for every row and column): only the point can differ where
the LP has several optima. If HiGHS fails on the changed LP, the round is solved cold and the kept LP starts
again from it. The first round is solved as a cold round is (dual simplex, or interior point with crossover
above :data:`~fairshare.methods.lp.DUAL_SIMPLEX_MAX_COLUMNS` columns); later ones by dual simplex.

A :class:`KeptLP` is used by ``fast`` when passed as ``allocate(..., warm=kept)`` (the
:class:`~fairshare.engine.Engine` keeps one when ``incremental=True``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from fairshare.errors import SolverError
from fairshare.formulation import LinearProgram, RoundModel
from fairshare.methods.lp import lp_algorithm, solve_relaxation
from fairshare.methods.options import SolveOptions
from fairshare.solvers import IncrementalLP, SolverOutcome

__all__ = ["MAX_KEYS", "KeptLP"]

MAX_KEYS = 2**27
"""Job keys a :class:`KeptLP` hands out before it starts again from a cold solve (keys must fit a column key)."""

_TYPE_BITS = 8  # a column key is (a << 36) | ((b + 1) << 8) | g: job keys below 2^27, at most 256 GPU types
_MAX_TYPES = 2**_TYPE_BITS


@dataclass(eq=False)
class KeptLP:
    """The tightened LP of the last round, kept in HiGHS (mutable; one per sequence of rounds).

    Attributes
    ----------
    rounds : int
        Rounds solved with this object.
    changed : bool
        The last round changed the kept LP (``False``: it was solved cold).
    added_columns, deleted_columns, changed_costs : int
        Of the last round: columns added, deleted and given a new objective coefficient.
    iterations : int
        Simplex iterations of the last round.
    objective : float
        The last round's LP optimum (nan before the first).

    Notes
    -----
    Not meant to be shared by rounds solved at the same time; a copy sent to another process (pickled) starts
    empty.
    """

    rounds: int = 0
    changed: bool = False
    added_columns: int = 0
    deleted_columns: int = 0
    changed_costs: int = 0
    iterations: int = 0
    objective: float = float("nan")
    _inc: IncrementalLP | None = field(default=None, repr=False)
    _key_of: dict[str, int] = field(default_factory=dict, repr=False)  # job id -> key
    _next_key: int = field(default=0, repr=False)
    _types: tuple[str, ...] = field(default=(), repr=False)
    _col_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)  # HiGHS order
    _col_cost: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    _col_size: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    _row_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)  # type g: -1 - g
    _row_upper: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)

    def __reduce__(self) -> tuple[Any, ...]:
        return (KeptLP, ())

    def reset(self) -> None:
        """Forget the kept LP (the next round is solved cold)."""
        self._inc = None
        self._key_of = {}
        self._next_key = 0
        self._types = ()

    def solve(self, model: RoundModel, lp: LinearProgram, opts: SolveOptions, *,
              deadline: float | None = None) -> SolverOutcome:
        """The optimum of ``lp`` (``model.tightened_lp()``), from the kept LP changed into it.

        Returns what :func:`~fairshare.methods.lp.solve_relaxation` returns: ``x``, ``col_dual`` and
        ``row_dual`` in the order of ``model``'s columns and rows, the optimum as ``objective`` and ``bound``.
        A ``deadline`` that passes first gives a ``TIME_LIMIT`` outcome without a point (the kept LP is then
        dropped).
        """
        col_keys, row_keys = self._keys(model)
        if self._inc is None or col_keys is None or row_keys is None:
            return self._cold(model, lp, opts, deadline, col_keys, row_keys)
        try:
            perm, rowpos = self._change(model, lp, col_keys, row_keys)
            out = self._inc.run(deadline)
        except SolverError:
            return self._cold(model, lp, opts, deadline, col_keys, row_keys)
        if out.x is None or out.row_dual is None or out.col_dual is None or not out.optimal:
            if out.x is None and deadline is not None:
                self.reset()
                return out
            return self._cold(model, lp, opts, deadline, col_keys, row_keys)
        self.rounds += 1
        self.changed = True
        self.objective = float(out.objective)
        self.iterations = self._inc.iterations
        self._inc.iterations = 0
        m = len(perm)
        x, col_dual = np.zeros(m), np.zeros(m)
        x[perm] = out.x
        col_dual[perm] = out.col_dual
        return SolverOutcome(x, out.objective, out.bound, out.termination, out.message, out.seconds, mip_gap=0.0,
                             col_dual=col_dual, row_dual=np.asarray(out.row_dual)[rowpos])

    # ------------------------------------------------------------------------------------------ internals
    def _keys(self, model: RoundModel) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Column and row keys of ``model`` (``None`` if its types differ from the kept LP's or keys ran out)."""
        p = model.problem
        if len(p.gpu_types) > _MAX_TYPES:
            return None, None
        key_of = self._key_of
        if p.gpu_types != self._types:
            key_of.clear()
            self._next_key = 0
        for jid in p.job_ids:
            if jid not in key_of:
                key_of[jid] = self._next_key
                self._next_key += 1
        if self._next_key >= MAX_KEYS:
            return None, None
        jk = np.fromiter((key_of[j] for j in p.job_ids), np.int64, p.num_jobs)
        c = model.columns
        kb = np.where(c.job_b >= 0, jk[np.maximum(c.job_b, 0)] + 1, 0)
        col = (jk[c.job_a] << 36) | (kb << _TYPE_BITS) | c.gpu.astype(np.int64)
        row = np.concatenate([jk, -1 - np.arange(len(p.gpu_types), dtype=np.int64)])
        if p.gpu_types != self._types:
            return col, None  # a cold solve that keeps these keys
        return col, row

    def _cold(self, model: RoundModel, lp: LinearProgram, opts: SolveOptions, deadline: float | None,
              col_keys: np.ndarray | None, row_keys: np.ndarray | None) -> SolverOutcome:
        self.reset()
        p = model.problem
        col_keys = row_keys = None
        if len(p.gpu_types) <= _MAX_TYPES:
            self._types = p.gpu_types
            col_keys, row_keys = self._keys(model)
        try:
            inc = IncrementalLP(lp, threads=opts.threads, seed=opts.seed, verbose=opts.verbose)
            ipm = lp_algorithm(model, lp, opts) == "ipm"
            if ipm:  # a large round: interior point and crossover to a basis, simplex from there on
                inc.highs.setOptionValue("solver", "ipm")
            out = inc.run(deadline)
            if ipm:
                inc.highs.setOptionValue("solver", "simplex")
        except SolverError:
            out = None
        if out is None or not out.optimal or out.x is None or out.row_dual is None or col_keys is None \
                or row_keys is None:
            self.reset()
            if out is not None and out.x is None and deadline is not None and not out.optimal:
                return out
            return solve_relaxation(model, lp, opts, deadline=deadline)
        self._inc = inc
        self._col_keys = col_keys
        self._col_cost = np.array(lp.cost, np.float64)
        self._col_size = np.asarray(model.columns.size, np.float64).copy()
        self._row_keys = row_keys
        self._row_upper = np.asarray(lp.row_upper, np.float64).copy()
        self.rounds += 1
        self.changed = False
        self.objective = float(out.objective)
        self.added_columns, self.deleted_columns, self.changed_costs = lp.cost.shape[0], 0, 0
        self.iterations = inc.iterations
        inc.iterations = 0
        return out

    def _change(self, model: RoundModel, lp: LinearProgram, col_keys: np.ndarray,
                row_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Change the kept LP into ``lp``; returns (model column of each HiGHS column, HiGHS row of each model row)."""
        inc = self._inc
        assert inc is not None
        size = np.asarray(model.columns.size, np.float64)
        # columns: keep those still there with the same size in the capacity row
        order = np.argsort(col_keys, kind="stable")
        sorted_keys = col_keys[order]
        where = np.minimum(np.searchsorted(sorted_keys, self._col_keys), max(len(sorted_keys) - 1, 0))
        found = (sorted_keys[where] == self._col_keys) if len(sorted_keys) else np.zeros(len(self._col_keys), bool)
        match = order[where]
        keep = found & (size[match] == self._col_size) if len(sorted_keys) else found
        inc.delete_columns(np.flatnonzero(~keep))
        kept_model_col = match[keep]
        kept_cost = self._col_cost[keep]
        # rows: keep the jobs still there (capacity rows always stay)
        rorder = np.argsort(row_keys, kind="stable")
        rsorted = row_keys[rorder]
        rwhere = np.minimum(np.searchsorted(rsorted, self._row_keys), len(rsorted) - 1)
        rfound = rsorted[rwhere] == self._row_keys
        inc.delete_rows(np.flatnonzero(~rfound))
        kept_rows = self._row_keys[rfound]
        kept_upper = self._row_upper[rfound]
        # new job rows go after the kept ones
        have_row = np.zeros(len(row_keys), bool)
        have_row[rorder[rwhere[rfound]]] = True
        new_rows = np.flatnonzero(~have_row)
        inc.add_rows(np.asarray(lp.row_upper, np.float64)[new_rows])
        rowpos = np.empty(len(row_keys), np.int64)
        rowpos[rorder[rwhere[rfound]]] = np.arange(len(kept_rows))
        rowpos[new_rows] = len(kept_rows) + np.arange(len(new_rows))
        # capacities that changed
        upper = np.asarray(lp.row_upper, np.float64)
        kept_model_row = rorder[rwhere[rfound]]
        moved = np.flatnonzero(upper[kept_model_row] != kept_upper)
        inc.change_row_upper(moved, upper[kept_model_row[moved]])
        # costs that changed
        cost = np.asarray(lp.cost, np.float64)
        diff = np.flatnonzero(cost[kept_model_col] != kept_cost)
        inc.change_costs(diff, cost[kept_model_col[diff]])
        # new columns
        have_col = np.zeros(len(col_keys), bool)
        have_col[kept_model_col] = True
        new_cols = np.flatnonzero(~have_col)
        if len(new_cols):
            sub = sp.csc_matrix(lp.matrix)[:, new_cols]
            sub.indices = rowpos[sub.indices].astype(np.int32)
            sub.sort_indices()
            inc.add_columns(cost[new_cols], sub)
        perm = np.concatenate([kept_model_col, new_cols])
        self._col_keys = col_keys[perm]
        self._col_cost = cost[perm]
        self._col_size = size[perm]
        self._row_keys = np.concatenate([kept_rows, row_keys[new_rows]])
        self._row_upper = np.concatenate([upper[kept_model_row], upper[new_rows]])
        self.added_columns, self.deleted_columns, self.changed_costs = len(new_cols), int((~keep).sum()), len(diff)
        # forget the keys of jobs that left
        if len(self._key_of) > 2 * max(model.problem.num_jobs, 1024):
            live = set(model.problem.job_ids)
            self._key_of = {j: k for j, k in self._key_of.items() if j in live}
        return perm, rowpos
