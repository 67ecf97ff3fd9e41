"""Building the round document of a snapshot: pools as GPU types, nodes, and pods grouped into jobs.

**GPU types and nodes.** Every pool (:class:`~fairshare.kube.snapshot.Pool`) of a schedulable node (not
cordoned, ``Ready``) is a GPU type of the round. A node's offer counts its allocatable units for whole GPUs,
and ``ceil(units x share)`` GPUs for replicas and MIG slices, less what pods that are not planned hold there
(pods being deleted, members of a gang that is not complete). Each offer is a node of the round (``nodes``,
its id the node's name, or ``<node>|<pool>`` on a node with more than one pool).

**Jobs.** A pending pod (no ``spec.nodeName``) or a running one (``spec.nodeName`` set) is a job of its own
(id ``<namespace>/<name>``), or a member of a gang (id ``<namespace>/gang/<group>``) when it carries
``fairshare.io/gang`` or the coscheduling plugin's ``scheduling.x-k8s.io/pod-group`` label. A gang's size is
``fairshare.io/gang-size``, else its ``PodGroup``'s ``spec.minMember``, else the number of its pods; a gang
with fewer pods than its size is not planned (its pods wait, its running pods are left alone). A gang asks
for the sum of its pods' whole GPUs, on one GPU type.

Per job, from annotations (or labels) of its pods (a gang's pods must agree):

========================== ===================================================================================
``fairshare.io/model``      catalog workload (required, unless a default model is given)
``fairshare.io/weight``     fairness weight, a number > 0 (default 1)
``fairshare.io/priority``   priority on the efficiency term, a number >= 0; without it, ``spec.priority``
                            (the PriorityClass value ``p``) gives ``clip(2 ** (p / 1000), 0.05, 20)``: every
                            1,000 of PriorityClass value doubles it; no priority class gives 1
``fairshare.io/restart-seconds`` what moving or stopping the running job costs, seconds >= 0 (default: the
                            planner's ``restart_seconds``)
========================== ===================================================================================

**Where a job may run.** Pools whose every node matches the pod's ``spec.nodeSelector`` and offers the
resource it asks for. A pod asking for ``nvidia.com/gpu`` goes to whole-GPU pools when its selector allows
one; otherwise (its selector picks time-sliced, MPS or single-strategy MIG nodes) it asks for the share those
give (``units / replicas``, or the slice's share), which must be the same on every pool it may use. A running
pod may also stay in its own pool.

**Throughputs** (iterations/s, from the catalog): a whole-GPU job of ``s`` GPUs on type ``g`` has the
catalog's figure for ``s`` GPUs of ``g``; a job holding a share ``f`` of one GPU has ``f`` times the figure
for one GPU (derived: the catalog has no per-share measurements, as in the simulator).

**Running jobs** carry ``current`` (their pool, no partner) and ``restart_seconds``, so the round keeps them
where they are unless moving is worth the restart; the binding of the running pods is passed as the previous
binding, so a job that stays keeps its node.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fairshare._validate import clip
from fairshare.errors import InvalidInputError
from fairshare.kube.snapshot import GPU, KubeNode, KubePod, Pool, Snapshot
from fairshare.packing import pack_shares, share_class
from fairshare.problem import MAX_VALUE

__all__ = ["ANNOTATIONS", "POD_GROUP_LABELS", "PRIORITY_CLIP", "PRIORITY_DOUBLING", "KubeJob", "KubeRound",
           "build_round", "priority_of_class"]

#: Annotations (or labels) fairshare reads on a pod.
ANNOTATIONS = {"model": "fairshare.io/model", "weight": "fairshare.io/weight", "priority": "fairshare.io/priority",
               "restart": "fairshare.io/restart-seconds", "gang": "fairshare.io/gang",
               "gang_size": "fairshare.io/gang-size"}
#: Pod-group labels of the coscheduling plugin (current and older API group), read when ``fairshare.io/gang``
#: is absent.
POD_GROUP_LABELS = ("scheduling.x-k8s.io/pod-group", "pod-group.scheduling.sigs.k8s.io")
#: PriorityClass value that doubles a job's priority.
PRIORITY_DOUBLING = 1000.0
#: Range of the priority a PriorityClass value gives.
PRIORITY_CLIP = (0.05, 20.0)


def priority_of_class(value: int) -> float:
    """The round priority of a PriorityClass value: ``clip(2 ** (value / 1000), 0.05, 20)``.

    >>> priority_of_class(0), priority_of_class(1000), priority_of_class(-1000), priority_of_class(2000000000)
    (1.0, 2.0, 0.5, 20.0)
    """
    lo, hi = PRIORITY_CLIP
    return float(min(hi, max(lo, 2.0 ** max(-64.0, min(64.0, value / PRIORITY_DOUBLING)))))


@dataclass(frozen=True, slots=True)
class KubeJob:
    """A job of the round: one pod, or the pods of a gang."""

    id: str
    pods: tuple[KubePod, ...]
    scale: int | float
    model: str
    weight: float
    priority: float
    restart_seconds: float
    pools: tuple[str, ...]
    current: str | None

    @property
    def running(self) -> tuple[KubePod, ...]:
        """Pods already on a node."""
        return tuple(p for p in self.pods if p.node is not None)


@dataclass(frozen=True, slots=True)
class KubeRound:
    """The round document of a snapshot and what maps it back to pods and nodes.

    ``waiting`` lists pending pods that are not planned this round, with the reason; ``held`` the pods that
    hold GPUs and are left alone (deleted pods, pods on unschedulable nodes, incomplete gangs).
    """

    doc: dict[str, Any]
    jobs: Mapping[str, KubeJob]
    pools: Mapping[str, Pool]
    node_of: Mapping[str, str]                       # round node id -> Kubernetes node
    round_node: Mapping[tuple[str, str], str]        # (Kubernetes node, pool) -> round node id
    previous: dict[str, Any] | None
    held: tuple[KubePod, ...]
    waiting: tuple[tuple[str, str], ...]


def _number(pod: KubePod, key: str, lo: float, lo_open: bool) -> float | None:
    text = pod.meta(key)
    if text is None:
        return None
    try:
        x = float(text)
    except ValueError:
        x = math.nan
    if not (math.isfinite(x) and (x > lo if lo_open else x >= lo) and x <= MAX_VALUE):
        raise InvalidInputError(f"{pod.where}.metadata.annotations[{key!r}]", text,
                                f"must be a number {'>' if lo_open else '>='} {lo:g} (at most 1e12)")
    return x


def _agree(pods: Sequence[KubePod], key: str, read: Any) -> Any:
    """The value of ``key`` on a job's pods (those that set it must agree)."""
    value, first = None, None
    for p in pods:
        v = read(p)
        if v is None:
            continue
        if value is not None and v != value:
            raise InvalidInputError(f"{p.where}.metadata.annotations[{key!r}]", p.meta(key),
                                    f"differs from the gang's other pods ({first.key if first else ''}: "
                                    f"{first.meta(key) if first else ''})")
        if value is None:
            value, first = v, p
    return value


def _selected(pod: KubePod, nodes: Sequence[KubeNode]) -> bool:
    return all(all(n.labels.get(k) == v for k, v in pod.node_selector.items()) for n in nodes)


def _pod_pools(pod: KubePod, pools: Mapping[str, Pool], members: Mapping[str, list[KubeNode]],
               current: Pool | None) -> tuple[float, list[str]]:
    """(share or whole count, usable pools) of one pod; errors when its share is ambiguous."""
    cands = [p for p in pools.values() if p.resource == pod.resource and _selected(pod, members[p.name])]
    if current is not None:
        cands = [p for p in cands if p.whole == current.whole and (p.whole or p.unit == current.unit)]
        if current.name not in {p.name for p in cands}:
            cands.append(current)
    elif pod.resource == GPU and any(p.whole for p in cands):
        cands = [p for p in cands if p.whole]
    if not cands:
        return 0.0, []
    if cands[0].whole:
        return float(pod.units), [p.name for p in cands]
    shares = {p.name: pod.units * p.unit for p in cands}
    if len(set(shares.values())) > 1:
        raise InvalidInputError(f"{pod.where}.spec.nodeSelector", dict(pod.node_selector),
                                f"{pod.units} {pod.resource} is a different share of a GPU on the pools it may use "
                                f"({', '.join(f'{k}: {v:g}' for k, v in shares.items())}); add a nodeSelector "
                                "(nvidia.com/gpu.replicas or nvidia.com/gpu.product) that picks one")
    share = next(iter(shares.values()))
    if share >= 1:
        raise InvalidInputError(f"{pod.where}.spec.containers[].resources[{pod.resource!r}]", pod.units,
                                f"is {share:g} of a GPU on {', '.join(shares)}: a pod on shared GPUs must ask "
                                "for less than one GPU")
    return share, [p.name for p in cands]


def build_round(snap: Snapshot, catalog: Any, *, default_model: str | None = None, restart_seconds: float = 60.0,
                round_seconds: float = 360.0, epsilon: float = 0.0, fairness_weight: float = 100.0,
                deficits: Mapping[str, float] | None = None) -> KubeRound:
    """The round document of a snapshot (see the module documentation).

    ``deficits`` (job id -> carried deficit, the previous plan's ``next_deficit``) become the jobs'
    ``deficit``; ids of jobs that are not in the round are ignored (they finished or left).

    Raises
    ------
    InvalidInputError
        For a pod without a model (and no ``default_model``), a model or GPU type the catalog does not
        have, an annotation that is not a valid number, gang pods that disagree, a share that depends on
        the pool; the field names the object and the key.
    """
    live = [n for n in snap.nodes.values() if n.schedulable]
    pools: dict[str, Pool] = {}
    members: dict[str, list[KubeNode]] = defaultdict(list)
    for n in live:
        for o in n.offers:
            pools.setdefault(o.pool.name, o.pool)
            members[o.pool.name].append(n)
    for name, pool in pools.items():
        if pool.gpu_type not in catalog.gpu_types:
            node = members[name][0]
            raise InvalidInputError(f"{node.where}.metadata.labels['nvidia.com/gpu.product']",
                                    node.labels.get("nvidia.com/gpu.product"),
                                    f"GPU type {pool.gpu_type} is not in the catalog (types: "
                                    f"{', '.join(catalog.gpu_types)}); use a catalog that has it (e.g. modern)")
    held: list[KubePod] = []
    waiting: list[tuple[str, str]] = []
    groups: dict[str, list[KubePod]] = defaultdict(list)
    for pod in snap.pods:
        on = snap.nodes.get(pod.node) if pod.node else None
        if pod.terminating:
            if on is not None:
                held.append(pod)
            continue
        if on is not None and not on.schedulable:
            held.append(pod)
            continue
        gang = pod.meta(ANNOTATIONS["gang"]) or next((pod.labels[k] for k in POD_GROUP_LABELS if k in pod.labels),
                                                     None)
        groups[f"{pod.namespace}/gang/{gang}" if gang else pod.key].append(pod)
    jobs: dict[str, KubeJob] = {}
    for jid, pods in groups.items():
        pods.sort(key=lambda p: p.name)
        job = _job(jid, pods, snap, pools, members, catalog, default_model, restart_seconds, held, waiting)
        if job is not None:
            jobs[jid] = job
    return _assemble(snap, pools, members, jobs, held, waiting, catalog, round_seconds, epsilon, fairness_weight,
                     _deficits(deficits))


def _deficits(value: Mapping[str, float] | None) -> dict[str, float]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError("deficits", clip(value), "must be an object: job id -> deficit")
    for k, v in value.items():
        if not (isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                and 0 <= v <= MAX_VALUE):
            raise InvalidInputError(f"deficits[{k!r}]", clip(v), "must be a finite number >= 0 (at most 1e12)")
    return {k: float(v) for k, v in value.items()}


def _job(jid: str, pods: list[KubePod], snap: Snapshot, pools: Mapping[str, Pool],
         members: Mapping[str, list[KubeNode]], catalog: Any, default_model: str | None, restart: float,
         held: list[KubePod], waiting: list[tuple[str, str]]) -> KubeJob | None:
    gang = "/gang/" in jid
    if gang:
        size_text = _agree(pods, ANNOTATIONS["gang_size"], lambda p: p.meta(ANNOTATIONS["gang_size"]))
        if size_text is not None:
            if not (size_text.isdigit() and int(size_text) >= 1):
                bad = next(p for p in pods if p.meta(ANNOTATIONS["gang_size"]) == size_text)
                raise InvalidInputError(f"{bad.where}.metadata.annotations[{ANNOTATIONS['gang_size']!r}]", size_text,
                                        "must be an integer >= 1")
            size = int(size_text)
        else:
            ns, _, name = jid.partition("/gang/")
            size = snap.pod_groups.get((ns, name), len(pods))
        if len(pods) < size:
            for p in pods:
                if p.node is None:
                    waiting.append((p.key, f"gang {jid} has {len(pods)} of its {size} pods"))
                else:
                    held.append(p)
            return None
    currents = {snap.nodes[p.node].offer(p.resource).pool.name for p in pods if p.node}  # type: ignore[union-attr]
    current_pool = pools[next(iter(currents))] if len(currents) == 1 and all(p.node for p in pods) else None
    usable: list[str] | None = None
    scale = 0.0
    for p in pods:
        own = pools[snap.nodes[p.node].offer(p.resource).pool.name] if p.node else None  # type: ignore[union-attr]
        share, names = _pod_pools(p, pools, members, own)
        if gang and names and not pools[names[0]].whole:
            raise InvalidInputError(f"{p.where}.spec.containers[].resources[{p.resource!r}]", p.units,
                                    f"a pod of gang {jid} asks for part of a GPU: gangs are whole GPUs")
        scale += share
        usable = names if usable is None else [n for n in usable if n in names]
    if not usable:
        for p in pods:
            if p.node is None:
                waiting.append((p.key, f"no schedulable node offers what {'its gang' if gang else 'it'} asks for "
                                       f"({p.units} {p.resource}, nodeSelector {dict(p.node_selector)})"))
        return None
    key = ANNOTATIONS["model"]
    model = _agree(pods, key, lambda p: p.meta(key)) or default_model
    if model is None:
        raise InvalidInputError(f"{pods[0].where}.metadata.annotations[{key!r}]", None,
                                "missing: name the pod's workload (a catalog model), or give a default model "
                                "(--default-model)")
    if model not in catalog.models:
        bad = next((p for p in pods if p.meta(key) == model), pods[0])
        raise InvalidInputError(f"{bad.where}.metadata.annotations[{key!r}]", model,
                                f"not a model of the catalog (e.g. {', '.join(catalog.models[:3])}; "
                                "`fairshare catalog --catalog modern` lists them)")
    weight = _agree(pods, ANNOTATIONS["weight"], lambda p: _number(p, ANNOTATIONS["weight"], 0.0, True))
    prio = _agree(pods, ANNOTATIONS["priority"], lambda p: _number(p, ANNOTATIONS["priority"], 0.0, False))
    if prio is None:
        classes = {p.priority for p in pods if p.priority is not None}
        prio = priority_of_class(max(classes)) if classes else 1.0
    rs = _agree(pods, ANNOTATIONS["restart"], lambda p: _number(p, ANNOTATIONS["restart"], 0.0, False))
    whole = pools[usable[0]].whole
    job_scale: int | float = int(round(scale)) if whole else float(scale)
    return KubeJob(jid, tuple(pods), job_scale, model, 1.0 if weight is None else weight, prio,
                   restart if rs is None else rs, tuple(usable), current_pool.name if current_pool else None)


def _throughputs(job: KubeJob, pools: Mapping[str, Pool], catalog: Any) -> dict[str, float]:
    out = {}
    for name in job.pools:
        pool = pools[name]
        if pool.whole:
            s = int(job.scale)
            t = catalog.alone_throughput(job.model, s, pool.gpu_type) if s in catalog.scales else 0.0
        else:
            t = float(job.scale) * catalog.alone_throughput(job.model, 1, pool.gpu_type)
        if t > 0:
            out[name] = float(t)
    if not out:
        p = job.pods[0]
        raise InvalidInputError(f"{p.where}.metadata.annotations[{ANNOTATIONS['model']!r}]", job.model,
                                f"the catalog has no throughput for this model on {job.scale:g} GPUs of "
                                f"{', '.join(sorted({pools[n].gpu_type for n in job.pools}))} (catalog scales: "
                                f"{', '.join(map(str, catalog.scales))})")
    return out


def _assemble(snap: Snapshot, pools: Mapping[str, Pool], members: Mapping[str, list[KubeNode]],
              jobs: dict[str, KubeJob], held: list[KubePod], waiting: list[tuple[str, str]], catalog: Any,
              round_seconds: float, epsilon: float, fairness_weight: float, deficits: Mapping[str, float]) -> KubeRound:
    held_units: dict[tuple[str, str], int] = defaultdict(int)
    for p in held:
        held_units[(p.node or "", p.resource)] += p.units
    nodes: list[dict[str, Any]] = []
    gpus = dict.fromkeys(pools, 0)
    node_of: dict[str, str] = {}
    round_node: dict[tuple[str, str], str] = {}
    for name in sorted({n.name for ms in members.values() for n in ms}):
        node = snap.nodes[name]
        for o in node.offers:
            left = o.units - held_units.get((name, o.pool.resource), 0)
            count = left if o.pool.whole else math.ceil(left * o.pool.unit - 1e-9)
            if count <= 0:
                continue
            rid = name if len(node.offers) == 1 else f"{name}|{o.pool.name}"
            nodes.append({"id": rid, "gpu": o.pool.name, "gpus": count})
            gpus[o.pool.name] += count
            node_of[rid] = name
            round_node[(name, o.pool.name)] = rid
    round_jobs = []
    for jid in sorted(jobs):
        job = jobs[jid]
        tput = {g: t for g, t in _throughputs(job, pools, catalog).items() if gpus[g] >= (job.scale if isinstance(
            job.scale, int) else 1)}
        if not tput:  # every pool it may use is full of pods that are not planned
            del jobs[jid]
            for p in job.pods:
                if p.node is None:
                    waiting.append((p.key, "the GPUs it may use are held by pods that are not planned (being "
                                           "deleted, or of an incomplete gang)"))
                else:
                    held.append(p)
            continue
        doc_job: dict[str, Any] = {"id": job.id, "scale": job.scale, "weight": job.weight}
        if job.priority != 1.0:
            doc_job["priority"] = job.priority
        if deficits.get(jid):
            doc_job["deficit"] = deficits[jid]
        doc_job["throughput"] = tput
        if job.current is not None and job.current in tput:
            doc_job["current"] = {"gpu": job.current, "partner": None}
            doc_job["restart_seconds"] = job.restart_seconds
        round_jobs.append(doc_job)
    doc: dict[str, Any] = {"gpus": gpus, "nodes": nodes, "jobs": round_jobs, "epsilon": epsilon,
                           "fairness_weight": fairness_weight, "round_seconds": round_seconds}
    sizes = {n["id"]: n["gpus"] for n in nodes}
    return KubeRound(doc, jobs, dict(pools), node_of, round_node, _previous(jobs, round_node, sizes), tuple(held),
                     tuple(waiting))


def _previous(jobs: Mapping[str, KubeJob], round_node: Mapping[tuple[str, str], str],
              sizes: Mapping[str, int]) -> dict[str, Any] | None:
    """The binding of the running jobs (node ids from the snapshot; GPU indices numbered per node)."""
    whole: dict[str, list[tuple[str, dict[str, int]]]] = defaultdict(list)
    frac: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for job in jobs.values():
        if job.current is None:
            continue
        per: dict[str, int] = defaultdict(int)
        for p in job.pods:
            rid = round_node.get((p.node or "", job.current))
            if rid is None:
                break
            per[rid] += p.units
        else:
            if isinstance(job.scale, int):
                whole[job.id].append((job.current, dict(per)))
            else:
                frac[next(iter(per))].append((job.id, float(job.scale)))
    placements = []
    used: dict[str, int] = defaultdict(int)
    for jid in sorted(whole):
        gpu, per = whole[jid][0]
        if any(used[r] + k > sizes[r] for r, k in per.items()):
            continue
        nodes = {r: list(range(used[r], used[r] + k)) for r, k in per.items()}
        for r, k in per.items():
            used[r] += k
        placements.append({"jobs": [jid], "gpu": gpu, "nodes": nodes, "share": 1.0})
    for rid in sorted(frac):
        items = sorted(frac[rid])
        free = sizes[rid] - used[rid]
        try:
            where = pack_shares([share_class(s) for _, s in items], free)
        except InvalidInputError:
            continue
        gpu = str(jobs[items[0][0]].current)
        for (jid, s), k in zip(items, where):
            placements.append({"jobs": [jid], "gpu": gpu, "nodes": {rid: [used[rid] + k]}, "share": s})
    return {"placements": placements, "split_gangs": 0, "moved_jobs": 0} if placements else None
