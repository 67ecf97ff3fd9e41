"""Co-location candidates: which pairs of jobs may share GPUs of which type, optionally capped per job.

**Rule** (simulator spec). Jobs ``a < b`` with throughput data are a candidate on GPU type ``g`` when they have
the same scale, both can run alone on ``g`` (``T[a] > 0``, ``T[b] > 0``) and the pair data is non-zero for
both (``T[a|b] > 0``, ``T[b|a] > 0``).

**Cap** ``k`` (a dense b-matching). Every job may appear in at most ``k`` candidates. Candidates are taken
greedily in decreasing order of the combined normalised throughput

    score(a, b, g) = T[a|b] / T[a] + T[b|a] / T[b]        (alone throughputs on the same type g)

while both jobs have room (ties: job type, then GPU type order), so the result is maximal: a candidate left
out has a job that already holds ``k`` candidates.

**Job types.** Jobs of the same (model, scale) are interchangeable, so the greedy runs on job *types* ``t``
with ``n_t`` jobs each (``T`` types, arrays of shape ``(G, T, T)``), and each type's candidate endpoints are
dealt round-robin over its jobs in index order: two jobs of one type differ by at most one candidate. The
result is deterministic, and the same for any job order up to relabelling identical jobs. Cost: numpy over
jobs plus a Python loop over type-level entries (a few ms for 2,000 jobs); :func:`_capped_pairs` gives the
construction that turns type-level counts into distinct job pairs.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

__all__ = ["Candidates", "candidates"]

Candidates = tuple[np.ndarray, np.ndarray, np.ndarray]
"""``(pair_jobs (P, 2) int64, pair_gpu (P,) int64, pair_throughput (P, 2) float64)``, rows sorted by
(a, b, gpu)."""


def candidates(alone: np.ndarray, pair: np.ndarray, m: np.ndarray, s: np.ndarray, g: np.ndarray,
               max_per_job: int | None = None, *, memo: dict[str, Any] | None = None) -> Candidates:
    """Co-location candidates of jobs given as indices into a catalog's arrays.

    Parameters
    ----------
    alone : array of float, shape (M, S, G0)
        Alone throughputs (:attr:`Catalog.alone <fairshare.sim.catalog.Catalog.alone>`).
    pair : array of float, shape (S, G0, M, M, 2)
        Co-located throughputs ``(T[a|b], T[b|a])`` (:attr:`Catalog.pair <fairshare.sim.catalog.Catalog.pair>`).
    m, s : arrays of int, shape (N,)
        Model and scale index of each job; ``s = -1``: no data at that scale (the job gets no candidate).
    g : array of int, shape (G,)
        GPU type indices of the cluster; the returned ``pair_gpu`` indexes ``g``.
    max_per_job : int, optional
        Cap ``k`` on candidates per job (``None``: every candidate, O(N^2)). Not validated here.
    memo : dict, optional
        Keeps the type-level arrays of the last call's set of job types and ``g``, reused while they stay the
        same (a simulation calls this every time its active jobs change, mostly with the same types). Only for
        calls with the same ``alone`` and ``pair``: a catalog keeps one per catalog.

    Returns
    -------
    pair_jobs, pair_gpu, pair_throughput : arrays
        See :data:`Candidates`; ``pair_jobs[:, 0] < pair_jobs[:, 1]``.

    Examples
    --------
    One GPU type, two models that can share it, three jobs of model 0 and one of model 1:

    >>> alone = np.array([[[2.0]], [[4.0]]])                        # (M=2, S=1, G=1)
    >>> pair = np.zeros((1, 1, 2, 2, 2))
    >>> pair[0, 0, 0, 1], pair[0, 0, 1, 0] = (1.5, 3.0), (3.0, 1.5)
    >>> m, s, g = np.array([0, 1, 0, 0]), np.zeros(4, np.int64), np.array([0])
    >>> candidates(alone, pair, m, s, g)[0].tolist()
    [[0, 1], [1, 2], [1, 3]]
    >>> jobs, gpu, tput = candidates(alone, pair, m, s, g, max_per_job=1)
    >>> jobs.tolist(), tput.tolist()
    ([[0, 1]], [[1.5, 3.0]])
    """
    n_models = alone.shape[0]
    jobs = np.flatnonzero(s >= 0)
    key = s[jobs] * n_models + m[jobs]
    types, tjob = np.unique(key, return_inverse=True)
    memo_key = types.tobytes() + b"|" + np.asarray(g, dtype=np.int64).tobytes()
    last = None if memo is None else memo.get("last")
    if last is not None and last[0] == memo_key:
        level: _TypeLevel = last[1]
    else:
        level = _type_level(alone, pair, types, g, n_models)
        if memo is not None:
            memo["last"] = (memo_key, level)  # one assignment: threads sharing a catalog see a matching pair
    if max_per_job is None:
        return _all_pairs(jobs, tjob, level.valid, level.ptp)
    return _capped_pairs(jobs, tjob, level, int(max_per_job))


class _TypeLevel(NamedTuple):
    """What the candidates of a set of job types depend on, whatever the number of jobs of each type."""

    valid: np.ndarray   # (G, T, T) bool: the pair (t, u) may share type g
    ptp: np.ndarray     # (G, T, T, 2) co-located throughputs
    entries: tuple[np.ndarray, np.ndarray, np.ndarray]  # (g, t, u) of valid t <= u, best score first
    lists: tuple[list[int], list[int], list[int]]        # the same entries as Python lists
    of_type: tuple[np.ndarray, np.ndarray]   # (start (T + 1,), entry positions): the entries with type t
    self_of: tuple[np.ndarray, np.ndarray]   # the same for the self entries (t, t) of each type


def _type_level(alone: np.ndarray, pair: np.ndarray, types: np.ndarray, g: np.ndarray,
                n_models: int) -> _TypeLevel:
    """Validity, throughputs and the greedy's order of the type-level entries of job types ``types``."""
    T = len(types)
    tm, ts = types % n_models, types // n_models
    iso = alone[tm[None, :], ts[None, :], g[:, None]]                                   # (G, T)
    ptp = pair[ts[None, :, None], g[:, None, None], tm[None, :, None], tm[None, None, :]]  # (G, T, T, 2)
    valid = ((ts[:, None] == ts[None, :])[None] & (ptp[..., 0] > 0) & (ptp[..., 1] > 0)
             & (iso[:, :, None] > 0) & (iso[:, None, :] > 0))
    with np.errstate(divide="ignore", invalid="ignore"):
        score = ptp[..., 0] / iso[:, :, None] + ptp[..., 1] / iso[:, None, :]
    gg, tt, uu = np.nonzero(valid & np.triu(np.ones((T, T), bool))[None])
    rank = np.lexsort((gg, uu, tt, -score[gg, tt, uu]))
    gg, tt, uu = gg[rank], tt[rank], uu[rank]
    at = np.arange(len(gg))
    cross = tt != uu
    return _TypeLevel(valid, ptp, (gg, tt, uu), (gg.tolist(), tt.tolist(), uu.tolist()),
                      _grouped(np.concatenate([tt, uu[cross]]), np.concatenate([at, at[cross]]), T),
                      _grouped(tt[~cross], at[~cross], T))


def _grouped(key: np.ndarray, value: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``value`` grouped by ``key`` in ``0..size-1``: ``(start, values)``.

    Group ``k`` is ``values[start[k]:start[k + 1]]``, in the order of ``value`` within a group.
    """
    order = np.argsort(key, kind="stable")
    return np.concatenate([[0], np.cumsum(np.bincount(key, minlength=size))]), value[order]


def _all_pairs(jobs: np.ndarray, tjob: np.ndarray, valid: np.ndarray, ptp: np.ndarray) -> Candidates:
    """Every valid (a < b, gpu) candidate, sorted by (a, b, gpu)."""
    keep = np.asarray(valid.any(axis=(0, 2)))[tjob]
    jobs, tjob = jobs[keep], tjob[keep]
    n = len(jobs)
    vt = np.moveaxis(valid, 0, -1)                                  # (T, T, G)
    mask = vt[tjob[:, None], tjob[None, :]]                         # (n, n, G)
    mask &= np.triu(np.ones((n, n), bool), 1)[:, :, None]
    i, j, k = np.nonzero(mask)
    tput = ptp[k, tjob[i], tjob[j]]
    return (np.stack([jobs[i], jobs[j]], axis=1).astype(np.int64).reshape(-1, 2), k.astype(np.int64),
            np.ascontiguousarray(tput, dtype=np.float64).reshape(-1, 2))


def _capped_pairs(jobs: np.ndarray, tjob: np.ndarray, level: _TypeLevel, cap: int) -> Candidates:
    """Greedy type-level b-matching (see the module docstring), expanded round-robin onto jobs.

    State per job type ``t`` (``n`` jobs): ``used`` candidate endpoints handed out so far, always dealt
    round-robin over the type's jobs (rank order), so the job of rank ``r`` holds ``used // n + (r < used % n)``
    and the next endpoint goes to rank ``used % n``; the cap holds while ``used <= cap * n``.

    * A cross-type entry ``(t, u, g)`` adds ``E = min(room_t, room_u, n_t n_u)`` candidates. Its endpoints on
      ``t`` are the next ``E`` of t's round-robin, grouped by job; those on ``u`` are the next ``E`` of u's
      round-robin in order. A job of ``t`` gets at most ``ceil(E / n_t) <= n_u`` consecutive ``u`` endpoints,
      which are distinct jobs, so no pair repeats.
    * A self entry ``(t, t, g)`` adds ``E = min(room_t // 2, n (n - 1) / 2)`` candidates: ``E // n`` full
      circulant classes (all pairs at ring distance ``d``: +2 for every job) and one partial layer of
      ``L = E % n`` pairs ``(x, x + L)`` for ``x`` in the next ``L`` ranks of the round-robin, which deals the
      next ``2 L`` endpoints (if every distance below ``n / 2`` is taken by full classes, one class is
      replaced by the ``n / 2`` diameters, +1 for every job, and the partial layer gets ``L + n / 2``
      pairs). Distances are distinct, so no pair repeats; the result is maximal (a candidate left out has a
      job at the cap).
    """
    ptp = level.ptp
    T = ptp.shape[1]
    n = np.bincount(tjob, minlength=T)
    order = jobs[np.argsort(tjob.astype(np.int64) * (int(jobs.max()) + 1) + jobs)] if len(jobs) else jobs  # by type
    start = np.concatenate([[0], np.cumsum(n)[:-1]])
    # The greedy over the entries in score order, jumping from one entry that adds candidates to the next:
    # an entry adds some exactly when both its types have room (a self entry: room for two endpoints and two
    # jobs), so an entry is switched off when one of its types runs out of room (a few dozen of a thousand
    # entries add candidates).
    _, tt, uu = level.entries
    gl, tl, ul = level.lists
    room = (cap * n).tolist()
    nl = n.tolist()
    cross_t = tt != uu
    alive = np.where(cross_t, (cap * n[tt] > 0) & (cap * n[uu] > 0), (n[tt] > 1) & (cap * n[tt] >= 2))
    (a_start, a_entries), (s_start, s_entries) = level.of_type, level.self_of
    cross: list[tuple[int, int, int, int, int, int]] = []           # (g, t, u, E, used_t, used_u)
    selfs: list[tuple[int, int, int, int]] = []                     # (g, t, E, used_t)
    used_l = [0] * T
    at, size = 0, len(gl)
    while at < size:
        at += int(np.argmax(alive[at:]))
        if not alive[at]:
            break
        k, t, u = gl[at], tl[at], ul[at]
        at += 1
        if t == u:
            nt = nl[t]
            e = min(room[t] // 2, nt * (nt - 1) // 2)
            selfs.append((k, t, e, used_l[t]))
            used_l[t] += 2 * e
            room[t] -= 2 * e
            touched: tuple[int, ...] = (t,)
        else:
            e = min(room[t], room[u], nl[t] * nl[u])
            cross.append((k, t, u, e, used_l[t], used_l[u]))
            used_l[t] += e
            used_l[u] += e
            room[t] -= e
            room[u] -= e
            touched = (t, u)
        for x in touched:
            if room[x] == 0:
                alive[a_entries[a_start[x]:a_start[x + 1]]] = False
            elif room[x] == 1:
                alive[s_entries[s_start[x]:s_start[x + 1]]] = False
    # Every candidate is (entry's type t, rank r) with (type u, rank q): cross entries first, then self ones.
    segs: list[tuple[int, int, int, int, int, int, int]] = []    # self runs: (g, t, r0, count, d, n_t, -)
    for k, t, e, used0 in selfs:
        nt = nl[t]
        c, rest = divmod(e, nt)
        half = bool(rest) and 2 * rest != nt and c == (nt - 1) // 2    # every distance < n/2 is needed:
        if half:                                                    # take the n/2 "diameters" whole and
            c, rest = c - 1, rest + nt // 2                         # a longer partial layer
        far = min(rest, nt - rest) if rest else 0                   # ring distance of the partial layer
        d = 0
        for _ in range(c):                                          # full classes: cycles (r, r + d) over
            d += 1 + (d + 1 == far)                                 # the distances 1, 2, ... but ``far``
            if d > (nt - 1) // 2:
                break
            segs.append((k, t, 0, nt, d, nt, 0))
        if half:
            segs.append((k, t, 0, nt // 2, nt // 2, nt, 0))
        if rest:                                                    # partial layer: (x, x + rest) for x in
            segs.append((k, t, used0, rest, rest, nt, 0))           # the round-robin run from used0
    if not cross and not segs:
        return np.zeros((0, 2), np.int64), np.zeros(0, np.int64), np.zeros((0, 2))
    ck, ct, cu, ce, cpa, cpb = (np.array(c, dtype=np.int64).reshape(-1) for c in zip(*cross, strict=True)) \
        if cross else (np.zeros(0, np.int64),) * 6
    sk, st, sr0, sc, sd, sn, _ = (np.array(c, dtype=np.int64).reshape(-1) for c in zip(*segs, strict=True)) \
        if segs else (np.zeros(0, np.int64),) * 7
    # cross entries: E endpoints on each side, t's grouped by job, u's in round-robin order
    na, nb = n[ct], n[cu]
    blk = np.repeat(np.arange(len(ce)), ce)
    j = np.arange(blk.size) - np.repeat(np.cumsum(ce) - ce, ce)
    base, extra = (ce // na)[blk], (ce % na)[blk]
    head = extra * (base + 1)
    v = np.where(j < head, j // (base + 1), extra + (j - head) // np.maximum(base, 1))
    ra = (cpa[blk] % na[blk] + v) % na[blk]
    rb = (cpb[blk] % nb[blk] + j) % nb[blk]
    # self runs: ranks (r0 + i) % n_t, i < count, each with the rank d further on the ring
    sblk = np.repeat(np.arange(len(sc)), sc)
    i = np.arange(sblk.size) - np.repeat(np.cumsum(sc) - sc, sc)
    nts = sn[sblk]
    r = (sr0[sblk] + i) % nts
    q = (r + sd[sblk]) % nts
    a = np.concatenate([order[start[ct][blk] + ra], order[start[st][sblk] + r]])
    b = np.concatenate([order[start[cu][blk] + rb], order[start[st][sblk] + q]])
    gk = np.concatenate([ck[blk], sk[sblk]])
    tp = np.concatenate([ptp[ck, ct, cu][blk], ptp[sk, st, st][sblk]])
    # A candidate lists its lower index first; a cross candidate's throughputs follow its jobs, a self-pair's
    # (two jobs of one type) stay in the type pair's order: the lower index gets the first.
    swap = a > b
    lo, hi = np.where(swap, b, a), np.where(swap, a, b)
    swap[len(blk):] = False
    tp[swap] = tp[swap][:, ::-1]
    srt = _sorted_by(lo, hi, gk, int(hi.max()) + 1 if hi.size else 1, int(ptp.shape[0]))
    return (np.stack([lo[srt], hi[srt]], axis=1).astype(np.int64), gk[srt].astype(np.int64),
            np.ascontiguousarray(tp[srt], dtype=np.float64))


def _sorted_by(a: np.ndarray, b: np.ndarray, g: np.ndarray, n: int, n_g: int) -> np.ndarray:
    """The order that sorts distinct triples ``(a, b, g)`` (``0 <= a, b < n``, ``0 <= g < n_g``) lexicographically.

    One sort of the combined key ``(a n + b) n_g + g`` (a few times faster than ``lexsort`` of three keys),
    which is the same order because the triples are distinct; ``lexsort`` if the key could overflow.
    """
    if n * n * max(n_g, 1) >= 2 ** 62:
        return np.lexsort((g, b, a))
    return np.argsort((a.astype(np.int64) * n + b) * n_g + g)
