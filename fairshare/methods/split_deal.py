"""The deal of a split round: which jobs and GPUs go to which part (:mod:`fairshare.methods.partition`).

The jobs are dealt into ``k`` parts of about equal size. A co-location candidate survives a split only if both of
its jobs land in the same part, and much of a round's value can come from pair columns. So the GPUs are first
priced by the capacity duals of the tightened LP of a sample of :data:`SAMPLE_JOBS` jobs; each candidate gets its
gain over its two jobs alone at those prices; a maximum spanning forest of the candidates with a positive gain,
weighted by it, is searched depth first, which lists the jobs of each tree in one run; the jobs of each gang size,
in that order, are cut into blocks of about :data:`BLOCK_JOBS` jobs, and the blocks of each size are dealt to the
parts at random, the same number to each part (so each part gets its share of every gang size, and of each tree
only the pieces cut at block ends; docs/performance-notes.md compares this deal with others). The GPUs of each
type are dealt as evenly as possible, the remainder GPUs of a type going to randomly chosen parts. A part
keeps the placement columns whose jobs all fell into it and which fit its GPUs. Its column values are the full
round's: fair shares, normalised weights and needs are *not* recomputed for the part, so a placement's value
is the sum of its parts' values. A job none of whose columns fits its part (a gang larger than the part's GPUs
of every type it can use) sits that part out.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, depth_first_order, minimum_spanning_tree

from fairshare.fair_share import FairShare
from fairshare.formulation import Columns, RoundModel
from fairshare.methods.lp import solve_relaxation
from fairshare.methods.options import SolveOptions
from fairshare.problem import RoundProblem

__all__ = ["BLOCK_JOBS", "SAMPLE_JOBS", "Part", "deal_capacity", "deal_jobs", "parts_of_deal", "split", "split_lazily",
           "sub_model"]

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
    return list(split_lazily(model, parts, seed, SolveOptions() if opts is None else opts))


def split_lazily(model: RoundModel, parts: int, seed: int, opts: SolveOptions) -> Iterator[Part]:
    """:func:`split`'s parts, each built when asked for (the deal is made first)."""
    rng = np.random.default_rng(seed)
    part_of_job = deal_jobs(model, parts, rng, _capacity_prices(model, rng, opts))
    return parts_of_deal(model, part_of_job, deal_capacity(model.problem.capacity, parts, rng))


def deal_capacity(capacity: np.ndarray, parts: int, rng: np.random.Generator) -> np.ndarray:
    """GPUs of each type per part (rows): as even as possible, the remainder GPUs to randomly chosen parts."""
    cap = np.repeat((capacity // parts)[None, :], parts, axis=0)
    for g in range(len(capacity)):
        extra = int(capacity[g] % parts)
        if extra:
            cap[rng.choice(parts, size=extra, replace=False), g] += 1
    return cap


def parts_of_deal(model: RoundModel, part_of_job: np.ndarray, cap: np.ndarray) -> Iterator[Part]:
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
        yield Part(sub_model(model, jobs, cols, local, cap[k]), jobs, cols)


def deal_jobs(model: RoundModel, parts: int, rng: np.random.Generator, price: np.ndarray) -> np.ndarray:
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
    sub = sub_model(model, jobs, np.flatnonzero(cols), local, cap)
    out = solve_relaxation(sub, sub.tightened_lp(), replace(opts, partitions=1))
    if out.row_dual is None:  # pragma: no cover - HiGHS returns the duals of an optimal LP
        return zero
    return np.maximum(out.row_dual[len(jobs):], 0.0)


def sub_model(model: RoundModel, jobs: np.ndarray, cols: np.ndarray, local: np.ndarray,
              capacity: np.ndarray) -> RoundModel:
    """The sub-round of ``jobs`` (numbered ``local[jobs]``) with the columns ``cols`` and ``capacity`` GPUs.

    The columns keep the full round's values, fair shares and needs (nothing is recomputed for the sub-round),
    so a sub-round placement's value is its value in the full round.
    """
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
