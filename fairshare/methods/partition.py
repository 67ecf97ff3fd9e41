"""``fast`` on a round split into parts, for rounds whose single LP is too slow.

The idea is POP's (Narayanan et al., SOSP 2021): a large allocation problem over many interchangeable jobs and
GPUs is split into ``k`` sub-problems, each with ``1/k`` of the jobs and ``1/k`` of the GPUs, solved
independently, and the answers are merged. Each sub-problem is ``k`` times smaller and the LP's time grows
faster than linearly with its size, so the parts together take less time than the whole, and they can run in
parallel.

Splitting
    :func:`split` (:mod:`fairshare.methods.split_deal`): the jobs in blocks of a spanning forest of the
    co-location candidates, so that most candidates the LP would use stay inside one part; the GPUs of each type
    dealt evenly. A part's columns keep the full round's values, so a placement's value is the sum of its
    parts' values.
Solving
    Each part is solved by :func:`fairshare.methods.relax.round_relaxation` (tightened LP, rounding, local
    search and polish when the gaps call for them), through a ``concurrent.futures.Executor`` when one is
    given to :func:`solve` (``allocate(..., executor=pool)``), else one after another in this process. Each
    part is sent as soon as it is built, so that the workers start while the next parts are built; the results
    are collected in order, so the placement depends on the seed only, not on the executor. A part's LP, when
    interior point solves it, skips crossover whatever its size. An executor that fails (a pool whose worker
    was killed, a shut-down pool, a lost remote worker) does not fail the round: each part whose future raised
    anything but a fairshare error is solved again in this process, and the message says so. A fork-started
    process pool is safe: the HiGHS layer resets its thread pool in a forked child
    (:mod:`fairshare.solvers.highs`).
Merging
    The parts' placements are put together (each job is in one part, the parts' GPUs add up to the round's,
    so the union is feasible), then a fill pass on the whole round gives GPUs left idle in one part to jobs
    left out in another.
Repair
    The candidates split between parts are what a split round loses. After the merge, every candidate split
    between parts whose reduced value at the parts' duals (each job's own dual, the capacity-weighted mean of
    the parts' GPU prices) is positive marks its two jobs; those jobs and the jobs placed with them are the
    boundary. The boundary's placements are taken out, and the boundary, with the GPUs it held and the idle
    ones, is split and solved again the same way (through the same executor), its deal keeping the marked
    candidates together. A placed pair stays in one repair part, and each repair part gets the GPUs its own
    jobs held plus a share of the idle ones, so that its jobs' old placement fits it; a repair part's new
    placement replaces the old one only when it is worth more. So the repaired placement is feasible and worth
    at least the merged one. :data:`REPAIR_ROUNDS` rounds (one by default). Rounds with jobs asking for part of
    a GPU are not repaired (their shares do not add up to whole GPUs per part).
Bound
    The Lagrangian bound of :mod:`fairshare.methods.split_bound` at the parts' job duals and the capacity-
    weighted mean of their GPU prices, lowered by :func:`~fairshare.methods.split_bound.tighten_bound` (a
    descent on the job multipliers); the merged placement's ``mip_gap`` is certified against the smallest of
    these and :func:`~fairshare.methods.relax.value_bound`. The bound holds for every placement of the whole
    round, whatever the multipliers.

What the split costs: the co-location candidates whose two jobs fall into different parts are used only by the
fill pass and the repair, and each part balances its own jobs against its own GPUs. Split only when one LP is
too slow, or to spread a round over several machines; docs/results/huge_rounds.md has the measurements.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import Executor, Future
from dataclasses import dataclass, replace

import numpy as np

from fairshare.allocation import Status
from fairshare.errors import FairshareError
from fairshare.formulation import RoundModel
from fairshare.methods import split_deal
from fairshare.methods.options import SolveOptions
from fairshare.methods.relax import Rounded, round_relaxation, value_bound
from fairshare.methods.rounding import greedy_take
from fairshare.methods.solved import Solved, relative_gap
from fairshare.methods.split_bound import BOUND_ITERATIONS, BOUND_SMOOTHING, dual_bound, tighten_bound
from fairshare.methods.split_deal import BLOCK_JOBS, SAMPLE_JOBS, Part, split

__all__ = ["BLOCK_JOBS", "BOUND_ITERATIONS", "BOUND_SMOOTHING", "REPAIR_ROUNDS", "SAMPLE_JOBS", "Merged", "Part",
           "dual_bound", "solve", "solve_parts", "split", "tighten_bound"]

REPAIR_ROUNDS = 1
"""Rounds of the boundary repair after a split round is merged (0: none; module documentation)."""


def _solve_part(model: RoundModel, opts: SolveOptions) -> Rounded:
    """One part the fast way (a top-level function, so that process pools can run it).

    An interior point solve of a part skips crossover whatever its size (its bound is certified all the same).
    """
    return round_relaxation(model, model.tightened_lp(), opts, crossover=False)


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
        Wall time of the split (sample LP, deal, sub-rounds; the parts are sent to the executor as they are
        built, so this includes sending them), of waiting for the parts' results after the last was sent, and
        of merging, filling and bounding.
    fallback : str
        What fell back: an executor that failed, a repair left out because a part returned no duals (empty
        when nothing did).
    repair_seconds : float
        Wall time of the boundary repair (module documentation), its parts included.
    repaired : int
        Jobs of the repair parts whose new placement was kept.
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


def solve_parts(model: RoundModel, opts: SolveOptions, *, executor: Executor | None = None,
                repair_rounds: int | None = None) -> Merged:
    """Split ``model`` into ``opts.partitions`` parts, solve them, merge (see the module documentation).

    Parameters
    ----------
    model : RoundModel
    opts : SolveOptions
        ``partitions`` parts, dealt with ``seed``; the other options apply to every part.
    executor : concurrent.futures.Executor, optional
        Runs the parts (any executor with ``submit``: a process pool, a Dask client's executor). Default: none
        (the parts run one after another in this process).
    repair_rounds : int, optional
        Rounds of the boundary repair (default :data:`REPAIR_ROUNDS`; 0: none).

    Returns
    -------
    Merged
    """
    t0 = time.perf_counter()
    part_opts = replace(opts, partitions=1)
    lazily = split_deal.split_lazily(model, opts.partitions, opts.seed, opts)
    parts, results, fallback, t1 = _run_parts(executor, lazily, part_opts)
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
    with_duals = bool(cap_duals) and len(cap_duals) == len(parts)
    if with_duals:
        y = np.array(cap_duals)
        weight = np.array(caps, dtype=np.float64)
        mean = (y * weight).sum(axis=0) / np.maximum(weight.sum(axis=0), 1.0)
        at_max, at_mean = dual_bound(model, job_dual, y.max(axis=0)), dual_bound(model, job_dual, mean)
        price = mean
        bound = min(bound, at_max, at_mean)
    t3 = time.perf_counter()
    repaired = 0
    rounds = REPAIR_ROUNDS if repair_rounds is None else repair_rounds
    if rounds and not with_duals:  # the boundary is priced at the parts' duals: without them, no repair
        rounds = 0
        fallback = "; ".join(s for s in (fallback, "no repair: a part returned no duals") if s)
    for _ in range(rounds):
        x, fixed, part_of_job, note = _repair(model, x, part_of_job, job_dual, price, n // max(len(parts), 1),
                                              part_opts, executor, rng)
        repaired += fixed
        fallback = "; ".join(s for s in (fallback, note) if s)
    t4 = time.perf_counter()
    if with_duals:
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
    if p.has_fractional:
        return x, 0, part_of_job, ""
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
    sub = split_deal.sub_model(model, jobs, cols, local, freed + idle)
    k = max(1, round(len(jobs) / max(part_jobs, 1)))
    deal = split_deal.deal_jobs(sub, k, rng, price) if k > 1 else np.zeros(len(jobs), np.int64)
    sc = sub.columns
    old = np.flatnonzero(on[cols])  # the boundary's placed columns, as sub-round columns
    old_pair = old[sc.is_pair[old]]
    deal[sc.job_b[old_pair]] = deal[sc.job_a[old_pair]]  # a placed pair stays together
    cap = split_deal.deal_capacity(idle, k, rng)
    for g in range(num_types):
        cap[:, g] += np.bincount(deal[sc.job_a[old]], weights=sc.size[old] * (sc.gpu[old] == g),
                                 minlength=k).astype(np.int64)
    parts, results, note, _ = _run_parts(executor, split_deal.parts_of_deal(sub, deal, cap), opts)
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
