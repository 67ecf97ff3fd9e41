"""From the tightened LP relaxation to a feasible integer placement (the ``fast`` mode, spec section 5a).

1. **Greedy rounding.** Columns are taken in order of LP fraction (descending), ties broken by value per
   GPU ``v_c / size_c`` (descending); a column is taken when all of its jobs are still unplaced and its type
   has room. Every column is considered, so the pass doubles as the **fill step**: when it ends, no job that
   is left out could run alone on any type with enough idle GPUs (its alone column was considered while the
   capacity was at least what is left, and every runnable alone column has positive value).
2. **Polish** (only when the certified gap ``(z_LP - z_round) / z_LP`` or the efficiency gap is above its
   threshold: :func:`fairshare.methods.relax.polish_thresholds`). Reduced-cost
   fixing against the rounded incumbent: a column at 0 in the LP with reduced cost ``d_c`` satisfying
   ``z_LP + d_c < z_round`` is 0 in every better placement, and a column at 1 with ``z_LP - d_c < z_round`` is 1
   in every better placement; these fixings are exact given the LP bound. HiGHS then solves the small
   remaining MILP (at most 200 branch-and-bound nodes, so the result does not depend on machine load;
   ``polish_seconds`` is a safety time limit). The better of its placement and the incumbent is kept.
   (A cut-off row "value > incumbent" instead was measured slower in the 1,000-job simulation.)

Guarantees: the result is always feasible (capacity, one placement per job, whole gangs, only runnable
placements), never worse than the greedy rounding, and comes with a certified gap to the LP bound.
Capacity is counted in column sizes, so a job that asks for part of one GPU takes its share class ``1/2^k``
(:attr:`~fairshare.problem.RoundProblem.capacity_scale`); these are binary fractions, so the running sums of
free capacity stay exact and every placement taken packs onto whole GPUs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from fairshare.formulation import LinearProgram, RoundModel
from fairshare.packing import FINEST_SHARE
from fairshare.solvers import SolverOutcome, Termination, solve_lp

__all__ = ["Polished", "dot", "fill", "greedy_round", "greedy_take", "improve", "is_feasible", "polish"]

# The polish MILP is small and starts from a good incumbent: HiGHS's sub-MIP heuristics (RINS, RENS) and
# root reduced-cost heuristic cost more time than they save there (measured: 105 ms -> 45 ms on a 138-column
# round with the same result).
# It is bounded by branch-and-bound nodes, not by time, so that ``fast`` (and a simulation) gives the same
# answer on a busy machine as on an idle one; ``polish_seconds`` is only a safety limit.
_POLISH_OPTIONS = {"mip_heuristic_run_rins": False, "mip_heuristic_run_rens": False,
                   "mip_heuristic_run_root_reduced_cost": False, "mip_max_nodes": 200}


@dataclass(frozen=True, slots=True)
class Polished:
    """Result of :func:`polish`.

    Attributes
    ----------
    x : array (M,)
        The better of the incumbent and the polished placement.
    bound : float
        Best proven upper bound on the tightened objective (the LP bound, or the MILP's when it proves more).
    proven : bool
        ``x`` is proven optimal within the polish gap.
    """

    x: np.ndarray
    bound: float
    proven: bool


def dot(a: np.ndarray, b: np.ndarray) -> float:
    """``a @ b`` of two 1-D arrays, summed by numpy itself rather than by BLAS.

    A multithreaded BLAS (OpenBLAS) hands a long dot product to its worker threads and waits for them; on a
    machine whose cores are busy that wait took 16 ms for the 11,586 columns of a 2,048-job round, against
    10 microseconds here, and a fast round computes several such products (measured on the project's 2-core
    machine under load; docs/performance.md, "Warm rounds").

    Examples
    --------
    >>> dot(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    11.0
    """
    return float(np.einsum("i,i->", a, b))


def greedy_round(model: RoundModel, x_lp: np.ndarray) -> np.ndarray:
    """Round LP column values to a feasible 0/1 placement (with the fill property), see the module doc.

    Parameters
    ----------
    model : RoundModel
    x_lp : array (M,)
        LP values of the placement columns (any values in [0, 1]; zeros give a pure greedy by value per GPU).

    Returns
    -------
    array of float (M,)
        0/1 column values.
    """
    c = model.columns
    density = model.value / np.maximum(c.size, FINEST_SHARE)  # per GPU; a share counts its class
    rounded = np.round(x_lp, 6)
    x = np.zeros(c.num)
    if c.num == 0:
        return x
    # The walk of greedy_take over the columns by (LP value rounded, value per GPU), both descending, ties by
    # index: the columns at 1 first, taken at once when they fit together, then only the columns that can
    # still be taken need an order (a subset keeps its order in a stable sort).
    ones = np.flatnonzero(rounded >= 1.0)
    head = ones[np.lexsort((-density[ones], -rounded[ones]))]
    free, cap = _room(model, x)
    cap_after = _take_together(model, head, x, free, cap) if len(head) else None
    if cap_after is not None:
        cap = cap_after
    viable = np.flatnonzero(_viable(model, None, free, cap))
    return _walk(model, _chunks(viable[np.lexsort((-density[viable], -rounded[viable]))]), x, free, cap)


def fill(model: RoundModel, x: np.ndarray) -> np.ndarray:
    """Add columns to a feasible 0/1 placement, by value per GPU, while jobs are free and GPUs idle.

    Afterwards no unplaced job fits alone on a type with enough idle GPUs (the fill property).
    """
    c = model.columns
    order = np.argsort(-(model.value / np.maximum(c.size, FINEST_SHARE)), kind="stable")
    return greedy_take(model, order, x)


def greedy_take(model: RoundModel, order: np.ndarray, x0: np.ndarray, *, together: int = 0) -> np.ndarray:
    """Take columns in ``order`` on top of the feasible 0/1 placement ``x0`` whenever they fit.

    A column is taken when its value is positive, all of its jobs are still unplaced and its type has enough
    idle GPUs. Returns a new array; ``x0`` is not modified.

    ``together`` is a hint: the first ``together`` columns of ``order`` probably fit all at once (the columns
    at 1 in an LP optimum). If they do (positive values, distinct free jobs, room on every type), they are
    taken in one vectorised step, which is what the walk would do; otherwise the hint is ignored.
    """
    c = model.columns
    x = np.array(x0, dtype=np.float64, copy=True)
    order = np.asarray(order, dtype=np.int64)
    if c.num == 0:
        return x
    free, cap = _room(model, x)
    if together > 0:
        cap_after = _take_together(model, order[:together], x, free, cap)
        if cap_after is not None:
            cap, order = cap_after, order[together:]
    return _walk(model, _chunks(order[_viable(model, order, free, cap)]), x, free, cap)


def _chunks(order: np.ndarray) -> Iterator[np.ndarray]:
    """``order`` in growing consecutive pieces (128, 512, 2,048, ... columns)."""
    at, size = 0, 128
    while at < len(order):
        yield order[at:at + size]
        at += size
        size *= 4


def _room(model: RoundModel, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Jobs not placed by the 0/1 columns ``x`` and idle GPUs per type."""
    c, p = model.columns, model.problem
    on = x > 0.5
    free = np.ones(p.num_jobs, dtype=bool)
    free[c.job_a[on]] = False
    free[c.job_b[on & c.is_pair]] = False
    used = np.bincount(c.gpu[on], weights=c.size[on], minlength=len(p.capacity))
    # integer GPU counts stay integers; with fractional requests the idle capacity is fractional
    cap = p.capacity - (used if c.size.dtype.kind == "f" else used.astype(np.int64))
    return free, cap


def _take_together(model: RoundModel, head: np.ndarray, x: np.ndarray, free: np.ndarray,
                   cap: np.ndarray) -> np.ndarray | None:
    """Take the columns ``head`` at once if they fit together.

    Returns the idle GPUs left (``x`` and ``free`` updated), or ``None`` (nothing changed) if they do not fit.
    """
    c = model.columns
    jobs = np.concatenate([c.job_a[head], c.job_b[head][c.is_pair[head]]])
    need = np.bincount(c.gpu[head], weights=c.size[head], minlength=len(cap))
    if not (np.all(model.value[head] > 0) and np.all(free[jobs]) and len(np.unique(jobs)) == len(jobs)
            and np.all(need <= cap)):
        return None
    x[head] = 1.0
    free[jobs] = False
    return cap - (need if c.size.dtype.kind == "f" else need.astype(np.int64))


def _viable(model: RoundModel, cols: np.ndarray | None, free: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Which of ``cols`` (``None``: every column) could be taken now: positive value, free jobs, room on their type."""
    c = model.columns
    free_or_alone = np.append(free, True)  # a column alone has job_b = -1, which reads the appended True
    if cols is None:
        return (model.value > 0) & free[c.job_a] & free_or_alone[c.job_b] & (c.size <= cap[c.gpu])
    return ((model.value[cols] > 0) & free[c.job_a[cols]] & free_or_alone[c.job_b[cols]]
            & (c.size[cols] <= cap[c.gpu[cols]]))


def _walk(model: RoundModel, chunks: Iterable[np.ndarray], x: np.ndarray, free: np.ndarray,
          cap: np.ndarray) -> np.ndarray:
    """Take, in the order of ``chunks`` joined, every column that still fits; ``x`` is updated and returned.

    Each chunk is first thinned to the columns that can still be taken at its start (:func:`_viable`; jobs
    only get placed and GPUs only fill up during the walk, so a column ruled out then never fits later): the
    walk itself, in Python, sees few columns that it would skip. Callers filter the whole order once before
    sorting it, which keeps the sort and the chunks small.
    """
    c = model.columns
    # the walk's state as arrays too, for thinning the chunks (room in the columns' size type: a share's room
    # stays fractional)
    free, cap = free.copy(), np.array(cap, dtype=np.result_type(cap, c.size))
    free_l, cap_l = free.tolist(), cap.tolist()
    # Once every type has less room than the smallest column, or every job is placed, nothing more fits:
    # stop there instead of walking the rest of the order.
    smallest = c.size.min()
    open_types = sum(1 for room in cap_l if room >= smallest)
    unplaced = int(free.sum())
    for part in chunks:
        if open_types == 0 or unplaced == 0:
            break
        part = part[_viable(model, part, free, cap)]
        for k, a, b, g, s in zip(part.tolist(), c.job_a[part].tolist(), c.job_b[part].tolist(),
                                 c.gpu[part].tolist(), c.size[part].tolist()):
            if cap_l[g] < s or not free_l[a]:
                continue
            if b >= 0:
                if not free_l[b]:
                    continue
                free_l[b] = free[b] = False
                unplaced -= 1
            free_l[a] = free[a] = False
            unplaced -= 1
            room = cap_l[g]
            cap_l[g] = cap[g] = room - s
            if room >= smallest > room - s:
                open_types -= 1
            x[k] = 1.0
            if open_types == 0 or unplaced == 0:
                break
    return x


def improve(model: RoundModel, x: np.ndarray, *, max_moves: int | None = None) -> np.ndarray:
    """Local search on a feasible 0/1 placement: insert a better column, evict what blocks it, refill.

    For each column not in the placement, in decreasing value: the columns sharing one of its jobs are
    evicted, then, if its type still lacks room, the chosen columns of that type with the lowest value per
    GPU, until it fits. The move is kept when the inserted value exceeds the evicted value; freed GPUs are
    refilled greedily (by value per GPU) among columns whose jobs are all free. Every kept move strictly
    increases the objective, so the search ends; ``max_moves`` (default: the number of columns) bounds it.
    The result is feasible, at least as good as ``x``, and keeps the fill property.
    """
    c, p = model.columns, model.problem
    m = c.num
    if m == 0:
        return x
    value = model.value.tolist()
    density = (model.value / c.size).tolist()
    ja, jb, gpu, size = c.job_a.tolist(), c.job_b.tolist(), c.gpu.tolist(), c.size.tolist()
    chosen = set(np.flatnonzero(x > 0.5).tolist())
    holder = [-1] * p.num_jobs  # column holding each job
    for k in chosen:
        holder[ja[k]] = k
        if jb[k] >= 0:
            holder[jb[k]] = k
    free_cap = p.capacity.astype(np.int64).tolist()
    for k in chosen:
        free_cap[gpu[k]] -= size[k]
    by_value = np.argsort(-model.value, kind="stable").tolist()
    by_density = np.argsort(-(model.value / c.size), kind="stable").tolist()
    moves = 0
    limit = m if max_moves is None else max_moves
    improved = True
    while improved and moves < limit:
        improved = False
        for k in by_value:
            if k in chosen or value[k] <= 0:
                continue
            g = gpu[k]
            evict = {holder[ja[k]]} if holder[ja[k]] >= 0 else set()
            if jb[k] >= 0 and holder[jb[k]] >= 0:
                evict.add(holder[jb[k]])
            room = free_cap[g] + sum(size[e] for e in evict if gpu[e] == g)
            lost = sum(value[e] for e in evict)
            if room < size[k]:
                same = sorted((e for e in chosen if gpu[e] == g and e not in evict), key=lambda e: density[e])
                for e in same:
                    if room >= size[k] or lost >= value[k]:
                        break
                    evict.add(e)
                    room += size[e]
                    lost += value[e]
            if room < size[k] or lost >= value[k] - 1e-9 * max(1.0, value[k]):
                continue
            for e in evict:  # apply the move
                chosen.discard(e)
                free_cap[gpu[e]] += size[e]
                holder[ja[e]] = -1
                if jb[e] >= 0:
                    holder[jb[e]] = -1
            chosen.add(k)
            free_cap[g] -= size[k]
            holder[ja[k]] = k
            if jb[k] >= 0:
                holder[jb[k]] = k
            for f in by_density:  # refill
                if f in chosen or value[f] <= 0 or free_cap[gpu[f]] < size[f] or holder[ja[f]] >= 0:
                    continue
                if jb[f] >= 0 and holder[jb[f]] >= 0:
                    continue
                chosen.add(f)
                free_cap[gpu[f]] -= size[f]
                holder[ja[f]] = f
                if jb[f] >= 0:
                    holder[jb[f]] = f
            moves += 1
            improved = True
            if moves >= limit:
                break
    out = np.zeros(m)
    out[list(chosen)] = 1.0
    return out


def polish(
    model: RoundModel,
    lp: LinearProgram,
    relaxed: SolverOutcome,
    incumbent: np.ndarray,
    *,
    seconds: float,
    gap: float,
    seed: int = 0,
    threads: int | None = None,
) -> Polished:
    """Improve ``incumbent`` by reduced-cost fixing and a short MILP (module doc, step 2)."""
    z_lp = relaxed.bound
    z_inc = dot(model.value, incumbent)
    slack = z_lp - z_inc
    tol = 1e-9 * max(1.0, abs(z_lp))
    if slack <= gap * max(abs(z_lp), 1e-12) or seconds <= 0 or relaxed.col_dual is None or relaxed.x is None:
        return Polished(incumbent, z_lp, slack <= tol)
    x_lp = relaxed.x
    d = relaxed.col_dual
    lower = lp.col_lower.copy()
    upper = lp.col_upper.copy()
    at0 = x_lp <= 1e-9
    at1 = x_lp >= 1 - 1e-9
    upper[at0 & (d < -(slack + tol))] = 0.0
    lower[at1 & (d > slack + tol)] = 1.0
    # No start solution: HiGHS 1.16 can return a start given by setSolution as optimal with a wrong
    # objective; the incumbent is compared below instead.
    milp = model.tightened_milp(lp)  # with fractional requests: integer GPU counts per type (same placements)
    if milp is not lp:
        lower = np.concatenate([lower, milp.col_lower[lp.cost.shape[0]:]])
        upper = np.concatenate([upper, milp.col_upper[lp.cost.shape[0]:]])
    out = solve_lp(milp, integer=True, time_limit=seconds, mip_rel_gap=gap, seed=seed, threads=threads,
                      col_lower=lower, col_upper=upper, allow_infeasible=True, extra_options=_POLISH_OPTIONS)
    if out.termination is Termination.INFEASIBLE:  # nothing better than the incumbent exists
        return Polished(incumbent, z_inc, True)
    best, best_val = incumbent, z_inc
    if out.has_solution and out.x is not None:
        xr = np.round(out.x[: model.columns.num])
        if is_feasible(model, xr):
            xr = fill(model, xr)  # the MILP may stop (time limit, gap) at a placement that leaves GPUs idle
            val = dot(model.value, xr)
            if val > best_val + tol:
                best, best_val = xr, val
    # Every placement better than the incumbent lies in the restricted problem, so its bound is global too.
    bound = min(z_lp, max(out.bound, z_inc)) if np.isfinite(out.bound) else z_lp
    proven = out.optimal or bound - best_val <= tol
    return Polished(best, bound, proven)


def is_feasible(model: RoundModel, x: np.ndarray) -> bool:
    """``x`` (0/1) places every job at most once and fills no type beyond its capacity."""
    c, p = model.columns, model.problem
    on = x > 0.5
    per_job = np.bincount(c.job_a[on], minlength=p.num_jobs)
    pair_on = on & c.is_pair
    per_job += np.bincount(c.job_b[pair_on], minlength=p.num_jobs)
    used = np.bincount(c.gpu[on], weights=c.size[on], minlength=len(p.capacity))
    return bool((per_job <= 1).all() and (used <= p.capacity + 1e-9).all())
