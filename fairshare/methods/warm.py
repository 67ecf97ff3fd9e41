"""Warm rounds: the tightened LP solved over priced columns, seeded from the round before.

Consecutive rounds of a scheduler differ by a few arrivals and departures, but every job's carried deficit
changes every round (``D_j <- max(0, D_j + (1 - epsilon) - rho_j)``): jobs that ran lose value, jobs that
waited gain it. The LP optimum therefore moves by far more than the arrivals suggest, and the previous
round's basis helps only when the values moved little (docs/performance-notes.md, "Warm rounds"). What pays
on every round is to solve the LP over few columns and price the rest, with the columns chosen at the previous
round's GPU prices; the basis is used when the values moved little:

Priced solve (:func:`solve_priced`)
    The tightened LP is first solved over a restricted set of columns: for each job its
    :data:`SEED_COLUMNS` best columns by ``v_c - size_c y_g`` (``y``: the previous round's GPU prices, or 0).
    The columns left out are then priced at the restricted optimum's duals,
    ``d_c = v_c - u_a(c) - u_b(c) - size_c y_g(c)``; those with ``d_c > 0`` are added (the
    :data:`PRICING_BATCH` or GPU-count largest per pass) and HiGHS goes on from its basis, until no column
    prices out. The duals are then feasible for every column, so the point is an
    optimum of the *whole* LP, with the cold solve's objective value; where the LP optimum is unique it is the
    same point. Reduced costs and row duals are reported for every column (computed for the ones never
    added), so the polish's reduced-cost fixing and the partition bound work unchanged. Rounds of fewer than
    :data:`PRICING_MIN_COLUMNS` columns are solved as cold rounds are, as one LP (pricing did not pay
    there), but with HiGHS's presolve off (``solve_relaxation(..., presolve=False)``), which finds nothing to
    remove in such rounds; in tiny rounds, where it can remove something, the point may then differ from the
    cold one where the LP has several optima.
Rows priced too (a long queue)
    With the previous round's duals (GPU prices ``y`` and job duals ``u``, mapped by type name and job id),
    the jobs that had ``u_j = 0`` and have no column that prices out at those duals start outside the
    restricted LP, rows and all, when they are most of the round (:data:`ROWS_MAX_SHARE`). A job's row is
    slack with dual 0 while none of its columns is in the LP, so its columns are priced at ``u_j = 0``; one
    that prices out enters with its jobs' rows. The optimum is still the whole LP's, and the LP grows with
    the jobs that compete for GPUs rather than with the queue (2,048 jobs on 256 GPUs: 940 job rows).
Warm start (:class:`WarmStart`)
    What a round leaves for the next: the GPU prices by type name, the job duals by job id, and the basis of
    the restricted LP keyed by identity (job rows by job id, capacity rows by type name, columns by their job
    ids and type) with the values of its columns. The next round's restricted LP starts from that basis when
    few of the columns the two rounds share changed value (:data:`BASIS_MAX_MOVED`; ``use_basis`` forces it
    on or off), given to HiGHS as an *alien* basis (HiGHS repairs a wrong count of basic variables or a
    singular basis; new columns start at 0, new job rows with a basic slack). Prices or a basis that fit
    nothing (other GPU types, every job replaced) cost a little time, never a different optimum.

What can differ from a cold round: where the LP has several optima, the point found (and then the greedy
rounding); and the LP duals, which are rarely unique, so that when the polish runs its reduced-cost fixing
and MILP can end at another placement. Both answers keep the certified-gap rules of
:mod:`fairshare.methods.relax`.

Both are used by ``fast`` when ``SolveOptions(warm_start=True)``: the :class:`WarmStart` passed as
``allocate(..., warm=state)`` is the one that ``fast`` reads and updates (the :class:`~fairshare.engine.Engine`
and the ``fairshare`` policy hold one each between rounds). Without one, ``fast`` still solves the priced LP,
from prices 0.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from fairshare.errors import InvalidInputError, SolverError
from fairshare.formulation import CscArrays, LinearProgram, RoundModel
from fairshare.methods.lp import solve_relaxation
from fairshare.methods.options import SolveOptions
from fairshare.solvers import BASIS_BASIC, BASIS_LOWER, IncrementalLP, SolverOutcome, Termination

__all__ = ["BASIS_MAX_MOVED", "MAX_PRICING_PASSES", "PRICING_BATCH", "PRICING_MIN_COLUMNS", "ROWS_MAX_SHARE",
           "SEED_COLUMNS", "WarmCache", "WarmStart", "reduced_costs", "solve_priced"]

SEED_COLUMNS = 2
"""Columns per job in the first restricted LP (its best by value less GPUs at the previous prices)."""

PRICING_MIN_COLUMNS = 2000
"""Rounds of fewer columns are solved as cold rounds are (the whole LP), keeping only the prices; HiGHS's
presolve is off, which gives the cold answers wherever presolve would remove nothing
(``benchmarks/bench_presolve.py``). Pricing did not pay below this size, and small rounds are where the polish
runs, whose result depends on the LP duals (module documentation)."""

BASIS_MAX_MOVED = 0.1
"""``use_basis=None`` starts from the previous basis when at most this share of the columns the two rounds
share changed value by more than 1 % (with carried deficits most do, and the basis costs iterations; with
arrivals and departures only few do, and it saves most of them)."""

ROWS_MAX_SHARE = 0.5
"""With the previous round's duals, a round's restricted LP holds only the rows of the jobs that had a positive
dual or have a column that prices out at those duals, if they are at most this share of the jobs.

In a round with many more jobs than GPUs (a long queue) most jobs get nothing; their rows are slack and
their duals 0 at the optimum, so they can stay out of the LP until a column of theirs prices out (their row
then enters with it). The LP then grows with the jobs that compete for the GPUs, not with the queue."""

MAX_PRICING_PASSES = 50
"""Pricing passes before every column left out is added at once (a safety net; 2 to 4 passes are usual)."""

PRICING_BATCH = 200
"""A pricing pass adds the columns that price out, at most ``max(PRICING_BATCH, GPUs of the round)`` of them:
those of the largest reduced costs. Restricted LPs seeded with a few jobs' rows price out most of a long
queue at their first duals, yet the optimum uses few of those columns (at most one per GPU, two with pairs);
adding them all made the next HiGHS run several times slower than the passes it saves (on a long replay)."""

_KEY_LIMIT = 2**62  # column keys (a * (N + 1) + b + 1) * G + g must fit an int64



@dataclass(eq=False)
class WarmStart:
    """What ``fast`` keeps from one round to seed the next (mutable; one per sequence of rounds).

    Parameters
    ----------
    use_basis : bool or None
        Also start the restricted LP from the previous round's basis (mapped by identity): ``True`` always,
        ``False`` never (prices only), ``None`` (default) when the round's column values moved little since
        the previous round (:data:`BASIS_MAX_MOVED`): with carried deficits the basis cost more iterations
        than it saved, with arrivals and departures only (or a plan made again within a round) it saved most
        of them.

    Attributes
    ----------
    rounds : int
        Rounds solved with this state.
    seeded : bool
        The last round started from the previous round's prices.
    used_basis : bool
        The last round started from the previous round's basis.
    passes, columns, iterations : int
        Of the last round: LP solves (1 + pricing passes that added columns), columns in the final restricted
        LP, simplex iterations.
    job_rows : int
        Of the last round: job rows in the final restricted LP (all the round's jobs unless the LP was
        restricted to the jobs that compete for GPUs, :data:`ROWS_MAX_SHARE`).

    Notes
    -----
    A ``WarmStart`` pickles as a fresh, empty state (a copy sent to another process starts cold), and is
    not meant to be shared by rounds solved at the same time.

    Examples
    --------
    >>> from fairshare import allocate
    >>> from fairshare.testing.random_rounds import random_round
    >>> state = WarmStart()
    >>> a = allocate(random_round(64, seed=0), mode="fast", warm_start=True, warm=state)
    >>> b = allocate(random_round(64, seed=0), mode="fast", warm_start=True, warm=state)
    >>> state.rounds, state.seeded
    (2, True)
    """

    use_basis: bool | None = None
    rounds: int = 0
    seeded: bool = False
    used_basis: bool = False
    passes: int = 0
    columns: int = 0
    job_rows: int = 0
    iterations: int = 0
    _ids: tuple[str, ...] | None = field(default=None, repr=False)  # the previous round's jobs
    _jobs: Mapping[str, int] | None = field(default=None, repr=False)  # their rows, if the round had built them
    _job_keys: tuple[object, np.ndarray] | None = field(default=None, repr=False)  # the round's job keys, if any
    _types: tuple[str, ...] = field(default=(), repr=False)
    _prices: np.ndarray | None = field(default=None, repr=False)
    _job_duals: np.ndarray | None = field(default=None, repr=False)  # of the previous round's job rows
    _col_keys: np.ndarray | None = field(default=None, repr=False)  # sorted keys of the restricted columns
    _col_status: np.ndarray | None = field(default=None, repr=False)
    _col_cost: np.ndarray | None = field(default=None, repr=False)
    _row_status: np.ndarray | None = field(default=None, repr=False)
    # The last restricted LP and the order of its columns by key: its basis is read from HiGHS only when a
    # round uses it (reading it costs about as much as pricing a round's columns, and most rounds with
    # carried deficits do not use it).
    _pending: tuple[IncrementalLP, np.ndarray, np.ndarray] | None = field(default=None, init=False, repr=False)
    # The last restricted LP's HiGHS object, reused by the next round's (a copy of the state starts without it).
    _highs: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not (self.use_basis is None or self.use_basis is True or self.use_basis is False):
            raise InvalidInputError("use_basis", self.use_basis, "must be True, False or None")

    def __reduce__(self) -> tuple[Any, ...]:
        return (WarmStart, (self.use_basis,))

    def reset(self) -> None:
        """Forget the previous round (the next one starts cold)."""
        self._ids, self._jobs, self._types, self._prices, self._job_duals = None, None, (), None, None
        self._job_keys = None
        self._col_keys = self._col_status = self._col_cost = self._row_status = None
        self._pending = self._highs = None

    def _copy(self) -> WarmStart:
        """A copy of the kept round (sharing its arrays and its last LP), without the reusable HiGHS object."""
        new = WarmStart(use_basis=self.use_basis)
        for f in fields(self):
            if f.name != "_highs":
                setattr(new, f.name, getattr(self, f.name))
        return new

    def _take_highs(self) -> Any:
        """The kept HiGHS object for this round's restricted LP (``None``: none kept); the last LP is dropped.

        Call after the last round's basis was read (or will not be): the object's model is replaced.
        """
        h, self._highs, self._pending = self._highs, None, None
        return h

    @property
    def empty(self) -> bool:
        """No round has been kept."""
        return self._ids is None

    # ------------------------------------------------------------------ mapping to the new round
    def _prices_for(self, model: RoundModel) -> np.ndarray:
        """The previous GPU prices on this round's types (0 for a type the previous round did not have)."""
        types = model.problem.gpu_types
        y = np.zeros(len(types))
        if self._prices is not None:
            old = {g: i for i, g in enumerate(self._types)}
            for k, g in enumerate(types):
                if g in old:
                    y[k] = max(0.0, float(self._prices[old[g]]))
        return y

    def _job_duals_for(self, old_job: np.ndarray) -> np.ndarray:
        """The previous round's job-row duals on this round's jobs (``old_job`` from :meth:`_old_rows`; 0: new)."""
        u = np.zeros(len(old_job))
        if self._job_duals is not None:
            known = old_job >= 0
            u[known] = self._job_duals[old_job[known]]
        return u

    def _old_rows(self, model: RoundModel) -> tuple[np.ndarray, np.ndarray]:
        """Row of each job and type in the previous round (-1: new)."""
        ids = model.problem.job_ids
        keys = model.problem.job_keys
        if keys is not None and self._job_keys is not None and keys[0] is self._job_keys[0]:
            old_job = _matched_keys(self._job_keys[1], keys[1])  # the same jobs as matching ids, without a dict
        else:
            if self._jobs is None:
                self._jobs = dict(zip(self._ids or (), range(len(self._ids or ()))))
            old_job = np.fromiter(map(self._jobs.get, ids, itertools.repeat(-1)), np.int64, len(ids))
        old = {g: i for i, g in enumerate(self._types)}
        old_type = np.array([old.get(g, -1) for g in model.problem.gpu_types], np.int64)
        return old_job, old_type

    def _column_match(self, model: RoundModel, old_job: np.ndarray,
                      old_type: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Where each column of ``model`` was in the previous restricted LP (by key).

        Returns the position among the kept keys, which columns were there (``hit``), and the previous values
        of those (aligned with ``hit``).
        """
        c = model.columns
        if self._col_keys is None or self._col_cost is None or not len(self._col_keys) or not c.num:
            return np.zeros(c.num, np.int64), np.zeros(c.num, bool), np.zeros(0)
        n_old, g_old = len(self._ids or ()), len(self._types)
        a = old_job[c.job_a]
        b = np.append(old_job, -1)[c.job_b]  # -1 for a column alone (job_b = -1 reads the appended -1)
        g = old_type[c.gpu]
        known = (a >= 0) & (g >= 0) & (~c.is_pair | (b >= 0))
        keys = _keys(a, b, g, n_old, g_old)
        pos = np.searchsorted(self._col_keys, keys)
        pos = np.minimum(pos, len(self._col_keys) - 1)
        hit = known & (self._col_keys[pos] == keys)
        return pos, hit, self._col_cost[pos[hit]]

    def _fetch_basis(self) -> bool:
        """Read the kept restricted LP's basis from HiGHS if not read yet; ``False`` if there is none."""
        if self._pending is not None:
            inc, order, rows = self._pending
            self._pending = None
            basis = inc.basis()
            if basis is None:
                self._col_keys = self._col_cost = None
            else:
                self._col_status = basis[0][order]
                row_status = np.full(len(self._ids or ()) + len(self._types), BASIS_BASIC, np.int8)
                row_status[rows] = basis[1]  # rows left out of the LP: slack, basic
                self._row_status = row_status
        return self._col_keys is not None and self._col_status is not None and self._row_status is not None

    def _row_status_for(self, model: RoundModel, old_job: np.ndarray, old_type: np.ndarray) -> np.ndarray:
        n = model.problem.num_jobs
        rows = np.full(n + len(old_type), BASIS_BASIC, np.int8)
        prev = self._row_status
        if prev is None:
            return rows
        n_old = len(self._ids or ())
        rows[:n] = np.where(old_job >= 0, prev[np.maximum(old_job, 0)], BASIS_BASIC)
        rows[n:] = np.where(old_type >= 0, prev[n_old + np.maximum(old_type, 0)], BASIS_BASIC)
        return rows

    def _keep(self, model: RoundModel, row_dual: np.ndarray, sel: np.ndarray, inc: IncrementalLP | None,
              rows: np.ndarray | None = None) -> None:
        """Remember this round: its duals (GPU prices, job rows), the restricted columns' keys, and ``inc``.

        ``row_dual``: the duals of every row (jobs, then types); ``rows``: the round's rows in the order of
        ``inc``'s rows (``None``: all, in order).
        """
        p, c = model.problem, model.columns
        n, g = p.num_jobs, len(p.gpu_types)
        self._ids = p.job_ids
        self._jobs = None  # the previous round's rows by id, built here only if needed
        self._job_keys = p.job_keys
        self._types = tuple(p.gpu_types)
        self._prices = np.maximum(np.asarray(row_dual[n:], np.float64), 0.0)
        self._job_duals = np.maximum(np.asarray(row_dual[:n], np.float64), 0.0)
        self._col_keys = self._col_status = self._col_cost = self._row_status = None
        self._pending = None
        if inc is None or self.use_basis is False or (n + 1) * (n + 1) * max(g, 1) >= _KEY_LIMIT:
            return
        a, gpu = c.job_a[sel], c.gpu[sel]
        b = np.where(c.is_pair[sel], c.job_b[sel], -1)
        keys = _keys(a, b, gpu, n, g)
        order = np.argsort(keys, kind="stable")
        self._col_keys = keys[order]
        self._col_cost = np.asarray(model.value, np.float64)[sel][order]
        self._pending = (inc, order, np.arange(n + g) if rows is None else np.asarray(rows, np.int64))


def _keys(a: np.ndarray, b: np.ndarray, g: np.ndarray, n: int, types: int) -> np.ndarray:
    """One int64 per column from its first job, second job (-1: none) and type, rows of an ``n``-job round."""
    return (a.astype(np.int64) * (n + 1) + (b.astype(np.int64) + 1)) * max(types, 1) + g.astype(np.int64)


class WarmCache:
    """A :class:`WarmStart` held by a frozen policy object between the rounds of one simulation.

    :meth:`state` hands the state out to one round at a time: a round whose simulated ``time`` is not later
    than the last one's starts a new run (the state is reset, so every run of a reused policy starts cold and
    gives the same answers), and a round solved while another holds the state (threads) gets none. It
    pickles as an empty cache (simulations in worker processes start cold) and compares equal to any other
    cache, so it changes neither a policy's equality nor its repr.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = WarmStart()
        self._time = -np.inf

    def __reduce__(self) -> tuple[Any, ...]:
        return (WarmCache, ())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WarmCache)

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "WarmCache()"

    @contextlib.contextmanager
    def state(self, time: float) -> Iterator[WarmStart | None]:
        """The state for a round at simulated ``time`` (``None`` while another round holds it)."""
        if not self._lock.acquire(blocking=False):
            yield None
            return
        try:
            if not time > self._time:
                self._state.reset()
            self._time = float(time)
            yield self._state
        finally:
            self._lock.release()


def _matched_keys(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Position of each of ``new`` in ``old`` (-1: absent); the keys of each array are distinct integers."""
    if not len(old):
        return np.full(len(new), -1, np.int64)
    order = None if bool((old[1:] > old[:-1]).all()) else np.argsort(old)
    s = old if order is None else old[order]
    i = np.minimum(np.searchsorted(s, new), len(s) - 1)
    at = i if order is None else order[i]
    return np.where(s[i] == new, at, -1).astype(np.int64)


def reduced_costs(model: RoundModel, cost: np.ndarray, row_dual: np.ndarray) -> np.ndarray:
    """``d_c = v_c - u_a(c) - u_b(c) - size_c y_g(c)`` for every column, at row duals ``(u, y)``.

    In HiGHS's sign convention for a maximisation: a column at 0 in an optimum has ``d_c <= 0``.
    """
    c, n = model.columns, model.problem.num_jobs
    # row_dual[:n] with a 0 appended: a column alone (job_b = -1) reads it, and subtracting 0 leaves its value
    # as it was, bit for bit (one gather over every column instead of a masked update of the pairs)
    return np.asarray(cost - row_dual[c.job_a] - c.size * row_dual[n:][c.gpu] - np.append(row_dual[:n], 0.0)[c.job_b],
                      dtype=np.float64)


def _few_moved(now: np.ndarray, before: np.ndarray) -> bool:
    """At most :data:`BASIS_MAX_MOVED` of the columns kept from the previous round changed value by over 1 %."""
    if not len(now):
        return False
    moved = np.abs(now - before) > 0.01 * np.maximum(np.abs(before), 1e-12)
    return float(moved.mean()) <= BASIS_MAX_MOVED


def _seed_columns(model: RoundModel, cost: np.ndarray, prices: np.ndarray, extra: np.ndarray) -> np.ndarray:
    """Sorted indices of the first restricted LP's columns: each job's best few at ``prices``, and ``extra``.

    A job's best :data:`SEED_COLUMNS` columns (alone or in a pair, by ``v_c - size_c y_g``; among equal
    scores the column listed first) are found group by group with ``maximum.reduceat`` over the columns
    grouped by job, which is several times faster than sorting them by score.
    """
    c = model.columns
    score = cost - c.size * prices[c.gpu]
    pairs = np.flatnonzero(c.is_pair)
    owner = np.concatenate([c.job_a, c.job_b[pairs]])
    col = np.concatenate([np.arange(c.num), pairs])
    keep = np.zeros(c.num, bool)
    if len(col):
        # within a job: columns in their order (a stable sort of 16-bit keys is a radix sort, 3-4 times faster)
        key = owner.astype(np.int16) if model.problem.num_jobs <= np.iinfo(np.int16).max else owner
        by_owner = np.argsort(key, kind="stable")
        owner, col = owner[by_owner], col[by_owner]
        s = score[col]
        step = owner[1:] != owner[:-1]
        starts = np.concatenate([[0], np.flatnonzero(step) + 1])
        group = np.concatenate([[0], np.cumsum(step)])
        for _ in range(SEED_COLUMNS):
            best = np.maximum.reduceat(s, starts)
            at_best = np.flatnonzero(s == best[group])
            if not len(at_best):
                break
            first = at_best[np.concatenate([[True], group[at_best[1:]] != group[at_best[:-1]]])]
            keep[col[first]] = True
            s[first] = -np.inf
    keep &= cost > 0  # a column of value <= 0 never prices out (duals are >= 0)
    keep |= extra
    return np.flatnonzero(keep)


def solve_priced(model: RoundModel, lp: LinearProgram, opts: SolveOptions, warm: WarmStart | None = None, *,
                 deadline: float | None = None) -> SolverOutcome:
    """The tightened LP ``lp`` (``model.tightened_lp()``) solved by pricing, seeded from ``warm``.

    See the module documentation. Returns what :func:`~fairshare.methods.lp.solve_relaxation` returns for
    the whole LP: ``x``, ``col_dual`` and ``row_dual`` over all columns and rows, and the optimum as
    ``objective`` and ``bound``. ``warm`` is read, then updated with this round. If HiGHS fails on the
    restricted LP, the whole LP is solved cold (:func:`~fairshare.methods.lp.solve_relaxation`) and ``warm``
    is reset; a deadline that passes first gives a ``TIME_LIMIT`` outcome without a point.
    """
    c = model.columns
    n, g, m = model.problem.num_jobs, len(model.problem.gpu_types), c.num
    cost = np.asarray(lp.cost, np.float64)
    seeded = warm is not None and not warm.empty
    prices = warm._prices_for(model) if warm is not None and seeded else np.zeros(g)
    col_start = row_start = None
    extra = np.zeros(m, bool)
    used_basis = False
    old_job, old_type = warm._old_rows(model) if warm is not None and seeded else (np.zeros(0, np.int64),) * 2
    if warm is not None and seeded and warm.use_basis is not False and warm._col_keys is not None:
        pos, hit, before = warm._column_match(model, old_job, old_type)
        used_basis = (warm.use_basis is True or _few_moved(cost[hit], before)) and warm._fetch_basis()
        if used_basis:
            assert warm._col_status is not None
            status = np.full(m, BASIS_LOWER, np.int8)
            status[hit] = warm._col_status[pos[hit]]
            extra = status != BASIS_LOWER  # basic or at 1 in the previous optimum
            row_start = warm._row_status_for(model, old_job, old_type)
            col_start = status
    if m < PRICING_MIN_COLUMNS:
        out = solve_relaxation(model, lp, opts, deadline=deadline, presolve=False)
        if warm is not None and out.row_dual is not None:
            warm._keep(model, out.row_dual, np.arange(0), None)
            warm.rounds += 1
            warm.seeded, warm.passes, warm.columns, warm.iterations = seeded, 1, m, 0
            warm.job_rows = n
            warm.used_basis = False
        return out
    sel = _seed_columns(model, cost, prices, extra)
    rows = _seed_rows(model, cost, prices, warm._job_duals_for(old_job)) if warm is not None and seeded else None
    if rows is not None:
        inside = np.zeros(n + g, bool)
        inside[rows] = True
        sel = sel[inside[c.job_a[sel]] & inside[np.where(c.is_pair[sel], c.job_b[sel], c.job_a[sel])]]
    # A round with a deadline gets a HiGHS object of its own: if it stops early, the last round's LP (and its
    # basis, read only when used) stays for the next round, as without reuse.
    reuse = None if warm is None or deadline is not None else warm._take_highs()
    try:
        out, sel, inc, rows = _price(model, lp, opts, cost, sel, col_start, row_start, deadline, rows, reuse)
    except SolverError:
        if warm is not None:
            warm.reset()
        return solve_relaxation(model, lp, opts, deadline=deadline)
    if out.x is None or out.row_dual is None:
        return out  # the deadline passed first
    x = np.zeros(m)
    x[sel] = out.x
    row_dual = out.row_dual
    col_dual = reduced_costs(model, cost, row_dual)
    if out.col_dual is not None:
        col_dual[sel] = out.col_dual
    if warm is not None:
        warm._keep(model, row_dual, sel, None if warm.use_basis is False else inc, rows)
        warm._highs = inc.highs
        warm.rounds += 1
        warm.seeded, warm.used_basis = seeded, used_basis and inc.started_from_basis
        warm.passes, warm.columns, warm.iterations = inc.passes, len(sel), inc.iterations
        warm.job_rows = n if rows is None else len(rows) - g
    return SolverOutcome(x, out.objective, out.bound, out.termination, out.message, out.seconds, mip_gap=0.0,
                         col_dual=col_dual, row_dual=row_dual)


def _seed_rows(model: RoundModel, cost: np.ndarray, prices: np.ndarray, u: np.ndarray) -> np.ndarray | None:
    """Rows of the first restricted LP (sorted: jobs, then every type), or ``None`` for all.

    The jobs with a positive dual ``u`` in the previous round and those with a column that does not price
    out negative at the previous duals ``(u, prices)``; ``None`` if they are more than :data:`ROWS_MAX_SHARE`
    of the jobs. The previous basis's columns do not count: most are basic at 0 and would bring back every
    row; those of jobs left out are left out of the start too (HiGHS repairs the basis).
    """
    c, n, g = model.columns, model.problem.num_jobs, len(model.problem.gpu_types)
    d = cost - u[c.job_a] - np.append(u, 0.0)[c.job_b] - c.size * prices[c.gpu]  # job_b = -1 reads the 0
    wanted = d > -1e-9 * np.maximum(1.0, np.abs(cost))
    jobs = u > 0
    jobs[c.job_a[wanted]] = True
    jobs[c.job_b[wanted & c.is_pair]] = True
    if jobs.sum() > ROWS_MAX_SHARE * n:
        return None
    return np.concatenate([np.flatnonzero(jobs), n + np.arange(g)])


def _sub_columns(a: Any, cols: np.ndarray, pos: np.ndarray | None = None,
                 n_rows: int | None = None) -> CscArrays:
    """``a[:, cols]`` of a CSC matrix, with row ``r`` renumbered ``pos[r]`` (``pos[r] < 0``: left out).

    With ``pos``, ``n_rows`` (the rows of the result) is required. The same matrix as scipy's
    ``a[:, cols][rows]`` with ``pos[rows] = arange(len(rows))`` and ``n_rows = len(rows)`` (entries of a column
    in their order in ``a``), without scipy's indexing machinery, which cost more than HiGHS's own run on a
    long queue's restricted LPs.
    """
    cols = np.asarray(cols, np.int64)
    start = a.indptr[cols].astype(np.int64)
    count = a.indptr[cols + 1] - start
    first = np.cumsum(count) - count
    at = np.repeat(start - first, count) + np.arange(int(count.sum()))
    indices, data = a.indices[at], a.data[at]
    if pos is None:
        n_rows = a.shape[0]
    else:
        if n_rows is None:
            raise ValueError("_sub_columns: n_rows is required with pos")
        indices = pos[indices]
        kept = indices >= 0
        if not kept.all():
            count = np.bincount(np.repeat(np.arange(len(cols)), count)[kept], minlength=len(cols))
            indices, data = indices[kept], data[kept]
    indptr = np.concatenate([[0], np.cumsum(count)])
    # int32 indices, as HiGHS takes them (a restricted LP never nears 2**31 non-zeros); the arrays as they are
    # (scipy's checks of a new matrix cost more than taking the columns)
    return CscArrays(indptr.astype(np.int32), indices.astype(np.int32), np.asarray(data, np.float64),
                     (int(n_rows), len(cols)))


def _price(model: RoundModel, lp: LinearProgram, opts: SolveOptions, cost: np.ndarray, sel: np.ndarray,
           col_start: np.ndarray | None, row_start: np.ndarray | None, deadline: float | None,
           rows: np.ndarray | None = None, reuse: Any = None,
           ) -> tuple[SolverOutcome, np.ndarray, IncrementalLP, np.ndarray | None]:
    """Solve the restricted LP over ``sel`` and add columns that price out until none does.

    ``rows``: the round's rows in the restricted LP (``None``: all). A column that prices out brings the rows
    of its jobs that are not in the LP yet. ``reuse``: a HiGHS object to solve in (see
    :class:`~fairshare.solvers.IncrementalLP`). Returns the outcome with ``row_dual`` over *all* rows (0 for the
    rows left out), the final columns and rows, and the LP kept in HiGHS.
    """
    a = lp.matrix
    c, n_rows = model.columns, a.shape[0]
    pos = None
    if rows is not None:
        pos = np.full(n_rows, -1, np.int64)
        pos[rows] = np.arange(len(rows))
    sub = _sub_columns(a, sel, pos, None if rows is None else len(rows))
    restricted = LinearProgram(cost[sel], sub, lp.row_lower if rows is None else lp.row_lower[rows],
                               lp.row_upper if rows is None else lp.row_upper[rows], lp.col_lower[sel],
                               lp.col_upper[sel], len(sel))
    start_rows = None if row_start is None else (row_start if rows is None else row_start[rows])
    inc = IncrementalLP(restricted, threads=opts.threads, seed=opts.seed, verbose=opts.verbose,
                        col_status=None if col_start is None else col_start[sel], row_status=start_rows,
                        reuse=reuse)
    tol = 1e-7 * np.maximum(1.0, np.abs(cost))
    batch = max(PRICING_BATCH, model.problem.total_gpus)
    total_seconds = 0.0
    while True:
        out = inc.run(deadline)
        total_seconds += out.seconds
        if out.termination is Termination.TIME_LIMIT and deadline is not None:
            return out, sel, inc, rows
        if not out.optimal or out.x is None or out.row_dual is None:
            raise SolverError(f"HiGHS did not solve the restricted LP ({out.message!r})")
        row_dual = out.row_dual
        if rows is not None:
            row_dual = np.zeros(n_rows)
            row_dual[rows] = out.row_dual
        d = reduced_costs(model, cost, row_dual)
        d[sel] = -np.inf
        add = np.flatnonzero(d > tol)
        if not len(add):
            break
        if inc.passes >= MAX_PRICING_PASSES:
            add = np.setdiff1d(np.arange(len(cost)), sel)
        elif len(add) > batch:
            add = np.sort(add[np.argpartition(-d[add], batch)[:batch]])
        if rows is not None and pos is not None:
            jobs = np.unique(np.concatenate([c.job_a[add], c.job_b[add][c.is_pair[add]]]))
            new = jobs[pos[jobs] < 0]
            if len(new):
                inc.add_rows(lp.row_upper[new])
                pos[new] = len(rows) + np.arange(len(new))
                rows = np.concatenate([rows, new])
            inc.add_columns(cost[add], _sub_columns(a, add, pos, len(rows)))
        else:
            inc.add_columns(cost[add], _sub_columns(a, add))
        sel = np.concatenate([sel, add])
    return (SolverOutcome(out.x, out.objective, out.bound, out.termination, out.message, total_seconds,
                          mip_gap=0.0, col_dual=out.col_dual, row_dual=row_dual), sel, inc, rows)
