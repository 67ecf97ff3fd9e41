"""``fast`` on a round split into random parts, for rounds whose single LP is too slow.

The idea is POP's (Narayanan et al., SOSP 2021): a large allocation problem over many interchangeable jobs and
GPUs is split into ``k`` random sub-problems, each with ``1/k`` of the jobs and ``1/k`` of the GPUs, solved
independently, and the answers are merged. Each sub-problem is ``k`` times smaller and the LP's time grows
faster than linearly with its size, so the parts together take less time than the whole, and they can run in
parallel.

Splitting (:func:`split`)
    The jobs are dealt into ``k`` parts of about equal size (``opts.seed`` draws the deal). A co-location
    candidate survives a split only if both of its jobs land in the same part, and most of a round's value
    can come from pair columns (dealing single jobs at random lost 12-16 % of it). So the GPUs are first
    priced by the capacity duals of the tightened LP of a sample of :data:`SAMPLE_JOBS` jobs; each candidate
    gets its gain over its two jobs alone at those prices; a maximum spanning forest of the candidates with a
    positive gain, weighted by it, is searched depth first, which lists the jobs of each tree in one run; the
    jobs of each gang size, in that order, are cut into blocks of about :data:`BLOCK_JOBS` jobs, and the
    blocks of each size are dealt to the parts at random, the same number to each part (so each part gets its
    share of every gang size, and of each tree only the pieces cut at block ends). Dealing matched pairs as
    units instead (a greedy matching by gain) kept 0.76 of the candidates the whole round's LP uses at
    4,096 jobs in 8 parts; the forest's blocks keep 0.93 (tests/methods/test_partition.py). The GPUs of each type are
    dealt as evenly as possible, the remainder GPUs of a type going to randomly chosen parts. A part keeps the
    placement columns whose jobs all fell into it and which fit its GPUs. Its column values are the full
    round's: fair shares, normalised weights and needs are *not* recomputed for the part, so the merged
    placement's objective is the sum of the parts' objectives. A job none of whose columns fits its part
    (a gang larger than the part's GPUs of every type it can use) sits that part out.
Solving
    Each part is solved by :func:`fairshare.methods.relax.round_relaxation` (tightened LP, rounding, local
    search and polish when the gaps call for them), through a ``concurrent.futures.Executor`` when one is
    given to :func:`solve` (``allocate(..., executor=pool)``), else one after another in this process. The
    parts are built in this process and collected in order, so the placement depends on the seed only, not on
    the executor. A part's LP, when interior point solves it, skips crossover whatever its size.
    An executor that fails (a pool whose worker was killed, a shut-down pool, a lost remote worker) does not
    fail the round: each part whose future raised anything but a fairshare error is solved again in this
    process, and the message says so. A fork-started process pool is safe: the HiGHS layer resets its thread
    pool in a forked child (:mod:`fairshare.solvers.highs`).
Merging
    The parts' placements are put together (each job is in one part, the parts' GPUs add up to the round's,
    so the union is feasible), then a fill pass on the whole round gives GPUs left idle in one part to jobs
    left out in another (co-location candidates split between parts are usable here too).
Bound
    For any ``u >= 0`` (one per job) and ``y >= 0`` (one per GPU type), the Lagrangian bound
    ``sum_j u_j + sum_g C_g y_g + sum_c max(0, v_c - u_a(c) - u_b(c) - size_c y_g(c))`` bounds every placement
    of the whole round. :func:`dual_bound` evaluates it at the parts' LP duals (each job's own dual; per type
    the largest of the parts' capacity duals, and their capacity-weighted mean: the smaller bound is kept).
    At the parts' duals it charges in full every candidate split between parts; :func:`tighten_bound` lowers
    it by coordinate descent on ``u`` and ``y``, from the better of the two capacity prices. The merged
    placement's ``mip_gap`` is certified against the smallest of these and
    :func:`~fairshare.methods.relax.value_bound`.

What the split costs: the co-location candidates whose two jobs fall into different parts are used only by
the fill pass, and each part balances its own jobs against its own GPUs. Split only when one LP is too slow,
or to spread a round over several machines; docs/results/huge_rounds.md has the measurements.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, depth_first_order, minimum_spanning_tree

from fairshare.allocation import Status
from fairshare.errors import FairshareError
from fairshare.fair_share import FairShare
from fairshare.formulation import Columns, RoundModel
from fairshare.methods.lp import lagrangian_bound, solve_relaxation
from fairshare.methods.options import SolveOptions
from fairshare.methods.relax import Rounded, round_relaxation, value_bound
from fairshare.methods.rounding import greedy_take
from fairshare.methods.solved import Solved, relative_gap
from fairshare.problem import RoundProblem

__all__ = ["BLOCK_JOBS", "BOUND_ITERATIONS", "BOUND_SMOOTHING", "REPAIR_ROUNDS", "SAMPLE_JOBS", "Merged", "Part",
           "dual_bound", "solve", "solve_parts", "split", "tighten_bound"]

REPAIR_ROUNDS = 1
"""Rounds of the boundary repair after a split round is merged (0: none; module documentation)."""

BOUND_ITERATIONS = 30
"""Steps of the descent of :func:`tighten_bound` after a split round is merged."""

BOUND_SMOOTHING = 0.01
"""Smoothing of :func:`tighten_bound`'s descent, relative to the mean value of the columns it looks at."""

SAMPLE_JOBS = 8192
"""Jobs in the sample whose LP prices the GPUs before a round is split."""

BLOCK_JOBS = 512
"""Jobs in one block of the deal (:func:`split`), about; fewer where a gang size has fewer than this per part."""

@dataclass(frozen=True, slots=True)
class Part:
    """One part of a split round (:func:`split`).

    Attributes
    ----------
    model : RoundModel
        The part as a round of its own: its jobs, its GPUs, its columns with the full round's values.
    jobs : array of int
        Row of each of the part's jobs in the full round.
    columns : array of int
        Index of each of the part's columns in the full round's columns.
    """

    model: RoundModel
    jobs: np.ndarray
    columns: np.ndarray


def split(model: RoundModel, parts: int, seed: int = 0, opts: SolveOptions | None = None) -> list[Part]:
    """Split ``model`` into ``parts`` random parts (see the module documentation).

    Parameters
    ----------
    model : RoundModel
    parts : int
        Number of parts (at least 1; parts that receive no job are left out).
    seed : int
        Seed of the random deal of jobs and GPUs.
    opts : SolveOptions, optional
        Options of the sample LP that prices the GPUs (default: the defaults).

    Returns
    -------
    list of Part
    """
    return list(_split_lazily(model, parts, seed, SolveOptions() if opts is None else opts))


def _split_lazily(model: RoundModel, parts: int, seed: int, opts: SolveOptions) -> Iterator[Part]:
    """:func:`split`'s parts, each built when asked for (the deal is made first)."""
    rng = np.random.default_rng(seed)
    part_of_job = _deal_jobs(model, parts, rng, _capacity_prices(model, rng, opts))
    return _parts_of_deal(model, part_of_job, _deal_capacity(model.problem.capacity, parts, rng))


def _deal_capacity(capacity: np.ndarray, parts: int, rng: np.random.Generator) -> np.ndarray:
    """GPUs of each type per part (rows): as even as possible, the remainder GPUs to randomly chosen parts."""
    cap = np.repeat((capacity // parts)[None, :], parts, axis=0)
    for g in range(len(capacity)):
        extra = int(capacity[g] % parts)
        if extra:
            cap[rng.choice(parts, size=extra, replace=False), g] += 1
    return cap


def _parts_of_deal(model: RoundModel, part_of_job: np.ndarray, cap: np.ndarray) -> Iterator[Part]:
    """The parts of a deal: part ``k`` holds the jobs ``part_of_job == k`` (-1: none) and ``cap[k]`` GPUs.

    A part keeps the columns whose jobs are all in it and that fit its GPUs; a job none of whose own columns
    fits sits the part out (with the columns it is in); parts without jobs are left out.
    """
    c, n = model.columns, model.problem.num_jobs
    col_part = part_of_job[c.job_a]
    pair = c.is_pair
    same = (col_part >= 0) & (~pair | (part_of_job[np.where(pair, c.job_b, 0)] == col_part))
    keep = same & (c.size <= cap[np.maximum(col_part, 0), c.gpu])
    alone = np.zeros(c.num, bool)
    alone[: c.num_alone] = True
    placeable = np.zeros(n, bool)
    placeable[c.job_a[keep & alone]] = True
    keep &= placeable[c.job_a] & (~pair | placeable[np.where(pair, c.job_b, 0)])
    local = np.empty(n, np.int64)
    cols_by_part = np.argsort(col_part[keep], kind="stable")
    kept = np.flatnonzero(keep)[cols_by_part]
    bounds = np.searchsorted(col_part[kept], np.arange(len(cap) + 1))
    for k in range(len(cap)):
        jobs = np.flatnonzero((part_of_job == k) & placeable)
        if len(jobs) == 0:
            continue
        local[jobs] = np.arange(len(jobs))
        cols = kept[bounds[k]: bounds[k + 1]]
        yield Part(_sub_model(model, jobs, cols, local, cap[k]), jobs, cols)


def _deal_jobs(model: RoundModel, parts: int, rng: np.random.Generator, price: np.ndarray) -> np.ndarray:
    """Part of each job: blocks of each gang size's jobs in a spanning forest's depth-first order, dealt evenly.

    The forest is a maximum spanning forest of the co-location candidates whose gain over their two jobs alone
    is positive at ``price`` per GPU of each type, weighted by that gain (:func:`_forest_order`). The
    jobs of each gang size (candidates join jobs of one size only), in that order, are cut into blocks of
    :data:`BLOCK_JOBS` jobs or so (a multiple of ``parts`` blocks per size, of equal length give or take one),
    and the blocks of each size are dealt to the parts in a random order, the same number to each part.
    """
    n = model.problem.num_jobs
    order = _forest_order(model, price)
    scale = model.problem.scale[order]
    part_of_job = np.empty(n, np.int64)
    for s in np.unique(scale):
        ids = order[scale == s]
        blocks = parts * max(1, round(len(ids) / (parts * BLOCK_JOBS)))  # the same number for every part
        block = np.arange(len(ids)) * blocks // len(ids)
        deal = rng.permutation(blocks) % parts
        part_of_job[ids] = deal[block]
    return part_of_job


def _forest_order(model: RoundModel, price: np.ndarray) -> np.ndarray:
    """Every job once, in the depth-first order of a maximum spanning forest of the candidates by gain.

    The gain of candidate ``(a, b)`` on type ``g`` is that of :func:`_matching`; candidates without a positive
    gain are left out. The trees are searched one after another.
    """
    c, n = model.columns, model.problem.num_jobs
    alone = np.flatnonzero(~c.is_pair)
    pairs = np.flatnonzero(c.is_pair)
    best = np.zeros(n)
    np.maximum.at(best, c.job_a[alone], model.value[alone] - c.size[alone] * price[c.gpu[alone]])
    gain = model.value[pairs] - c.size[pairs] * price[c.gpu[pairs]] - best[c.job_a[pairs]] - best[c.job_b[pairs]]
    keep = gain > 0
    a, b, gain = c.job_a[pairs][keep], c.job_b[pairs][keep], gain[keep]
    # one edge per pair of jobs (its best type), each pair stored once: the matrix would add up repeated entries
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    by_gain = np.argsort(-gain, kind="stable")
    _, first = np.unique((lo * n + hi)[by_gain], return_index=True)
    edge = by_gain[first]
    lo, hi, gain = lo[edge], hi[edge], gain[edge]
    # minimum spanning tree of weights that order the candidates by falling gain
    top = float(gain.max()) if len(gain) else 0.0
    tree = minimum_spanning_tree(sp.csr_matrix(((top - gain) + 1.0, (lo, hi)), shape=(n, n)))
    # The trees hang from a virtual root through virtual nodes of at most 64 trees each, and are searched from
    # that root: each tree's jobs come in one run. (Hung from the root directly, the search took time quadratic
    # in the root's degree; joined by a chain through their first jobs, those jobs came first, apart from their
    # trees.)
    _, label = connected_components(tree, directed=False)
    _, first = np.unique(label, return_index=True)
    groups = -(-len(first) // 64)
    root = n + groups
    rows = np.concatenate([first, n + np.arange(groups)])
    cols = np.concatenate([n + np.arange(len(first)) // 64, np.full(groups, root)])
    hang = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(root + 1, root + 1))
    joined = sp.block_diag([tree, sp.csr_matrix((groups + 1, groups + 1))], format="csr") + hang
    order = depth_first_order(joined + joined.T, root, directed=False, return_predecessors=False)
    return np.asarray(order[order < n], np.int64)


def _matching(model: RoundModel, price: np.ndarray) -> np.ndarray:
    """Partner of each job (-1: none) in a greedy matching of the candidates by gain at ``price`` per GPU.

    The gain of candidate ``(a, b)`` on type ``g`` is ``v_c - size_c * price_g`` less the best
    ``v - size * price`` of ``a`` and of ``b`` alone (candidates without a positive gain are not matched).
    """
    c, n = model.columns, model.problem.num_jobs
    pairs = np.flatnonzero(c.is_pair)
    if len(pairs) == 0:
        return np.full(n, -1, np.int64)
    alone = np.flatnonzero(~c.is_pair)
    best = np.zeros(n)
    np.maximum.at(best, c.job_a[alone], model.value[alone] - c.size[alone] * price[c.gpu[alone]])
    gain = model.value[pairs] - c.size[pairs] * price[c.gpu[pairs]] - best[c.job_a[pairs]] - best[c.job_b[pairs]]
    keep = gain > 0
    pairs, gain = pairs[keep], gain[keep]
    ja, jb = c.job_a.tolist(), c.job_b.tolist()
    mate = [-1] * n
    for k in pairs[np.argsort(-gain, kind="stable")].tolist():
        a, b = ja[k], jb[k]
        if mate[a] < 0 and mate[b] < 0:
            mate[a], mate[b] = b, a
    return np.array(mate, np.int64)


def _deal_units(mate: np.ndarray, parts: int, rng: np.random.Generator) -> np.ndarray:
    """Part of each job: the units (single jobs, matched pairs) in a random order, cut into ``parts`` runs.

    The runs hold about equal numbers of jobs.
    """
    n = len(mate)
    leader = np.flatnonzero((mate < 0) | (np.arange(n) < mate))  # one job per unit
    leader = leader[rng.permutation(len(leader))]
    size = np.where(mate[leader] >= 0, 2, 1)
    start = np.cumsum(size) - size  # jobs dealt before each unit
    unit_part = np.minimum(start * parts // max(n, 1), parts - 1)
    part_of_job = np.empty(n, np.int64)
    part_of_job[leader] = unit_part
    matched = mate[leader] >= 0
    part_of_job[mate[leader[matched]]] = unit_part[matched]
    return part_of_job


def _capacity_prices(model: RoundModel, rng: np.random.Generator, opts: SolveOptions) -> np.ndarray:
    """Estimated prices of one GPU of each type: the capacity duals of a sample's tightened LP.

    The sample is about :data:`SAMPLE_JOBS` jobs, drawn as units of a price-free matching (so that most
    sampled jobs keep a co-location partner, as in the whole round), with as large a share of the GPUs of
    each type. A sample of single jobs would hold almost none of the candidates of a large round and price
    GPUs as if nothing could share them.
    """
    p, c = model.problem, model.columns
    n = p.num_jobs
    zero = np.zeros(len(p.gpu_types))
    if n <= SAMPLE_JOBS:
        jobs = np.arange(n)
    else:
        mate = _matching(model, zero)
        jobs = np.flatnonzero(_deal_units(mate, max(1, n // SAMPLE_JOBS), rng) == 0)
    cap = np.round(p.capacity * (len(jobs) / max(n, 1))).astype(np.int64)
    inside = np.zeros(n, bool)
    inside[jobs] = True
    cols = inside[c.job_a] & (~c.is_pair | inside[np.maximum(c.job_b, 0)]) & (c.size <= cap[c.gpu])
    placeable = np.zeros(n, bool)
    placeable[c.job_a[cols & (np.arange(c.num) < c.num_alone)]] = True
    jobs = jobs[placeable[jobs]]
    cols &= placeable[c.job_a] & (~c.is_pair | placeable[np.maximum(c.job_b, 0)])
    if len(jobs) == 0:
        return zero
    local = np.empty(n, np.int64)
    local[jobs] = np.arange(len(jobs))
    sub = _sub_model(model, jobs, np.flatnonzero(cols), local, cap)
    out = solve_relaxation(sub, sub.tightened_lp(), replace(opts, partitions=1))
    if out.row_dual is None:  # pragma: no cover - HiGHS returns the duals of an optimal LP
        return zero
    return np.maximum(out.row_dual[len(jobs):], 0.0)


def _sub_model(model: RoundModel, jobs: np.ndarray, cols: np.ndarray, local: np.ndarray,
               capacity: np.ndarray) -> RoundModel:
    p, c, fs = model.problem, model.columns, model.fair
    is_alone = cols < c.num_alone
    tput = np.zeros((len(jobs), len(p.gpu_types)))
    a_cols = cols[is_alone]
    tput[local[c.job_a[a_cols]], c.gpu[a_cols]] = c.tput_a[a_cols]
    ids = p.job_ids
    sub = RoundProblem(gpu_types=p.gpu_types, capacity=capacity, job_ids=tuple([ids[j] for j in jobs.tolist()]),
                       scale=p.scale[jobs], throughput=tput, weight=p.weight[jobs], deficit=p.deficit[jobs],
                       epsilon=p.epsilon, fairness_weight=p.fairness_weight, priority=p.priority[jobs],
                       shortfall_price=p.shortfall_price[jobs])
    jb = c.job_b[cols]
    columns = Columns(gpu=c.gpu[cols], size=c.size[cols], job_a=local[c.job_a[cols]],
                      job_b=np.where(jb >= 0, local[np.maximum(jb, 0)], -1), tput_a=c.tput_a[cols],
                      tput_b=c.tput_b[cols], num_alone=int(is_alone.sum()))
    fair = FairShare(entitlement=fs.entitlement[jobs], theta=fs.theta, shares=fs.shares[jobs],
                     fair_throughput=fs.fair_throughput[jobs], usable_types=fs.usable_types)
    w, need = model.weight[jobs], model.need[jobs]
    return RoundModel(problem=sub, fair=fair, columns=columns, tmax=model.tmax[jobs], weight=w, need=need,
                      eff=model.eff[cols], rho_a=model.rho_a[cols], rho_b=model.rho_b[cols], value=model.value[cols],
                      obj_null=float(-p.fairness_weight * (w * p.shortfall_price[jobs] * need).sum()),
                      eff_priority=model.eff_priority[cols])


def _solve_part(model: RoundModel, opts: SolveOptions) -> Rounded:
    """One part the fast way (a top-level function, so that process pools can run it).

    An interior point solve of a part skips crossover whatever its size (its bound is certified all the same).
    """
    return round_relaxation(model, model.tightened_lp(), opts, crossover=False)


def dual_bound(model: RoundModel, job_dual: np.ndarray, cap_dual: np.ndarray) -> float:
    """The Lagrangian bound of the module documentation at ``u = job_dual``, ``y = cap_dual`` (clipped at 0).

    Valid for every placement of ``model``, whatever the multipliers; equal to the LP optimum at the LP's
    own duals (:func:`fairshare.methods.lp.lagrangian_bound`).

    Examples
    --------
    >>> from fairshare.formulation import build_model
    >>> m = build_model(RoundProblem(["V100"], [1], ["a", "b"], [1, 1], [[2.0], [1.0]]))
    >>> dual_bound(m, np.zeros(2), np.zeros(1)) == float(m.value.sum())
    True
    """
    return lagrangian_bound(model, job_dual, cap_dual)


@dataclass(frozen=True, slots=True)
class Merged:
    """The merged placement of a split round, with where its time went (:func:`solve_parts`).

    Attributes
    ----------
    x : array (M,)
        0/1 column values of the whole round's placement.
    bound : float
        Proven upper bound on ``model.value @ x`` for any placement: the smallest of :func:`dual_bound` at the
        parts' duals, :func:`tighten_bound` and :func:`~fairshare.methods.relax.value_bound`.
    parts : list of Part
    results : list of Rounded
        Each part's placement, bound and timings (LP, rounding, polish), in the order of ``parts``.
    split_seconds, parts_seconds, merge_seconds : float
        Wall time of the split (sample LP, deal, sub-rounds), of solving the parts (through the executor)
        and of merging, filling and bounding.
    """

    x: np.ndarray
    bound: float
    parts: list[Part]
    results: list[Rounded]
    split_seconds: float
    parts_seconds: float
    merge_seconds: float
    fallback: str = ""
    repair_seconds: float = 0.0
    repaired: int = 0


def solve_parts(model: RoundModel, opts: SolveOptions, *, executor: Executor | None = None) -> Merged:
    """Split ``model`` into ``opts.partitions`` parts, solve them, merge (see the module documentation).

    Parameters
    ----------
    model : RoundModel
    opts : SolveOptions
        ``partitions`` parts, dealt with ``seed``; the other options apply to every part.
    executor : concurrent.futures.Executor, optional
        Runs the parts (any executor with ``submit``: a process pool, a Dask client's executor). Default: none
        (the parts run one after another in this process).

    Returns
    -------
    Merged
    """
    t0 = time.perf_counter()
    part_opts = replace(opts, partitions=1)
    parts, results, fallback, t1 = _run_parts(executor, _split_lazily(model, opts.partitions, opts.seed, opts),
                                              part_opts)
    t2 = time.perf_counter()
    n = model.problem.num_jobs
    x = np.zeros(model.columns.num)
    job_dual = np.zeros(n)
    part_of_job = np.full(n, -1, np.int64)
    cap_duals, caps = [], []
    for k, (part, r) in enumerate(zip(parts, results)):
        x[part.columns[r.x > 0.5]] = 1.0
        part_of_job[part.jobs] = k
        if r.row_dual is not None:
            job_dual[part.jobs] = r.row_dual[: len(part.jobs)]
            cap_duals.append(np.maximum(r.row_dual[len(part.jobs):], 0.0))
            caps.append(part.model.problem.capacity)
    x = _fill(model, x)
    rng = np.random.default_rng(opts.seed)
    # Every candidate below is a valid bound (jobs that sat out their part have u_j = 0 and their columns
    # count in full); the smallest is kept.
    bound = value_bound(model)
    price = np.zeros(len(model.problem.capacity))
    if cap_duals and len(cap_duals) == len(parts):
        y = np.array(cap_duals)
        weight = np.array(caps, dtype=np.float64)
        mean = (y * weight).sum(axis=0) / np.maximum(weight.sum(axis=0), 1.0)
        at_max, at_mean = dual_bound(model, job_dual, y.max(axis=0)), dual_bound(model, job_dual, mean)
        price = mean
        bound = min(bound, at_max, at_mean)
    t3 = time.perf_counter()
    repaired = 0
    for _ in range(REPAIR_ROUNDS):
        x, fixed, part_of_job, note = _repair(model, x, part_of_job, job_dual, price, n // max(len(parts), 1),
                                              part_opts, executor, rng)
        repaired += fixed
        fallback = "; ".join(s for s in (fallback, note) if s)
    t4 = time.perf_counter()
    if cap_duals and len(cap_duals) == len(parts):
        bound = min(bound, tighten_bound(model, job_dual, price))
    bound = max(bound, float(model.value @ x))
    return Merged(x, bound, parts, results, t1 - t0, t2 - t1, time.perf_counter() - t2 - (t4 - t3), fallback,
                  t4 - t3, repaired)


def _repair(model: RoundModel, x: np.ndarray, part_of_job: np.ndarray, job_dual: np.ndarray, price: np.ndarray,
            part_jobs: int, opts: SolveOptions, executor: Executor | None,
            rng: np.random.Generator) -> tuple[np.ndarray, int, np.ndarray, str]:
    """One round of the boundary repair (module documentation): the placement, jobs repaired, the new deal, note.

    The boundary is every job of a candidate split between parts whose reduced value at ``job_dual`` and
    ``price`` is positive, with its placed partner. Its placed columns are taken out; their GPUs and the idle
    ones are the boundary's sub-round, dealt like a round into parts of about ``part_jobs`` jobs; a placed
    pair stays in one part, and each part gets the GPUs its own jobs held plus a share of the idle ones, so
    the old placement of its jobs fits it. Each part is solved (through ``executor``) and its placement
    replaces the old one of its jobs only when it is worth more, so the placement never loses value.
    """
    c, p = model.columns, model.problem
    n = p.num_jobs
    pair = c.is_pair
    jb = np.where(pair, c.job_b, 0)
    reduced = model.value - job_dual[c.job_a] - np.where(pair, job_dual[jb], 0.0) - c.size * price[c.gpu]
    hot = pair & (part_of_job[c.job_a] != part_of_job[jb]) & (reduced > 0)
    inside = np.zeros(n, bool)
    inside[c.job_a[hot]] = True
    inside[jb[hot]] = True
    on = x > 0.5
    partner = np.full(n, -1, np.int64)  # the job placed with each job (-1: none)
    placed_pair = np.flatnonzero(on & pair)
    partner[c.job_a[placed_pair]] = c.job_b[placed_pair]
    partner[c.job_b[placed_pair]] = c.job_a[placed_pair]
    with_partner = inside & (partner >= 0)
    inside[partner[with_partner]] = True
    num_types = len(p.capacity)
    idle = p.capacity - np.bincount(c.gpu[on], weights=c.size[on], minlength=num_types).astype(np.int64)
    alone = np.arange(c.num) < c.num_alone
    while True:  # a job that no own column of the boundary's GPUs fits leaves it, with its placed partner
        mine = on & inside[c.job_a]  # the boundary's placed columns (both jobs of a pair are inside)
        freed = np.bincount(c.gpu[mine], weights=c.size[mine], minlength=num_types).astype(np.int64)
        fits = np.zeros(n, bool)
        fits[c.job_a[alone & (c.size <= (freed + idle)[c.gpu])]] = True
        out = np.flatnonzero(inside & ~fits)
        if len(out) == 0:
            break
        inside[out] = False
        inside[partner[out][partner[out] >= 0]] = False
    jobs = np.flatnonzero(inside)
    if len(jobs) == 0:
        return x, 0, part_of_job, ""
    cols = np.flatnonzero(inside[c.job_a] & (~pair | inside[jb]))
    local = np.empty(n, np.int64)
    local[jobs] = np.arange(len(jobs))
    sub = _sub_model(model, jobs, cols, local, freed + idle)
    k = max(1, round(len(jobs) / max(part_jobs, 1)))
    deal = _deal_jobs(sub, k, rng, price) if k > 1 else np.zeros(len(jobs), np.int64)
    sc = sub.columns
    old = np.flatnonzero(on[cols])  # the boundary's placed columns, as sub-round columns
    old_pair = old[sc.is_pair[old]]
    deal[sc.job_b[old_pair]] = deal[sc.job_a[old_pair]]  # a placed pair stays together
    cap = _deal_capacity(idle, k, rng)
    for g in range(num_types):
        cap[:, g] += np.bincount(deal[sc.job_a[old]], weights=sc.size[old] * (sc.gpu[old] == g),
                                 minlength=k).astype(np.int64)
    parts, results, note, _ = _run_parts(executor, _parts_of_deal(sub, deal, cap), opts)
    old_value = np.bincount(deal[sc.job_a[old]], weights=sub.value[old], minlength=k)
    x = x.copy()
    fixed = 0
    for part, r in zip(parts, results):
        taken = part.columns[r.x > 0.5]
        k_part = int(deal[part.jobs[0]])
        if float(sub.value[taken].sum()) > old_value[k_part]:
            x[cols[old[deal[sc.job_a[old]] == k_part]]] = 0.0
            x[cols[taken]] = 1.0
            fixed += int((deal == k_part).sum())
    new_part = part_of_job.copy()
    new_part[jobs] = part_of_job.max() + 1 + deal
    return _fill(model, x), fixed, new_part, note.replace("parts solved", "repair parts solved")


def _run_parts(ex: Executor | None, parts: Iterable[Part],
               opts: SolveOptions) -> tuple[list[Part], list[Rounded], str, float]:
    """The parts, each one's result in order (through ``ex``), the fallback note and when the last was sent.

    Each part is sent to ``ex`` as soon as it is built, so that the executor's workers solve the first parts
    while this process builds the next. Parts whose future failed are solved here. The note is empty when the
    executor solved every part. A fairshare error raised by a part is the part's own and is raised; anything
    else (``BrokenProcessPool``, the ``RuntimeError`` of a shut-down pool, a lost Dask worker) is the
    executor's.
    """
    built: list[Part] = []
    if ex is None:
        built.extend(parts)
        sent = time.perf_counter()
        return built, [_solve_part(part.model, opts) for part in built], "", sent
    futures: list[Future[Rounded] | None] = []
    failure: Exception | None = None
    for part in parts:
        built.append(part)
        try:
            futures.append(ex.submit(_solve_part, part.model, opts))
        except FairshareError:
            raise
        except Exception as exc:  # noqa: BLE001 - any executor failure: the parts are solved here instead
            failure = failure or exc
            futures.append(None)
    sent = time.perf_counter()
    results: list[Rounded] = []
    here = 0
    for part, future in zip(built, futures):
        if future is not None:
            try:
                results.append(future.result())
                continue
            except FairshareError:
                raise
            except Exception as exc:  # noqa: BLE001
                failure = failure or exc
        here += 1
        results.append(_solve_part(part.model, opts))
    if failure is None:
        return built, results, "", sent
    reason = f"{type(failure).__name__}: {failure}"[:200]
    note = f"{here} of {len(built)} parts solved in this process after the executor failed ({reason})"
    return built, results, note, sent


def tighten_bound(model: RoundModel, job_dual: np.ndarray, cap_dual: np.ndarray, *,
                  iterations: int = BOUND_ITERATIONS) -> float:
    """:func:`dual_bound` lowered from ``u = job_dual``, ``y = cap_dual`` by descent on ``u`` (``y`` fixed).

    At ``y`` fixed, the bound is a convex function of ``u`` alone, ``sum_j u_j + sum_c max(0, r_c)`` with
    ``r_c = v_c - size_c y_g(c) - u_a(c) - u_b(c)`` (plus ``C @ y``). Its kinks stall coordinate descent, so it
    is smoothed: each ``max(0, r)`` becomes ``tau log(1 + exp(r / tau))`` with ``tau`` :data:`BOUND_SMOOTHING`
    times the mean value of the columns worth more than their GPUs at ``y``, and ``iterations`` steps of
    projected L-BFGS (``u >= 0``) descend on it. The bound returned is the exact :func:`dual_bound` at the
    point reached (or at the start, when that is lower): a valid bound whatever the descent did, since the
    bound holds at every ``u, y >= 0``. Then each ``y_g`` is set, once, to the price at which the columns of
    type ``g`` still worth more fill its GPUs, kept only if it lowers the bound.
    """
    u = np.maximum(job_dual, 0.0)
    y = np.maximum(cap_dual, 0.0)
    best = dual_bound(model, u, y)
    live = _Live(model, y)
    if len(live.w) == 0 or iterations <= 0:
        return best
    tau = BOUND_SMOOTHING * float(live.w.mean())
    u = _projected_lbfgs(lambda v: live.smoothed(v, tau), u, iterations)
    best = min(best, dual_bound(model, u, y))
    return min(best, dual_bound(model, u, _capacity_step(model, u)))


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    # not ``a @ b``: a multi-threaded BLAS dot product on a loaded machine costs a thousand times more
    return float(np.add.reduce(a * b))


def _projected_lbfgs(fg: Callable[[np.ndarray], tuple[float, np.ndarray]], x: np.ndarray, iterations: int,
                     memory: int = 7) -> np.ndarray:
    """The point reached from ``x`` by ``iterations`` steps of L-BFGS projected on ``x >= 0``, minimising ``fg``.

    ``fg(x)`` returns the function and its gradient. Each step takes the L-BFGS direction on the free
    variables (those above 0 or whose gradient points up), projects the step on ``x >= 0`` and halves it
    until the function falls enough (Armijo); it stops early when no step lowers the function.
    """
    f, g = fg(x)
    steps: list[tuple[np.ndarray, np.ndarray]] = []
    for _ in range(iterations):
        free = (x > 0) | (g < 0)
        q = np.where(free, g, 0.0)
        alphas = []
        for s, dg in reversed(steps):
            rho = 1.0 / _dot(dg, s)
            alpha = rho * _dot(s, q)
            q -= alpha * dg
            alphas.append((rho, alpha))
        if steps:
            s, dg = steps[-1]
            q *= _dot(s, dg) / _dot(dg, dg)
        else:
            q /= max(float(np.abs(q).max()), 1e-12)
        for (s, dg), (rho, alpha) in zip(steps, reversed(alphas)):
            q += (alpha - rho * _dot(dg, q)) * s
        d = -np.where(free, q, 0.0)
        if _dot(g, d) >= 0:  # not a descent direction: start again from the gradient
            d = -np.where(free, g, 0.0)
            steps = []
        t = 1.0
        for _ in range(30):
            x_new = np.maximum(x + t * d, 0.0)
            f_new, g_new = fg(x_new)
            if f_new <= f + 1e-4 * _dot(g, x_new - x):
                break
            t *= 0.5
        else:
            return x
        s, dg = x_new - x, g_new - g
        if _dot(s, dg) > 1e-12:
            steps = (steps + [(s, dg)])[-memory:]
        x, f, g = x_new, f_new, g_new
    return x


class _Live:
    """The columns of ``model`` worth more than their GPUs at price ``y`` (the others add nothing to the bound).

    For ``u >= 0`` a column with ``v_c - size_c y_g(c) <= 0`` has no positive reduced value, so the bound at
    ``y`` needs these columns only.
    """

    def __init__(self, model: RoundModel, y: np.ndarray) -> None:
        c = model.columns
        w = model.value - c.size * y[c.gpu]
        on = np.flatnonzero(w > 0)
        self.n = model.problem.num_jobs
        self.w = w[on]
        self.a = c.job_a[on]
        self.pair_at = np.flatnonzero(c.is_pair[on])
        self.b = c.job_b[on][self.pair_at]

    def smoothed(self, u: np.ndarray, tau: float) -> tuple[float, np.ndarray]:
        """``sum u + sum tau log(1 + exp(r / tau))`` over the live columns, and its gradient in ``u``."""
        r = self.w - u[self.a]
        r[self.pair_at] -= u[self.b]
        t = r / tau
        e = np.exp(-np.abs(t))
        value = float(u.sum() + tau * (np.maximum(t, 0.0) + np.log1p(e)).sum())
        share = np.where(t >= 0, 1.0 / (1.0 + e), e / (1.0 + e))  # d/dr of the smoothed max(0, r)
        grad = 1.0 - np.bincount(self.a, weights=share, minlength=self.n)
        grad -= np.bincount(self.b, weights=share[self.pair_at], minlength=self.n)
        return value, grad


def _capacity_step(model: RoundModel, u: np.ndarray) -> np.ndarray:
    """Per type, the price minimising the bound with ``u`` fixed: where the columns worth more fill the GPUs."""
    c, p = model.columns, model.problem
    reduced = model.value - u[c.job_a] - np.where(c.is_pair, u[np.maximum(c.job_b, 0)], 0.0)
    y = np.zeros(len(p.capacity))
    for g in range(len(p.capacity)):
        on = np.flatnonzero((c.gpu == g) & (reduced > 0))
        ratio = reduced[on] / c.size[on]
        order = np.argsort(-ratio, kind="stable")
        filled = np.cumsum(c.size[on][order])
        k = int(np.searchsorted(filled, p.capacity[g], side="right"))
        y[g] = ratio[order][k] if k < len(on) else 0.0
    return y


def solve(model: RoundModel, opts: SolveOptions, *, executor: Executor | None = None) -> Solved:
    """:func:`solve_parts` as a solve method: status ``heuristic``, ``mip_gap`` certified by :func:`dual_bound`.

    The certified gap of a split round is looser than an unsplit round's: its bound is not the whole round's
    LP optimum but a Lagrangian bound near it (module documentation).
    """
    m = solve_parts(model, opts, executor=executor)
    value = float(model.value @ m.x)
    polished = sum("polished" in r.message for r in m.results)
    message = f"split into {len(m.parts)} parts, {polished} polished; merged and filled"
    if m.fallback:
        message += f"; {m.fallback}"
    return Solved(x=m.x, status=Status.HEURISTIC, mip_gap=relative_gap(m.bound, value), bound=m.bound + model.obj_null,
                  message=message, relaxation=None, build_seconds=m.split_seconds,
                  solve_seconds=m.parts_seconds + m.merge_seconds)


def _fill(model: RoundModel, x: np.ndarray) -> np.ndarray:
    """Fill idle GPUs with free jobs, by value per GPU, looking only at columns that could still be taken."""
    c, p = model.columns, model.problem
    on = x > 0.5
    free = np.ones(p.num_jobs, bool)
    free[c.job_a[on]] = False
    free[c.job_b[on & c.is_pair]] = False
    idle = p.capacity - np.bincount(c.gpu[on], weights=c.size[on], minlength=len(p.capacity))
    open_ = free[c.job_a] & (~c.is_pair | free[np.maximum(c.job_b, 0)]) & (c.size <= idle[c.gpu]) & (model.value > 0)
    cand = np.flatnonzero(open_)
    if len(cand) == 0:
        return x
    order = cand[np.argsort(-(model.value[cand] / np.maximum(c.size[cand], 1)), kind="stable")]
    return greedy_take(model, order, x)
