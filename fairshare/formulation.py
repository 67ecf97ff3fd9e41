"""The round problem as placement columns, built from arrays (spec sections 3 and 5a).

A *placement* (column) ``c`` is either a job alone on ``s_j`` GPUs of type ``g`` (``a[j, g]``) or a
co-location candidate on ``s_p`` shared GPUs of type ``g`` (``b[p, g]``). Every column has a type, a size
(GPUs) and one or two member jobs, each with the throughput it gets there.

Section 3 MILP (the reference formulation)
    maximise   ``sum_c eff_c x_c - lambda * sum_j w_j f_j sigma_j``
    subject to ``sum_{c ∋ j} x_c <= 1``                          (one placement per job)
               ``sum_{c on g} size_c x_c <= C_g``                 (capacity)
               ``sum_{c ∋ j} rho_{jc} x_c + sigma_j >= need_j``   (spatiotemporal fairness)
               ``x binary, sigma >= 0``
    with ``eff_c = sum_{j in c} pi_j s_j T_{jc} / Tmax_j`` (priorities ``pi_j``, default 1),
    ``rho_{jc} = T_{jc} / Tfair_j``, shortfall prices ``f_j`` (section 10, default 1) and
    ``need_j = (1 - epsilon) + D_j``.

Tightened column formulation (section 5a)
    maximise   ``sum_c v_c x_c``  subject to the first two row families only, with
    ``v_c = sum_{j in c} (lambda w_j f_j min(rho_{jc}, need_j) + pi_j s_j T_{jc} / Tmax_j)``.
    For binary ``x`` its objective equals section 3's minus ``obj_null = -lambda sum_j w_j f_j need_j``, so the two
    MILPs have the same optima; its LP relaxation is much tighter (a job cannot meet its need with a sliver of
    time), which is what makes LP-plus-rounding nearly optimal.

Fractional requests (spec section 8)
    A job asking for part of one GPU (``0 < s_j < 1``) has one alone column per type, whose ``size`` in the
    capacity row is its share class ``r_j = 1/2^k >= s_j`` (:attr:`RoundProblem.capacity_scale`), so that any
    placement within capacity packs onto whole GPUs (:func:`fairshare.packing.pack_shares`); ``eff_c`` and the
    fair share use ``s_j`` as given. Such jobs are in no pair column. Rounds without one build exactly the
    integer columns of before.

Running jobs (spec section 11)
    When the round says where jobs run now (:attr:`RoundProblem.running`), a column that moves a running
    job gives it ``T_{jc} * max(0, 1 - restart_j / round_seconds)``: the column's throughputs, and so ``eff_c``,
    ``rho_{jc}`` and ``v_c``, are those the job really gets in the round.

Both are built as sparse matrices in one pass over numpy arrays (no Python loop per variable).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp

from fairshare._validate import row_max
from fairshare.fair_share import FairShare, fair_share, next_deficit
from fairshare.problem import RoundProblem

__all__ = ["Columns", "Evaluation", "LinearProgram", "RoundModel", "build_columns", "build_model"]


@dataclass(frozen=True, slots=True)
class Columns:
    """Placement columns of a round. Alone columns come first, then co-location columns.

    Attributes
    ----------
    gpu, size : arrays (M,)
        Type index, and GPUs counted in the capacity row (int; float64 when the round has fractional
        requests, whose columns count their share class ``1/2^k``).
    job_a, job_b : int arrays (M,)
        Member jobs (``job_b == -1`` for an alone column).
    tput_a, tput_b : float arrays (M,)
        Throughput each member gets (``tput_b == 0`` for an alone column).
    num_alone : int
        Number of alone columns.
    """

    gpu: np.ndarray
    size: np.ndarray
    job_a: np.ndarray
    job_b: np.ndarray
    tput_a: np.ndarray
    tput_b: np.ndarray
    num_alone: int

    @property
    def num(self) -> int:
        """Number of columns ``M``."""
        return len(self.gpu)

    @property
    def is_pair(self) -> np.ndarray:
        """Boolean (M,): the column is a co-location pair."""
        return self.job_b >= 0


@dataclass(frozen=True, slots=True)
class CscArrays:
    """A sparse matrix as the three arrays of its compressed sparse column form, and its shape.

    What a solver reads of a matrix, for the restricted LPs that pricing builds several times per round:
    scipy's ``csc_matrix`` checks its arrays each time it is made, which cost more than taking them. The
    caller guarantees a valid form (``indptr`` of ``shape[1] + 1`` non-decreasing entries from 0, ``indices``
    below ``shape[0]``); :meth:`to_scipy` gives the checked scipy matrix.
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    shape: tuple[int, int]

    @property
    def nnz(self) -> int:
        """Number of stored entries."""
        return len(self.data)

    def to_scipy(self) -> sp.csc_matrix:
        """The same matrix as a scipy ``csc_matrix`` (checked by scipy)."""
        return sp.csc_matrix((self.data, self.indices, self.indptr), shape=self.shape)


@dataclass(frozen=True, slots=True)
class LinearProgram:
    """A maximisation ``max c@x  s.t. row_lower <= A x <= row_upper, col_lower <= x <= col_upper``.

    ``matrix`` is a scipy CSC matrix, or :class:`CscArrays` for the restricted LPs of pricing.
    """

    cost: np.ndarray
    matrix: sp.csc_matrix | CscArrays
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    num_placement_cols: int  # the first columns are placements; the rest (if any) are sigma_j


@dataclass(frozen=True, slots=True)
class Evaluation:
    """What a (binary or fractional) placement ``x`` gives: :meth:`RoundModel.evaluate`.

    Attributes
    ----------
    throughput, progress, job_shortfall, next_deficit : arrays (N,)
        Per job: throughput ``tau_j``, progress ``rho_j = tau_j / Tfair_j`` (in units of the fair
        throughput), shortfall ``sigma_j = max(0, need_j - rho_j)`` and the deficit carried into the next round.
    efficiency : float
        ``E = sum_j s_j tau_j / Tmax_j``, best-GPU equivalents of work (plain, whatever the priorities).
    shortfall : float
        ``S = sum_j w_j sigma_j`` (normalised weights; plain, whatever the shortfall prices).
    objective : float
        ``E_pi - lambda S_f``, the value optimised.
    prioritized_efficiency : float
        ``E_pi = sum_j pi_j s_j tau_j / Tmax_j`` (equal to ``efficiency`` when every priority is 1).
    priced_shortfall : float
        ``S_f = sum_j w_j f_j sigma_j`` (equal to ``shortfall`` when every shortfall price is 1).
    """

    throughput: np.ndarray
    progress: np.ndarray
    job_shortfall: np.ndarray
    next_deficit: np.ndarray
    efficiency: float
    shortfall: float
    objective: float
    prioritized_efficiency: float
    priced_shortfall: float


@dataclass(frozen=True, slots=True)
class RoundModel:
    """Everything about a round that the solve modes share, computed once.

    Attributes
    ----------
    problem : RoundProblem
    fair : FairShare
    columns : Columns
    tmax : array (N,)
        Best alone throughput of each job over the types where it can run.
    weight : array (N,)
        Normalised weights (mean 1).
    need : array (N,)
        ``(1 - epsilon) + D_j``.
    eff : array (M,)
        Efficiency contribution of each column, ``sum_{j in c} s_j T_jc / Tmax_j`` (plain).
    rho_a, rho_b : arrays (M,)
        Progress of each member in fair-share units.
    value : array (M,)
        Tightened column value ``v_c`` (section 5a), with the efficiency part weighted by priority.
    obj_null : float
        Objective of the empty placement.
    eff_priority : array (M,)
        ``sum_{j in c} pi_j s_j T_jc / Tmax_j``: the efficiency contribution the round optimises (equal to
        ``eff`` when every priority is 1).
    """

    problem: RoundProblem
    fair: FairShare
    columns: Columns
    tmax: np.ndarray
    weight: np.ndarray
    need: np.ndarray
    eff: np.ndarray
    rho_a: np.ndarray
    rho_b: np.ndarray
    value: np.ndarray
    obj_null: float
    eff_priority: np.ndarray
    # What the columns' values take from the round apart from the priorities, kept by build_model so that
    # with_priority computes only the part that changes; None for a model made otherwise.
    _value_parts: _ValueParts | None = field(default=None, repr=False, compare=False)

    # -------------------------------------------------------------- evaluation of a (fractional) placement
    def with_priority(self, priority: np.ndarray) -> RoundModel:
        """The model of the same round with other per-job priorities (:meth:`RoundProblem.with_priority`).

        Priorities weigh only the efficiency term, so the fair shares, columns and fairness coefficients are
        kept and only the columns' values are computed again: the same model as
        ``build_model(problem.replace(priority=priority))``, at a fraction of its cost. For models made by
        :func:`build_model` (a model whose values were set otherwise gets the standard values back); the
        new model shares this one's unchanged arrays.
        """
        return self.with_prices(priority=priority)

    def with_prices(self, *, priority: np.ndarray | None = None,
                    shortfall_price: np.ndarray | None = None) -> RoundModel:
        """The model of the same round with other priorities and/or shortfall prices (``None``: kept).

        The same model as ``build_model(problem.with_prices(...))``: fair shares and columns are kept, the
        columns' values (and ``obj_null`` when the prices change) are computed again.
        """
        p = self.problem.with_prices(priority=priority, shortfall_price=shortfall_price)
        if p.num_jobs == 0:
            return replace(self, problem=p)
        parts = self._value_parts
        if parts is not None and (shortfall_price is not None or not parts.came_from(self)):
            parts = None  # other prices, or a model whose arrays were replaced: values from its own arrays
        _eff, eff_pi, value, parts = _column_values(p, self.columns, self.tmax, self.weight, self.need, self.rho_a,
                                                    self.rho_b, parts)
        obj_null = self.obj_null
        if shortfall_price is not None:
            obj_null = float(-p.fairness_weight * (self.weight * p.shortfall_price * self.need).sum())
        return replace(self, problem=p, value=value, eff_priority=eff_pi, obj_null=obj_null, _value_parts=parts)

    def job_throughput(self, x: np.ndarray) -> np.ndarray:
        """``tau_j`` for column shares ``x`` (binary or fractional)."""
        c = self.columns
        n = self.problem.num_jobs
        tau = np.bincount(c.job_a, weights=c.tput_a * x, minlength=n)
        pair = c.is_pair
        if pair.any():
            tau += np.bincount(c.job_b[pair], weights=(c.tput_b * x)[pair], minlength=n)
        return tau

    def evaluate(self, x: np.ndarray) -> Evaluation:
        """Per-job throughput, progress, shortfall and next deficit, and E, S and the objective of ``x``."""
        p = self.problem
        tau = self.job_throughput(x)
        rho = tau / self.fair.fair_throughput
        sigma = np.maximum(0.0, self.need - rho)
        with np.errstate(invalid="ignore", divide="ignore"):
            work = p.scale * tau / self.tmax
            e = float(work.sum()) if p.num_jobs else 0.0
            e_pi = float((p.priority * work).sum()) if p.num_jobs else 0.0
        s = float((self.weight * sigma).sum())
        s_f = float((self.price * sigma).sum())
        return Evaluation(throughput=tau, progress=rho, job_shortfall=sigma,
                          next_deficit=next_deficit(p.deficit, p.epsilon, rho), efficiency=e, shortfall=s,
                          objective=e_pi - p.fairness_weight * s_f,
                          prioritized_efficiency=e_pi, priced_shortfall=s_f)

    @property
    def price(self) -> np.ndarray:
        """``w_j f_j``: each job's price of one unit of shortfall (normalised weight times shortfall price)."""
        return self.weight * self.problem.shortfall_price

    # -------------------------------------------------------------- linear programs
    def placement_rows(self, usable: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """COO triplets of the job rows (0..N-1) and capacity rows (N..N+G-1) of the placement columns.

        Parameters
        ----------
        usable : array of int, optional
            Indices of the columns to include (default: all), numbered ``0..len(usable)-1`` in the
            triplets' column index.

        Returns
        -------
        rows, cols, values : arrays
            Row index, column index and coefficient of every non-zero (1 in a job row, the column's GPU
            count in its type's capacity row).
        """
        c, n = self.columns, self.problem.num_jobs
        sel = np.arange(c.num) if usable is None else np.asarray(usable, dtype=np.int64)
        m = len(sel)
        cols = np.arange(m)
        pair = c.is_pair[sel]
        rows = np.concatenate([c.job_a[sel], c.job_b[sel][pair], n + c.gpu[sel]])
        colx = np.concatenate([cols, cols[pair], cols])
        vals = np.concatenate([np.ones(m), np.ones(int(pair.sum())), c.size[sel].astype(np.float64)])
        return rows, colx, vals

    def _placement_csc(self) -> sp.csc_matrix:
        """The matrix of :meth:`placement_rows` in CSC form, built column by column.

        Every column holds its job rows (ascending) and its type's capacity row (below every job row), so the
        arrays are written directly: the same matrix as ``csc_matrix((values, (rows, cols)))``, entry for
        entry, at a fraction of the cost of converting triplets.
        """
        c, n = self.columns, self.problem.num_jobs
        pair = c.is_pair
        end = np.cumsum(2 + pair.astype(np.int64))
        first = end - 2 - pair
        indices = np.empty(int(end[-1]) if len(end) else 0, np.int32)
        data = np.ones(len(indices))
        indices[first] = np.where(pair, np.minimum(c.job_a, c.job_b), c.job_a)
        indices[first[pair] + 1] = np.maximum(c.job_a, c.job_b)[pair]
        indices[end - 1] = n + c.gpu
        data[end - 1] = c.size
        indptr = np.concatenate([[0], end]).astype(np.int32)
        return sp.csc_matrix((data, indices, indptr), shape=(n + len(self.problem.gpu_types), c.num))

    def tightened_lp(self) -> LinearProgram:
        """The column formulation of section 5a (objective offset ``obj_null`` left out)."""
        n, g, m = self.problem.num_jobs, len(self.problem.gpu_types), self.columns.num
        a = self._placement_csc()
        row_upper = np.concatenate([np.ones(n), self.problem.capacity.astype(np.float64)])
        return LinearProgram(self.value.copy(), a, np.full(n + g, -np.inf), row_upper, np.zeros(m), np.ones(m), m)

    def tightened_milp(self, lp: LinearProgram | None = None) -> LinearProgram:
        """:meth:`tightened_lp` as given to a MILP solver; with fractional requests, their GPUs made integer.

        For an all-integer round this is :meth:`tightened_lp` itself. With jobs that ask for part of one GPU,
        each type ``g`` gets an integer column ``y_g`` (``0 <= y_g <= C_g``): the GPUs of ``g`` that host
        fractional jobs. The capacity row of ``g`` becomes two rows,

        ``sum_{whole c on g} size_c x_c + y_g <= C_g`` and ``sum_{fractional c on g} r_c x_c - y_g <= 0``.

        Both describe the same 0/1 placements (the gangs take whole GPUs, so ``y_g = ceil(sum r_c x_c)`` fits
        whenever the single row holds) and the same LP bound, but branching on ``y_g`` splits the round on how
        many GPUs go to fractional jobs, which closes the gap far sooner (docs/performance-notes.md). The first
        ``M`` columns are the placement columns; ``num_placement_cols`` is ``M + G`` so that the ``y_g`` are
        integer too: slice a solution to its first ``M`` entries. ``lp``: the :meth:`tightened_lp` already
        built, if any.
        """
        lp = self.tightened_lp() if lp is None else lp
        p, c = self.problem, self.columns
        if not p.has_fractional:
            return lp
        n, g, m = p.num_jobs, len(p.gpu_types), c.num
        frac_col = (np.arange(m) < c.num_alone) & p.fractional[c.job_a]
        a = (lp.matrix.to_scipy() if isinstance(lp.matrix, CscArrays) else lp.matrix).tocoo()
        rows = np.where((a.row >= n) & frac_col[a.col], a.row + g, a.row)  # fractional sizes to the new rows
        y = m + np.arange(g)
        matrix = sp.csc_matrix((np.concatenate([a.data, np.ones(g), -np.ones(g)]),
                                (np.concatenate([rows, n + np.arange(g), n + g + np.arange(g)]),
                                 np.concatenate([a.col, y, y]))), shape=(n + 2 * g, m + g))
        cap = p.capacity.astype(np.float64)
        return LinearProgram(np.concatenate([lp.cost, np.zeros(g)]), matrix, np.full(n + 2 * g, -np.inf),
                             np.concatenate([lp.row_upper, np.zeros(g)]), np.zeros(m + g),
                             np.concatenate([np.ones(m), cap]), m + g)

    def section3_lp(self) -> LinearProgram:
        """Section 3's formulation with ``sigma_j`` columns and fairness rows (rows N+G .. 2N+G-1)."""
        p, c = self.problem, self.columns
        n, g, m = p.num_jobs, len(p.gpu_types), c.num
        rows, cols, vals = self.placement_rows()
        pair = c.is_pair
        idx = np.arange(m)
        f_rows = np.concatenate([n + g + c.job_a, n + g + c.job_b[pair], n + g + np.arange(n)])
        f_cols = np.concatenate([idx, idx[pair], m + np.arange(n)])
        f_vals = np.concatenate([self.rho_a, self.rho_b[pair], np.ones(n)])
        a = sp.csc_matrix((np.concatenate([vals, f_vals]), (np.concatenate([rows, f_rows]),
                                                            np.concatenate([cols, f_cols]))),
                          shape=(2 * n + g, m + n))
        cost = np.concatenate([self.eff_priority, -p.fairness_weight * self.price])
        row_lower = np.concatenate([np.full(n + g, -np.inf), self.need])
        row_upper = np.concatenate([np.ones(n), p.capacity.astype(np.float64), np.full(n, np.inf)])
        col_upper = np.concatenate([np.ones(m), np.full(n, np.inf)])
        return LinearProgram(cost, a, row_lower, row_upper, np.zeros(m + n), col_upper, m)


def build_columns(problem: RoundProblem) -> Columns:
    """Alone columns for every runnable (job, type), then one column per co-location candidate.

    A column's ``size`` is what it counts in its type's capacity row: the gang size, or for a job that asks
    for part of one GPU its share class (:attr:`RoundProblem.capacity_scale`; ``size`` is then float64).
    Candidates naming a fractional job get no column: such jobs share GPUs by their request, not as pairs.
    """
    runnable = problem.runnable
    ja, ga = np.nonzero(runnable)
    pj, pg, pt = problem.pair_jobs, problem.pair_gpu, problem.pair_throughput
    useful = (pt[:, 0] > 0) | (pt[:, 1] > 0)  # throughputs are >= 0: their sum is positive when one is
    fractional = problem.has_fractional
    if fractional:
        useful &= ~problem.fractional[pj].any(axis=1)
    if not useful.all():
        pj, pg, pt = pj[useful], pg[useful], pt[useful]
    scale = problem.capacity_scale
    gpu = np.concatenate([ga, pg]).astype(np.int64)
    job_a = np.concatenate([ja, pj[:, 0]]).astype(np.int64)
    job_b = np.concatenate([np.full(len(ja), -1), pj[:, 1]]).astype(np.int64)
    tput_a = np.concatenate([problem.throughput[ja, ga], pt[:, 0]])
    tput_b = np.concatenate([np.zeros(len(ja)), pt[:, 1]])
    run = problem.running
    if run is not None:  # a column that moves a running job gives it what its restart leaves of the round
        tput_a = tput_a * run.column_factor(job_a, gpu, job_b)
        tput_b = tput_b * np.where(job_b >= 0, run.column_factor(np.maximum(job_b, 0), gpu, job_a), 1.0)
    return Columns(
        gpu=gpu,
        size=np.concatenate([scale[ja], scale[pj[:, 0]]]).astype(np.float64 if fractional else np.int64),
        job_a=job_a, job_b=job_b, tput_a=tput_a, tput_b=tput_b, num_alone=len(ja),
    )


def build_model(problem: RoundProblem) -> RoundModel:
    """Compute fair shares, columns and coefficients of a round (vectorised).

    Examples
    --------
    >>> p = RoundProblem.from_dict({"gpus": {"A": 1}, "jobs": [
    ...     {"id": "x", "scale": 1, "throughput": {"A": 2.0}},
    ...     {"id": "y", "scale": 1, "throughput": {"A": 4.0}}]})
    >>> m = build_model(p)
    >>> m.value.tolist(), m.obj_null
    ([101.0, 101.0], -200.0)
    """
    fs = fair_share(problem)
    c = build_columns(problem)
    n = problem.num_jobs
    tmax = row_max(np.where(problem.runnable, problem.throughput, 0.0)) if n else np.zeros(0)
    w = problem.normalized_weight
    need = problem.need
    lam = problem.fairness_weight
    pair = c.is_pair
    jb = np.where(pair, c.job_b, 0)
    tfair = fs.fair_throughput
    rho_a = c.tput_a / tfair[c.job_a] if n else np.zeros(0)
    rho_b = np.where(pair, c.tput_b / tfair[jb], 0.0) if n else np.zeros(0)
    parts = None
    if n:
        eff, eff_pi, value, parts = _column_values(problem, c, tmax, w, need, rho_a, rho_b)
    else:
        eff, eff_pi, value = np.zeros(0), np.zeros(0), np.zeros(0)
    obj_null = float(-lam * (w * problem.shortfall_price * need).sum()) if n else 0.0
    for a in (tmax, eff, eff_pi, rho_a, rho_b, value):
        a.setflags(write=False)
    return RoundModel(problem, fs, c, tmax, w, need, eff, rho_a, rho_b, value, obj_null, eff_pi, parts)


@dataclass(frozen=True, slots=True)
class _ValueParts:
    """The priority-free terms of the columns' values (:func:`_column_values`) and the arrays they came from."""

    inputs: tuple[object, ...]  # (columns, tmax, weight, need, rho_a, rho_b, scale, shortfall price), lambda
    fairness_weight: float
    eff_a: np.ndarray
    eff_b: np.ndarray
    fair_a: np.ndarray
    fair_b: np.ndarray

    def came_from(self, model: RoundModel) -> bool:
        """``model`` has the very arrays (and fairness weight) these terms were computed from."""
        now = (model.columns, model.tmax, model.weight, model.need, model.rho_a, model.rho_b, model.problem.scale,
               model.problem.shortfall_price)
        return (all(a is b for a, b in zip(self.inputs, now, strict=True))
                and self.fairness_weight == model.problem.fairness_weight)


def _column_values(problem: RoundProblem, c: Columns, tmax: np.ndarray, w: np.ndarray, need: np.ndarray,
                   rho_a: np.ndarray, rho_b: np.ndarray, parts: _ValueParts | None = None,
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, _ValueParts]:
    """``(eff, eff_priority, value, parts)`` of the columns: the only coefficients that depend on the priorities.

    ``value_c = sum over the column's jobs of pi_j * e_j + lambda * w_j * f_j * min(rho_j, need_j)``, with
    ``e_j = scale_j * throughput / tmax_j`` (a request counts as given, though its column may be a rounded
    share). Read-only arrays of a column each. ``parts``: the terms without priorities from an earlier call
    on the same arrays (computed again when ``None``); returned for the next call.
    """
    pair = c.is_pair
    jb = np.where(pair, c.job_b, 0)
    pi = problem.priority
    if parts is None:
        s, lam, f = problem.scale, problem.fairness_weight, problem.shortfall_price
        wf = w * f
        eff_a = s[c.job_a] * c.tput_a / tmax[c.job_a]
        eff_b = np.where(pair, s[jb] * c.tput_b / tmax[jb], 0.0)
        fair_a = lam * wf[c.job_a] * np.minimum(rho_a, need[c.job_a])
        fair_b = lam * wf[jb] * np.minimum(rho_b, need[jb])
        parts = _ValueParts((c, tmax, w, need, rho_a, rho_b, s, f), lam, eff_a, eff_b, fair_a, fair_b)
    eff_a, eff_b = parts.eff_a, parts.eff_b
    pi_eff_a, pi_eff_b = pi[c.job_a] * eff_a, pi[jb] * eff_b
    eff_pi = pi_eff_a + np.where(pair, pi_eff_b, 0.0)
    value = pi_eff_a + parts.fair_a
    value = value + np.where(pair, pi_eff_b + parts.fair_b, 0.0)
    eff = eff_a + eff_b
    for a in (eff, eff_pi, value):
        a.setflags(write=False)
    return eff, eff_pi, value, parts
