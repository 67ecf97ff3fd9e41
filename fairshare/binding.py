"""Node-level binding: from "n GPUs of type g" to node ids and GPU indices (a second stage after the round).

The round problem decides, per job, a GPU type and a number of GPUs. :func:`bind` turns such placements into
concrete GPUs of named nodes (:class:`~fairshare.cluster.Node`: an id, a GPU type, a GPU count). It never
changes which jobs run, on which type, or with which partner; it only chooses GPUs. Guarantees:

1. **No GPU over 1.** A whole-GPU placement gets ``n`` distinct GPUs nothing else uses; fractional jobs, counted
   by share class ``1/2^k``, are packed first fit decreasing onto GPUs whose classes sum to at most 1, so a
   placement within the type-level capacity row always binds.
2. **Sticky.** With ``previous``, a placement whose type and members did not change keeps its GPUs, unless
   keeping them would split a gang that a re-binding keeps whole (``defragment=True``, the default;
   ``defragment=False`` keeps them always). Changed placements prefer the GPUs their jobs held.
3. **Few split gangs.** The most gangs that can stay whole are the smallest ones; the count is exact when gang
   sizes divide one another (1, 2, 4, 8, ...), best-fit decreasing otherwise.
4. **GPU indices.** Inside a node, the fewest GPUs change hands (a minimum-cost flow, networkx).

The binding leaves the garbage collector alone (switching it off would switch it off for the whole process). So
that few of its objects trigger the collector's full passes, a call names each GPU by one int (node position
times the largest node's GPU count, plus the index), keeps what it holds in tuples and dicts of ints and
strings (which the collector stops tracking), and builds the bound placements once, for the binding it
returns.

Results do not depend on the order of the placements. The algorithm and its proof are in ``docs/binding.md``;
its cost is measured by ``benchmarks/bench_binding.py`` (docs/performance.md). The result, a
:class:`~fairshare.cluster.Binding`, reports ``split_gangs`` and ``moved_jobs``; it and the nodes are data of the
core (:mod:`fairshare.cluster`), this algorithm sits beside the solve methods.

Examples
--------
>>> nodes = [Node("n0", "V100", 4), Node("n1", "V100", 4)]
>>> b = bind([(("a",), "V100", 4), (("b", "c"), "V100", 2), (("d",), "V100", 1)], nodes)
>>> [(p.jobs, p.gpus) for p in b.placements]
[(('a',), (('n0', 0), ('n0', 1), ('n0', 2), ('n0', 3))), (('b', 'c'), (('n1', 0), ('n1', 1))), (('d',), (('n1', 2),))]
>>> b.split_gangs, b.moved_jobs
(0, 0)
"""

from __future__ import annotations

import bisect
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from fairshare._validate import clip, is_int, is_real
from fairshare.cluster import Binding, BoundPlacement, Cluster, Node, parse_nodes
from fairshare.errors import InvalidInputError
from fairshare.packing import share_class

__all__ = ["bind"]

_FULL = 1.0 + 1e-9  # a GPU's fractional load may reach 1 within rounding
_NO_WISH: frozenset[int] = frozenset()


@dataclass(slots=True)
class _Unit:
    """A whole-GPU unit to bind: a placement, or one GPU hosting fractional jobs (``frac``)."""

    key: tuple[Any, ...]
    jobs: tuple[str, ...]
    size: int
    out: int = -1  # index in the output (whole placements); -1 for a GPU of fractional jobs
    frac: list[tuple[str, float]] | None = None
    gpus: tuple[int, ...] | None = None  # bound GPUs, each node position * stride + GPU index
    pinned: bool = False  # kept on its previous GPUs


def bind(allocation: Any, nodes: Cluster | Sequence[Node] | Sequence[Mapping[str, Any]],
         previous: Binding | Mapping[str, Any] | None = None, *,
         shares: Mapping[str, float] | None = None, defragment: bool = True) -> Binding:
    """Bind a round's placements to node ids and GPU indices (see the module documentation).

    Parameters
    ----------
    allocation : Allocation or sequence
        An :class:`~fairshare.allocation.Allocation` of an integer mode (``exact`` or ``fast``, or a policy),
        or its placements: objects with ``jobs``, ``gpu`` and ``gpus``, or ``(jobs, gpu, gpus)`` tuples. A
        placement whose ``gpus`` is below 1 is a fractional job with that share of one GPU.
    nodes : sequence of Node or of node objects, or Cluster
        The cluster's nodes (:func:`fairshare.cluster.parse_nodes`), or a :class:`~fairshare.cluster.Cluster`
        that names them.
    previous : Binding or its dict, optional
        The previous round's binding: placements that did not change keep their GPUs.
    shares : mapping of job id to float, optional
        Jobs that hold a share ``0 < q < 1`` of one GPU (each alone in its placement, ``gpus`` 1).
    defragment : bool
        When keeping unchanged placements on their GPUs leaves a gang split, also bind that type with the
        previous GPUs as a preference only, and take that binding if it splits fewer gangs (then fewer moves
        decide). Default True: fewer split gangs come first, as the spec orders them; False keeps unchanged
        placements on their GPUs always.

    Returns
    -------
    Binding

    Raises
    ------
    InvalidInputError
        For an ``lp`` allocation (time fractions are not a placement at one moment), a placement on a type
        that no node has, a share outside (0, 1), or placements that need more GPUs of a type than its nodes
        hold (``nodes``).
    """
    t0 = time.perf_counter()
    node_list = nodes.nodes if isinstance(nodes, Cluster) else parse_nodes(nodes)
    if getattr(getattr(allocation, "report", None), "mode", None) == "lp":
        raise InvalidInputError("allocation.report.mode", "lp", "an lp allocation holds time fractions, which "
                                "cannot be bound to GPUs (bind an exact or fast allocation)")
    raw = list(getattr(allocation, "placements", allocation))
    prev = None if previous is None else previous if isinstance(previous, Binding) else \
        Binding.from_dict(previous, "previous")
    share_of = {} if shares is None else dict(shares)
    for j, q in share_of.items():
        if not (is_real(q) and 0 < q < 1):
            raise InvalidInputError(f"shares.{j}", clip(q), "must be a number in (0, 1)")

    by_type: dict[str, list[int]] = defaultdict(list)
    for k, n in enumerate(node_list):
        by_type[n.gpu].append(k)

    stride = max((n.gpus for n in node_list), default=1)  # GPU g is node g // stride, index g % stride
    whole, fracs, n_out = _units(raw, share_of, by_type)
    prev_whole, prev_frac, held, prev_gpus = _previous(prev, node_list, stride)

    names = [n.id for n in node_list]
    out_whole: list[BoundPlacement | None] = [None] * n_out
    out_frac: list[BoundPlacement] = []
    split = moved = 0
    for gpu in sorted(set(whole) | set(fracs)):
        mine, theirs = whole.get(gpu, []), fracs.get(gpu, [])
        best = _bound(_bind_type(gpu, by_type[gpu], node_list, stride, mine, theirs, prev_whole.get(gpu, {}),
                                 prev_frac, held),
                      stride, prev_gpus)
        if defragment and best[2] > 0 and prev_gpus:  # pins cost splits: try with preferences only
            fresh = [_Unit(u.key, u.jobs, u.size, u.out) for u in mine]
            other = _bound(_bind_type(gpu, by_type[gpu], node_list, stride, fresh, theirs, {}, {}, held), stride,
                           prev_gpus)
            if other[2:] < best[2:]:
                best = other
        for gp, u in zip(best[0], mine):
            out_whole[u.out] = BoundPlacement(u.jobs, gpu, tuple([(names[g // stride], g % stride) for g in gp]), 1.0)
        for g, frac in best[1]:
            ids = ((names[g // stride], g % stride),)
            out_frac += [BoundPlacement((j,), gpu, ids, q) for j, q in frac]
        split += best[2]
        moved += best[3]
    bound = tuple(p for p in out_whole if p is not None) + tuple(sorted(out_frac, key=lambda p: p.jobs))
    return Binding(bound, split, moved, time.perf_counter() - t0)


def _units(raw: list[Any], share_of: Mapping[str, float], by_type: Mapping[str, list[int]]
           ) -> tuple[dict[str, list[_Unit]], dict[str, list[tuple[str, float]]], int]:
    """Whole placements (units, in output order) and fractional jobs of ``raw``, per type; whole units' count."""
    whole: dict[str, list[_Unit]] = defaultdict(list)
    fracs: dict[str, list[tuple[str, float]]] = defaultdict(list)
    n_out = 0
    for i, p in enumerate(raw):
        if isinstance(p, tuple):
            jobs, gpu, count = p
            jobs = tuple(jobs)
        else:
            jobs, gpu, count = tuple(p.jobs), p.gpu, p.gpus
        if gpu not in by_type:
            raise InvalidInputError(f"placements[{i}].gpu", gpu, "no node has this GPU type")
        if type(count) is int and count >= 1 and not share_of:  # the common case, checked cheaply
            whole[gpu].append(_Unit((count, tuple(sorted(jobs)) if len(jobs) > 1 else jobs), jobs, count, n_out))
            n_out += 1
        elif is_real(count) and 0 < count < 1:
            if len(jobs) != 1:
                raise InvalidInputError(f"placements[{i}].jobs", list(jobs), "a fractional placement holds one job")
            fracs[gpu].append((jobs[0], float(count)))
        elif share_of and all(j in share_of for j in jobs):
            fracs[gpu] += [(j, share_of[j]) for j in jobs]
        else:
            if not (is_int(count) and count >= 1):
                raise InvalidInputError(f"placements[{i}].gpus", clip(count), "must be a positive integer or a "
                                        "share in (0, 1)")
            whole[gpu].append(_Unit((int(count), tuple(sorted(jobs))), jobs, int(count), n_out))
            n_out += 1
    return whole, fracs, n_out


def _previous(prev: Binding | None, node_list: Sequence[Node], stride: int) -> tuple[
        dict[str, dict[tuple[str, ...], tuple[int, ...]]], dict[str, tuple[str, int, float]],
        dict[str, tuple[int, ...]], dict[str, tuple[int, ...]]]:
    """What ``prev`` held on ``node_list``: whole placements, fractional jobs, each job's GPUs (valid, as bound).

    GPUs are ints, ``node position * stride + index``, in tuples sorted by value. Whole placements are keyed
    by type, then sorted jobs. The last mapping holds every GPU as bound, with -1 for a GPU that is not on the
    nodes (it equals no GPU bound now); the others hold valid GPUs only (on a node of the placement's type), and
    a placement with a GPU that is not valid is neither a whole placement nor a fractional job to keep.
    """
    prev_whole: dict[str, dict[tuple[str, ...], tuple[int, ...]]] = defaultdict(dict)
    prev_frac: dict[str, tuple[str, int, float]] = {}
    held: dict[str, tuple[int, ...]] = {}  # job -> the valid GPUs it held
    prev_gpus: dict[str, tuple[int, ...]] = {}  # job -> its GPUs as bound, sorted
    if prev is not None:
        info = {n.id: (k, n.gpu, n.gpus) for k, n in enumerate(node_list)}
        nowhere = (-1, "", 0)
        for bp in prev.placements:
            found = []
            every = []
            for nid, x in bp.gpus:
                k, g, c = info.get(nid, nowhere)
                if k >= 0 and x in range(c):
                    every.append(k * stride + int(x))
                    if g == bp.gpu:
                        found.append(k * stride + int(x))
                else:
                    every.append(-1)
            if len(found) == len(every):  # the common case: one tuple for both
                found.sort()
                held_gpus = valid = tuple(found)
            else:
                valid = tuple(sorted(found))
                every.sort()
                held_gpus = tuple(every)
            for j in bp.jobs:
                prev_gpus[j] = held_gpus
                held[j] = valid
            if len(valid) != len(bp.gpus):
                continue
            if bp.share < 1 and len(bp.jobs) == 1:
                prev_frac[bp.jobs[0]] = (bp.gpu, valid[0], bp.share)
            else:
                prev_whole[bp.gpu][bp.jobs if len(bp.jobs) == 1 else tuple(sorted(bp.jobs))] = valid
    return prev_whole, prev_frac, held, prev_gpus


def _bound(units: tuple[list[_Unit], list[_Unit]], stride: int, prev_gpus: dict[str, tuple[int, ...]]
           ) -> tuple[list[tuple[int, ...]], list[tuple[int, list[tuple[str, float]]]], int, int]:
    """GPUs of one type's whole units (sorted, in the order of ``units[0]``) and of its fractional jobs; splits, moves.

    The bound placements are built by the caller for the binding it keeps, so that a binding tried and dropped
    (the defragmenting pass) allocates none.
    """
    whole: list[tuple[int, ...]] = []
    split = moved = 0
    for u in units[0]:
        gp = u.gpus
        assert gp is not None
        if len(gp) > 1:
            gp = tuple(sorted(gp))  # node order, then index
            split += gp[0] // stride != gp[-1] // stride
        whole.append(gp)
        if not u.pinned:
            for j in u.jobs:
                old = prev_gpus.get(j)
                if old is not None and old != gp:
                    moved += 1
    frac: list[tuple[int, list[tuple[str, float]]]] = []
    for u in units[1]:
        assert u.gpus is not None and u.frac is not None
        frac.append((u.gpus[0], u.frac))
        moved += sum(1 for j, _ in u.frac if j in prev_gpus and prev_gpus[j] != u.gpus)
    return whole, frac, split, moved


def _bind_type(gpu: str, positions: list[int], node_list: Sequence[Node], stride: int, units: list[_Unit],
               fractional: list[tuple[str, float]], prev_whole: Mapping[tuple[str, ...], tuple[int, ...]],
               prev_frac: dict[str, tuple[str, int, float]],
               held: dict[str, tuple[int, ...]]) -> tuple[list[_Unit], list[_Unit]]:
    """Bind the units and fractional jobs of one GPU type onto its nodes (``positions``; GPUs as in ``_previous``).

    Returns the whole units (in the order given) and the GPUs of fractional jobs, all bound.
    """
    taken: dict[int, set[int]] = {k: set() for k in positions}
    cap = {k: node_list[k].gpus for k in positions}
    # 1. pin unchanged whole placements
    rest: list[_Unit] = []
    for u in sorted(units, key=lambda u: u.key):
        old = prev_whole.get(u.jobs if len(u.jobs) == 1 else tuple(sorted(u.jobs)))
        if old is not None and len(old) == u.size and all(g % stride not in taken[g // stride] for g in old) \
                and len(set(old)) == u.size:
            u.gpus = old
            u.pinned = True
            for g in old:
                taken[g // stride].add(g % stride)
        else:
            rest.append(u)
    free_total = sum(cap[k] - len(taken[k]) for k in positions)
    need_whole = sum(u.size for u in rest)
    # 2. fractional jobs: keep their GPUs where possible, pack the others first fit decreasing
    frac_gpus = _pack_fractional(gpu, fractional, prev_frac, taken, stride, free_total - need_whole, keep=True)
    if frac_gpus is None:
        frac_gpus = _pack_fractional(gpu, fractional, prev_frac, taken, stride, free_total - need_whole, keep=False)
    if frac_gpus is None:
        total = need_whole + sum(q for _, q in fractional)
        raise InvalidInputError("nodes", {gpu: free_total}, f"the placements on {gpu} need more GPUs than its "
                                f"nodes have free ({total:g} GPUs of placements and shares, {free_total} free "
                                "after pinning, shares packed largest first)")
    pinned_frac = [u for u in frac_gpus if u.gpus is not None]
    for u in pinned_frac:
        assert u.gpus is not None
        taken[u.gpus[0] // stride].add(u.gpus[0] % stride)
    todo = rest + [u for u in frac_gpus if u.gpus is None]
    todo.sort(key=lambda u: u.key)
    free = {k: cap[k] - len(taken[k]) for k in positions}
    if sum(u.size for u in todo) > sum(free.values()):
        raise InvalidInputError("nodes", {gpu: sum(cap.values())}, f"the placements on {gpu} need "
                                f"{sum(u.size for u in todo)} GPUs beyond the pinned ones, the nodes have "
                                f"{sum(free.values())} free")
    # 3. which gangs stay whole, on which node; the others split over the fewest nodes
    on_node = _place(todo, positions, free, held, stride)
    # 4. GPU indices inside each node
    _indices(on_node, taken, cap, held, stride)
    frac_out = sorted(frac_gpus, key=lambda u: u.key)
    return units, frac_out


def _pack_fractional(gpu: str, fractional: list[tuple[str, float]], prev_frac: dict[str, tuple[str, int, float]],
                     taken: dict[int, set[int]], stride: int, room: int, keep: bool) -> list[_Unit] | None:
    """Fractional jobs onto GPUs: those kept on their previous GPU (``keep``), the others first fit decreasing.

    A job counts on its GPU with its share class (:func:`fairshare.packing.share_class`), as in the round's
    capacity row, so the GPUs the round left for fractional jobs always suffice when nothing is kept.

    Returns units of size 1 (``gpus`` set for a kept GPU, None for a new one), or None if the new GPUs would
    be more than ``room``.
    """
    kept: dict[int, _Unit] = {}
    loads: dict[int, float] = {}
    others = []
    for j, q in sorted(fractional, key=lambda t: (-share_class(t[1]), -t[1], t[0])):
        old = prev_frac.get(j) if keep else None
        c = share_class(q)
        if old is not None and old[0] == gpu and old[1] % stride not in taken[old[1] // stride] \
                and loads.get(old[1], 0.0) + c <= _FULL:
            g = old[1]
            if g not in kept:
                kept[g] = _Unit((1, ()), (), 1, frac=[], gpus=(g,))
            assert kept[g].frac is not None
            kept[g].frac.append((j, q))  # type: ignore[union-attr]
            loads[g] = loads.get(g, 0.0) + c
        else:
            others.append((j, q))
    open_units = list(kept.values())
    load = [loads[u.gpus[0]] for u in open_units]  # type: ignore[index]
    first_open = 0
    for j, q in others:
        while first_open < len(open_units) and load[first_open] >= 1.0 - 1e-12:
            first_open += 1
        c = share_class(q)
        for i in range(first_open, len(open_units)):
            if load[i] + c <= _FULL:
                open_units[i].frac.append((j, q))  # type: ignore[union-attr]
                load[i] += c
                break
        else:
            open_units.append(_Unit((1, ()), (), 1, frac=[(j, q)]))
            load.append(c)
    if len(open_units) > room:  # kept GPUs count too: they were free after the whole placements' pins
        return None
    for u in open_units:
        u.jobs = tuple(sorted(j for j, _ in u.frac or ()))
        u.key = (1, u.jobs)
    return open_units


def _slots_ok(sizes_desc: list[int], free: list[int]) -> bool:
    """The gangs (sizes in decreasing order, each dividing the larger ones) fit whole on nodes with ``free``."""
    total = 0
    i = 0
    while i < len(sizes_desc):
        s = sizes_desc[i]
        while i < len(sizes_desc) and sizes_desc[i] == s:
            total += s
            i += 1
        if total > s * sum(f // s for f in free):
            return False
    return True


def _bfd_ok(sizes_desc: list[int], free: list[int]) -> bool:
    """Best fit decreasing places every gang whole (a heuristic test for sizes that do not divide)."""
    left = sorted(free)
    for s in sizes_desc:
        i = bisect.bisect_left(left, s)
        if i == len(left):
            return False
        f = left.pop(i)
        bisect.insort(left, f - s)
    return True


def _place(todo: list[_Unit], positions: list[int], free: dict[int, int], held: dict[str, tuple[int, ...]],
           stride: int) -> dict[int, list[tuple[_Unit, int]]]:
    """Choose nodes for every unit (steps 3 of the module documentation): node -> [(unit, GPUs there)]."""
    sizes = sorted({u.size for u in todo})
    divisible = all(b % a == 0 for a, b in zip(sizes, sizes[1:]))
    fits = _slots_ok if divisible else _bfd_ok
    free_list = [free[k] for k in positions]
    n = len(todo)  # todo is sorted by (size, jobs): the k smallest are todo[:k]
    if fits([u.size for u in reversed(todo)], free_list):
        k_whole = n
    else:
        lo, hi = 0, n  # fits(lo) holds (k = 0 trivially), fits(hi) fails
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if fits([u.size for u in reversed(todo[:mid])], free_list):
                lo = mid
            else:
                hi = mid
        k_whole = lo
    on_node: dict[int, list[tuple[_Unit, int]]] = defaultdict(list)
    # whole gangs, largest first: the node the gang's jobs held most GPUs on, else best fit
    maxc = max(free_list, default=0)
    buckets: list[list[int]] = [[] for _ in range(maxc + 1)]
    for pos in reversed(positions):
        buckets[free[pos]].append(pos)
    whole = _by_size_desc(todo[:k_whole])
    split: list[_Unit] = _by_size_desc(todo[k_whole:])
    n_split = len(split)
    for u in whole:
        k = _preferred(u, free, held, stride) if divisible else None
        if k is None:
            k = _best_fit(buckets, free, u.size)
        if k is None:  # only for sizes that do not divide one another: split it after all
            split.append(u)
            continue
        free[k] -= u.size
        buckets[free[k]].append(k)
        on_node[k].append((u, u.size))
    # split gangs, largest first: the fewest nodes, the last piece on the smallest node that holds it
    if len(split) > n_split:
        split = _by_size_desc(split)
    for u in split:
        order = sorted((k for k in positions if free[k] > 0), key=lambda k: (-free[k], k))
        need, used = u.size, 0
        while need - free[order[used]] > 0:
            need -= free[order[used]]
            used += 1
        last_candidates = [k for k in order[used:] if free[k] >= need]
        last = min(last_candidates, key=lambda k: (free[k], k))
        for k in order[:used]:
            on_node[k].append((u, free[k]))
            free[k] = 0
        on_node[last].append((u, need))
        free[last] -= need
    return on_node


def _by_size_desc(units: list[_Unit]) -> list[_Unit]:
    """``units`` by decreasing size, then jobs (two stable sorts, which build no key tuples)."""
    return sorted(sorted(units, key=_jobs_of), key=_minus_size)


def _jobs_of(u: _Unit) -> tuple[str, ...]:
    return u.jobs


def _minus_size(u: _Unit) -> int:
    return -u.size


def _best_fit(buckets: list[list[int]], free: dict[int, int], size: int) -> int | None:
    """The node with the fewest free GPUs that holds ``size`` (buckets by free count, stale entries skipped)."""
    for c in range(size, len(buckets)):
        b = buckets[c]
        while b and free[b[-1]] != c:
            b.pop()  # stale: the node's free count changed since it was filed here
        if b:
            return b.pop()
    return None


def _preferred(u: _Unit, free: dict[int, int], held: dict[str, tuple[int, ...]], stride: int) -> int | None:
    """The node (with room for the whole unit) where the unit's jobs held the most GPUs, or None."""
    best, best_n = None, 0
    counts: dict[int, int] = {}
    for j in u.jobs:
        for g in held.get(j, ()):
            k = g // stride
            if k in free:
                counts[k] = counts.get(k, 0) + 1
    for k, c in counts.items():
        if free[k] >= u.size and (c > best_n or (c == best_n and best is not None and k < best)):
            best, best_n = k, c
    return best


def _indices(on_node: dict[int, list[tuple[_Unit, int]]], taken: dict[int, set[int]], cap: dict[int, int],
             held: dict[str, tuple[int, ...]], stride: int) -> None:
    """GPU indices on each node: the free indices a unit's jobs held there, then the lowest free ones."""
    for k, items in on_node.items():
        used = taken[k]
        prefs = _wishes(k, items, used, held, stride)
        n_wanted = sum(len(p) for p in prefs)
        if n_wanted == 0:  # no wishes: the lowest free indices, in the order of the units
            _lowest(k, items, used, cap[k], stride)
            continue
        choice = None
        if n_wanted > 1 and n_wanted != len(set().union(*prefs)):
            choice = _greedy_indices(items, prefs, used, cap[k])
            if choice is None:  # the greedy may have lost a wish: an exact assignment
                choice = _flow_indices(k, items, prefs, used, cap[k])
        if choice is None:
            choice = []
            for (_, cnt), want in zip(items, prefs):
                got = list(want) if len(want) <= 1 else sorted(want)[:cnt]
                choice.append(got)
                used.update(got)
            lowest = (x for x in range(cap[k]) if x not in used)
            for (_, cnt), got in zip(items, choice):
                while len(got) < cnt:
                    got.append(next(lowest))
        for (u, _), got in zip(items, choice):
            used.update(got)
            u.gpus = (u.gpus or ()) + tuple([k * stride + x for x in got])


def _wishes(k: int, items: list[tuple[_Unit, int]], used: set[int], held: dict[str, tuple[int, ...]],
            stride: int) -> list[AbstractSet[int]]:
    """Per unit, the free indices of node ``k`` its jobs held (a set only for a unit that has wishes)."""
    prefs: list[AbstractSet[int]] = []
    for u, _ in items:
        wish: set[int] | None = None
        for j in u.jobs:
            for g in held.get(j, ()):
                if g // stride == k and g % stride not in used:
                    if wish is None:
                        wish = set()
                    wish.add(g % stride)
        prefs.append(_NO_WISH if wish is None else wish)
    return prefs


def _lowest(k: int, items: list[tuple[_Unit, int]], used: set[int], cap: int, stride: int) -> None:
    """The lowest free indices of node ``k`` to the units, in their order (no unit wishes for any)."""
    free_x = [x for x in range(cap) if x not in used]
    i = 0
    for u, cnt in items:
        gp = (k * stride + free_x[i],) if cnt == 1 else tuple([k * stride + x for x in free_x[i:i + cnt]])
        u.gpus = gp if u.gpus is None else u.gpus + gp
        i += cnt
    used.update(free_x[:i])


def _greedy_indices(items: list[tuple[_Unit, int]], prefs: Sequence[AbstractSet[int]], used: set[int],
                    cap: int) -> list[list[int]] | None:
    """Wished indices handed out greedily (fewest wishes first); None unless that grants the most wishes possible.

    The most wishes any assignment can grant is at most ``min(sum_u min(cnt_u, |wish_u|), |union of wishes|)``;
    a greedy answer that reaches this bound is optimal, so the flow is needed only when it does not.
    """
    union = set().union(*prefs)
    bound = min(sum(min(cnt, len(w)) for (_, cnt), w in zip(items, prefs)), len(union))
    given: set[int] = set()
    choice: list[list[int]] = [[] for _ in items]
    for i in sorted(range(len(items)), key=lambda i: (len(prefs[i]), i)):
        cnt = items[i][1]
        for x in sorted(prefs[i] - given):
            if len(choice[i]) == cnt:
                break
            choice[i].append(x)
            given.add(x)
    if len(given) < bound:
        return None
    lowest = (x for x in range(cap) if x not in used and x not in given)
    for (_, cnt), got in zip(items, choice):
        while len(got) < cnt:
            got.append(next(lowest))
    return choice


def _flow_indices(k: int, items: list[tuple[_Unit, int]], prefs: Sequence[AbstractSet[int]], taken: set[int],
                  cap: int) -> list[list[int]]:
    """Indices for units on node ``k`` whose wishes overlap: a minimum-cost flow (networkx)."""
    import networkx as nx

    free = [x for x in range(cap) if x not in taken]
    g = nx.DiGraph()
    demand = sum(cnt for _, cnt in items)
    g.add_node("s", demand=-demand)
    g.add_node("t", demand=demand)
    for i, ((_, cnt), want) in enumerate(zip(items, prefs)):
        g.add_edge("s", ("u", i), capacity=cnt, weight=0)
        for x in free:
            g.add_edge(("u", i), ("x", x), capacity=1, weight=0 if x in want else 1)
    for x in free:
        g.add_edge(("x", x), "t", capacity=1, weight=0)
    flow = nx.min_cost_flow(g)
    return [sorted(x for (_, x), f in flow[("u", i)].items() if f > 0) for i in range(len(items))]
