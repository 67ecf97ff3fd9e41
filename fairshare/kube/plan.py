"""Planning a snapshot: the round solved, its binding turned into ``Binding`` and ``Eviction`` objects.

After :func:`fairshare.allocate` has placed the round's jobs and bound them to nodes (spec section 9), each
job's pods are put on the nodes its placement got:

- a single pod takes its placement's node (a whole-GPU pod whose placement spans nodes cannot run: it is
  *deferred*, left pending, with the reason);
- a gang's pods are packed onto the nodes' GPUs, its running pods first on their own node, then the largest
  pods first, each on the node with the fewest free GPUs that holds it; if they do not fit, the gang is
  deferred.

A running pod whose job keeps it on its node **stays** (nothing is written). A running pod whose job is not
placed, or placed on another node or GPU type, is **evicted**; a pod cannot be moved, so its controller
re-creates it and a later round binds it. When a running pod of a gang is evicted, the gang's other running
pods are evicted too and none of its pending pods is bound (a gang runs whole). A pending pod placed on a node
gets a **Binding**.

Last, every node's GPU resources are checked against what stays and what is bound, per resource:
``allocatable >= staying + held + bound``. Jobs are checked in id order; a job whose pods would not fit (this
can only happen with MIG slices, whose share classes may count more slices on a GPU than it has) is deferred
whole, and its running pods are evicted with it. So no node is ever over-committed.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fairshare.allocate import allocate
from fairshare.allocation import Allocation
from fairshare.errors import InvalidInputError
from fairshare.kube.objects import binding_object, eviction_object, list_object
from fairshare.kube.round import KubeJob, KubeRound, build_round
from fairshare.kube.snapshot import KubePod, Snapshot, read_snapshot

__all__ = ["KubePlan", "plan_snapshot"]


@dataclass(frozen=True, slots=True)
class KubePlan:
    """What to apply to a cluster, and why.

    Attributes
    ----------
    bindings : tuple of (pod, node)
        Pending pods (``namespace/name``) to bind, and their node.
    evictions : tuple of (pod, reason)
        Running pods to evict.
    stays : tuple of str
        Running pods that stay where they are (nothing is written for them).
    waiting : tuple of (pod, reason)
        Pending pods left pending: not placed this round, deferred, an incomplete gang, nowhere to run.
    held : tuple of str
        Pods holding GPUs that were not planned and are left alone (being deleted, on a cordoned or not
        ready node, of an incomplete gang).
    ignored : dict
        What the snapshot held that is not planned, by reason: count.
    round : KubeRound
        The round document (``round.doc``) and its maps back to pods and nodes.
    allocation : Allocation or None
        The solved round (None when there was no job).
    seconds : float
        Wall time of :func:`plan_snapshot`.
    """

    bindings: tuple[tuple[str, str], ...]
    evictions: tuple[tuple[str, str], ...]
    stays: tuple[str, ...]
    waiting: tuple[tuple[str, str], ...]
    held: tuple[str, ...]
    ignored: Mapping[str, int]
    round: KubeRound
    allocation: Allocation | None
    seconds: float = 0.0
    _items: tuple[dict[str, Any], ...] = field(default=(), repr=False)

    def next_deficits(self) -> dict[str, float]:
        """Job id -> the deficit to carry into the next plan (``deficits=``), for jobs owed one (> 0).

        The plan's own figure (spec section 4), as if every job runs as planned; pass what a job really
        received through :class:`fairshare.Engine` instead if you measure it.
        """
        a = self.allocation
        if a is None:
            return {}
        return {j: float(d) for j, d in zip(a.job_ids, a.jobs.next_deficit.tolist()) if d > 0}

    def to_list(self) -> dict[str, Any]:
        """The plan as a v1 ``List``: the ``Eviction`` objects first, then the ``Binding`` objects."""
        return list_object([dict(x) for x in self._items])

    def summary(self) -> str:
        """A few lines for people: counts, then one line per binding, eviction and waiting pod."""
        a = self.allocation
        head = (f"{len(self.round.jobs)} jobs on {sum(self.round.doc['gpus'].values())} GPUs of "
                f"{len(self.round.doc['gpus'])} types on {len(set(self.round.node_of.values()))} nodes")
        if a is not None:
            head += (f"; {a.status} ({a.report.mode}), E/C {a.values.utilization:.3f}, "
                     f"shortfall {a.values.shortfall:.3f}")
        lines = [head, f"bind {len(self.bindings)}, evict {len(self.evictions)}, stay {len(self.stays)}, "
                       f"wait {len(self.waiting)}, held {len(self.held)}"]
        lines += [f"  bind  {p} -> {n}" for p, n in self.bindings]
        lines += [f"  evict {p}: {r}" for p, r in self.evictions]
        lines += [f"  wait  {p}: {r}" for p, r in self.waiting]
        lines += [f"  held  {p}" for p in self.held]
        if self.ignored:
            lines.append("not planned: " + ", ".join(f"{n} {k}" for k, n in sorted(self.ignored.items())))
        return "\n".join(lines)


def _catalog(catalog: Any) -> Any:
    if hasattr(catalog, "alone_throughput"):
        return catalog
    from fairshare.sim.catalog import load_catalog

    return load_catalog(catalog)


def plan_snapshot(snapshot: Mapping[str, Any], *, mode: str = "fast", catalog: Any = "modern",
                  products: Mapping[str, str] | None = None, default_model: str | None = None,
                  restart_seconds: float = 60.0, round_seconds: float = 360.0, epsilon: float = 0.0,
                  fairness_weight: float = 100.0, deficits: Mapping[str, float] | None = None,
                  options: Any = None) -> KubePlan:
    """Plan one round of a Kubernetes cluster from its snapshot.

    Parameters
    ----------
    snapshot : dict
        ``kubectl get nodes,pods -A -o json`` (a v1 ``List`` of ``Node`` and ``Pod`` objects; ``PodGroup``
        objects are read too, other kinds counted and left out).
    mode : {"fast", "exact"}
        Solve mode of :func:`fairshare.allocate` (``lp`` places nothing and is refused).
    catalog : str, sequence of str or Catalog
        Where throughputs come from (:func:`fairshare.sim.catalog.load_catalog`); default ``"modern"``.
    products : mapping, optional
        GPU product label -> catalog GPU type, for products :data:`fairshare.kube.products.PRODUCTS` lacks.
    default_model : str, optional
        The workload of pods without ``fairshare.io/model``.
    restart_seconds : float
        What moving or stopping a running job costs, unless its pods say (``fairshare.io/restart-seconds``).
    round_seconds : float
        Length of the round the plan is for.
    epsilon, fairness_weight : float
        The round's fairness slack and the price of a shortfall.
    deficits : mapping, optional
        Job id -> deficit carried from the previous plan (:meth:`KubePlan.next_deficits`). A snapshot holds
        no history: without deficits every round starts even, and equal jobs never take turns.
    options : SolveOptions or mapping, optional
        Solver options.

    Returns
    -------
    KubePlan
        ``plan.to_list()`` is what to apply; ``plan.summary()`` says what and why.

    Raises
    ------
    InvalidInputError
        For a malformed snapshot (naming the object and the field) or option.

    Examples
    --------
    >>> node = {"kind": "Node", "metadata": {"name": "a", "labels": {"nvidia.com/gpu.product": "Tesla-T4"}},
    ...         "status": {"allocatable": {"nvidia.com/gpu": "1"}}}
    >>> pod = {"kind": "Pod", "metadata": {"name": "p", "namespace": "ml",
    ...                                    "annotations": {"fairshare.io/model": "resnet18_cifar10"}},
    ...        "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
    ...        "status": {"phase": "Pending"}}
    >>> plan = plan_snapshot({"apiVersion": "v1", "kind": "List", "items": [node, pod]})
    >>> plan.bindings
    (('ml/p', 'a'),)
    """
    start = time.perf_counter()
    if mode not in ("fast", "exact"):
        raise InvalidInputError("mode", mode, "must be fast or exact (lp gives time fractions, not placements)")
    for name, value, lo in (("restart_seconds", restart_seconds, 0.0), ("round_seconds", round_seconds, 0.0)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (value >= lo and value < 1e12):
            raise InvalidInputError(name, value, f"must be a finite number >= {lo:g}")
    if round_seconds <= 0:
        raise InvalidInputError("round_seconds", round_seconds, "must be > 0")
    snap = read_snapshot(snapshot, products)
    rnd = build_round(snap, _catalog(catalog), default_model=default_model, restart_seconds=float(restart_seconds),
                      round_seconds=float(round_seconds), epsilon=epsilon, fairness_weight=fairness_weight,
                      deficits=deficits)
    alloc = None
    placed: dict[str, dict[str, int]] = {}
    pools: dict[str, str] = {}
    if rnd.doc["jobs"]:
        alloc = allocate(rnd.doc, mode=mode, options=options, previous_binding=rnd.previous)
        assert alloc.binding is not None  # a round with nodes, mode exact or fast
        for bp in alloc.binding.placements:
            per: dict[str, int] = defaultdict(int)
            for rid, _ in bp.gpus:
                per[rnd.node_of[rid]] += 1
            for jid in bp.jobs:
                placed[jid] = dict(per)
                pools[jid] = bp.gpu
    return _decide(snap, rnd, alloc, placed, pools, start)


def _fit(job: KubeJob, per: Mapping[str, int], whole: bool) -> dict[str, str] | None:
    """Pod key -> node for a placed job, or None if its pods do not fit the placement's nodes."""
    if not whole:  # one pod on one GPU of one node
        return {job.pods[0].key: next(iter(per))}
    free = dict(per)
    out: dict[str, str] = {}
    for p in job.pods:  # running pods first on their own node
        if p.node is not None and free.get(p.node, 0) >= p.units:
            free[p.node] -= p.units
            out[p.key] = p.node
    for p in sorted((p for p in job.pods if p.key not in out), key=lambda p: (-p.units, p.name)):
        fits = [n for n in sorted(free) if free[n] >= p.units]
        if not fits:
            return None
        n = min(fits, key=lambda n: (free[n], n))
        free[n] -= p.units
        out[p.key] = n
    return out


def _decide(snap: Snapshot, rnd: KubeRound, alloc: Allocation | None, placed: Mapping[str, dict[str, int]],
            pools: Mapping[str, str], start: float) -> KubePlan:
    stays: list[KubePod] = []
    evict: dict[str, tuple[KubePod, str]] = {}
    bind: dict[str, list[tuple[KubePod, str]]] = {}
    waiting = list(rnd.waiting)
    for jid in sorted(rnd.jobs):
        job = rnd.jobs[jid]
        per = placed.get(jid)
        whole = isinstance(job.scale, int)
        where = None if per is None else _fit(job, per, whole)
        if where is None:
            why = "not placed this round" if per is None else f"its pods do not fit the planned GPUs {per}"
            for p in job.pods:
                if p.node is None:
                    waiting.append((p.key, why))
                else:
                    evict[p.key] = (p, why)
            continue
        moved = [p for p in job.running if where[p.key] != p.node or _pool_of(snap, p) != pools[jid]]
        if moved:
            for p in job.running:
                evict[p.key] = (p, f"moves to {pools[jid]} on node {where[p.key]}" if p in moved else
                                f"its gang {jid} restarts (pod {moved[0].key} moves)")
            waiting += [(p.key, f"its gang {jid} restarts this round") for p in job.pods if p.node is None]
            continue
        stays += job.running
        bind[jid] = [(p, where[p.key]) for p in job.pods if p.node is None]
    # capacity check per node and resource
    free: dict[tuple[str, str], int] = {}
    for node in snap.nodes.values():
        for o in node.offers:
            free[(node.name, o.pool.resource)] = o.units
    for p in (*stays, *rnd.held):
        free[(p.node or "", p.resource)] -= p.units
    bindings: list[tuple[KubePod, str]] = []
    for jid in sorted(bind):
        need: Counter[tuple[str, str]] = Counter()
        for p, n in bind[jid]:
            need[(n, p.resource)] += p.units
        if all(free.get(k, 0) >= v for k, v in need.items()):
            for k, v in need.items():
                free[k] -= v
            bindings += bind[jid]
            continue
        short = next(k for k, v in need.items() if free.get(k, 0) < v)
        why = (f"deferred: node {short[0]} has {max(free.get(short, 0), 0)} {short[1]} free, the plan needs "
               f"{need[short]}")
        for p, _ in bind[jid]:
            waiting.append((p.key, why))
        for p in rnd.jobs[jid].running:
            evict[p.key] = (p, why)
            stays.remove(p)
            free[(p.node or "", p.resource)] += p.units
    ev = sorted(evict.values(), key=lambda x: x[0].key)
    bd = sorted(bindings, key=lambda x: x[0].key)
    items = [eviction_object(p.namespace, p.name, p.uid) for p, _ in ev]
    items += [binding_object(p.namespace, p.name, n, p.uid) for p, n in bd]
    return KubePlan(tuple((p.key, n) for p, n in bd), tuple((p.key, r) for p, r in ev),
                    tuple(sorted(p.key for p in stays)), tuple(sorted(waiting)), tuple(sorted(p.key for p in rnd.held)),
                    dict(snap.ignored), rnd, alloc, time.perf_counter() - start, tuple(items))


def _pool_of(snap: Snapshot, pod: KubePod) -> str | None:
    node = snap.nodes.get(pod.node or "")
    offer = node.offer(pod.resource) if node is not None else None
    return None if offer is None else offer.pool.name
