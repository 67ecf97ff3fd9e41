"""Reading a cluster snapshot: the ``List`` that ``kubectl get nodes,pods -A -o json`` prints.

What is read, and nothing else:

- ``Node``: ``metadata.name``, ``metadata.labels`` (GPU feature discovery's ``nvidia.com/gpu.product``,
  ``nvidia.com/gpu.replicas``, ``nvidia.com/gpu.sharing-strategy``, ``nvidia.com/mig.strategy``),
  ``status.allocatable`` (``nvidia.com/gpu``, ``nvidia.com/gpu.shared``, ``nvidia.com/mig-<profile>``),
  ``spec.unschedulable`` and the ``Ready`` condition. Every GPU resource of a node becomes an *offer* of a
  *pool* (:class:`Pool`): whole GPUs of one type, time-sliced or MPS replicas (``R`` per GPU, each ``1/R`` of
  it), or MIG slices of one profile (each its memory share, :func:`fairshare.kube.products.mig_share`).
- ``Pod``: ``metadata`` (namespace, name, uid, labels, annotations, ``deletionTimestamp``),
  ``spec.nodeName``, ``spec.nodeSelector``, ``spec.priority``, the GPU resources of ``spec.containers`` and
  ``spec.initContainers`` (``requests``, or ``limits`` where a request is missing; a pod asks for the sum
  over its containers or the largest init container's, whichever is larger, as Kubernetes counts), and
  ``status.phase``. Pods with no GPU request are counted and left out.
- ``PodGroup`` (the coscheduling plugin's, ``scheduling.x-k8s.io``): ``spec.minMember``, the size of a gang.

Other kinds are counted and left out. Errors raise :class:`~fairshare.errors.InvalidInputError` whose field
names the object (``items[4] (Pod ml/train-0)``) and the key (``.spec.containers[0].resources.requests...``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fairshare._validate import clip
from fairshare.errors import InvalidInputError
from fairshare.kube.products import catalog_type, mig_share, split_mig_product

__all__ = ["GPU", "GPU_SHARED", "MIG_PREFIX", "KubeNode", "KubePod", "Offer", "Pool", "Snapshot", "read_snapshot"]

GPU = "nvidia.com/gpu"
GPU_SHARED = "nvidia.com/gpu.shared"
MIG_PREFIX = "nvidia.com/mig-"
PRODUCT_LABEL = "nvidia.com/gpu.product"
REPLICAS_LABEL = "nvidia.com/gpu.replicas"
SHARING_LABEL = "nvidia.com/gpu.sharing-strategy"
MIG_STRATEGY_LABEL = "nvidia.com/mig.strategy"

_DIGITS = re.compile(r"^[0-9]+$")


@dataclass(frozen=True, slots=True)
class Pool:
    """GPUs offered the same way: one GPU type of the round document.

    ``name`` is the round's GPU type: the catalog type for whole GPUs (``A100-80GB``),
    ``<type>:time-slicing/<R>`` or ``<type>:mps/<R>`` for replicas (``...:shared`` when offered as
    ``nvidia.com/gpu.shared``), ``<type>:mig-<profile>`` for MIG slices (``.../single`` under the single
    strategy, whose slices are offered as ``nvidia.com/gpu``).
    ``unit`` is the share of one GPU that one unit of ``resource`` gives (1 for whole GPUs).
    """

    name: str
    gpu_type: str
    kind: str        # "whole", "time-slicing", "mps" or "mig"
    resource: str
    unit: float

    @property
    def whole(self) -> bool:
        """Whether a unit is a whole GPU."""
        return self.kind == "whole"


@dataclass(frozen=True, slots=True)
class Offer:
    """``units`` of a pool's resource allocatable on one node."""

    pool: Pool
    units: int

    @property
    def gpus(self) -> int:
        """GPUs of the round this offer counts: its units for whole GPUs, else ``ceil(units x unit)``."""
        return self.units if self.pool.whole else math.ceil(self.units * self.pool.unit - 1e-9)


@dataclass(frozen=True, slots=True)
class KubeNode:
    """A node with GPUs: its offers and whether new pods may go there."""

    name: str
    where: str
    labels: Mapping[str, str]
    offers: tuple[Offer, ...]
    schedulable: bool

    def offer(self, resource: str) -> Offer | None:
        """The node's offer of ``resource``, if any."""
        return next((o for o in self.offers if o.pool.resource == resource), None)


@dataclass(frozen=True, slots=True)
class KubePod:
    """A pod that asks for GPUs: ``units`` of one GPU ``resource``."""

    namespace: str
    name: str
    where: str
    uid: str | None
    phase: str
    node: str | None
    resource: str
    units: int
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    node_selector: Mapping[str, str]
    priority: int | None
    terminating: bool

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    def meta(self, key: str) -> str | None:
        """The value of ``key`` among the annotations, else the labels."""
        return self.annotations.get(key, self.labels.get(key))


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a snapshot holds for planning, and what was left out (``ignored``: reason -> count)."""

    nodes: Mapping[str, KubeNode]
    pods: tuple[KubePod, ...]
    pod_groups: Mapping[tuple[str, str], int]
    ignored: Mapping[str, int] = field(default_factory=dict)


def _obj(value: object, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError(where, clip(value), "must be an object")
    return value


def _strings(value: object, where: str) -> dict[str, str]:
    out = dict(_obj(value, where))
    for k, v in out.items():
        if not isinstance(v, str):
            raise InvalidInputError(f"{where}[{k!r}]", clip(v), "must be a string")
    return out


def quantity(value: object, where: str) -> int:
    """A count of a device-plugin resource: an integer >= 0, or a string of digits (``"2"``).

    >>> quantity("4", "x"), quantity(2, "x")
    (4, 2)
    """
    if isinstance(value, bool):
        raise InvalidInputError(where, value, "must be a whole number of devices >= 0")
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, str) and _DIGITS.match(value):
        return int(value)
    raise InvalidInputError(where, clip(value), "must be a whole number of devices >= 0 (GPU resources cannot "
                            "be fractional or negative)")


def read_snapshot(doc: object, products: Mapping[str, str] | None = None) -> Snapshot:
    """Read a ``kubectl get nodes,pods -A -o json`` document.

    Parameters
    ----------
    doc : dict
        A ``List`` (``apiVersion: v1``) or a ``NodeList``/``PodList``, or several concatenated into one list.
    products : mapping, optional
        GPU product label -> catalog GPU type, looked up before :data:`fairshare.kube.products.PRODUCTS`.

    Raises
    ------
    InvalidInputError
        If the document is not a list of objects, an object has no name, two objects of one kind share a
        namespace and name, or a node or pod is malformed; the field names the object and the key.
    """
    if not isinstance(doc, Mapping):
        raise InvalidInputError("snapshot", clip(doc), "must be a JSON object: a v1 List of Node and Pod objects "
                                "(kubectl get nodes,pods -A -o json)")
    kind = doc.get("kind")
    if kind not in ("List", "NodeList", "PodList"):
        raise InvalidInputError("snapshot.kind", clip(kind), "must be List (kubectl get nodes,pods -A -o json), "
                                "NodeList or PodList")
    items = doc.get("items")
    if not isinstance(items, list):
        raise InvalidInputError("snapshot.items", clip(items), "must be a list of objects")
    extra = dict(products or {})
    ignored: Counter[str] = Counter()
    nodes: dict[str, KubeNode] = {}
    raw_pods: list[KubePod] = []
    groups: dict[tuple[str, str], int] = {}
    seen: dict[tuple[str, str, str], int] = {}
    names: set[str] = set()
    item_kind = {"NodeList": "Node", "PodList": "Pod"}.get(str(kind))
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InvalidInputError(f"items[{i}]", clip(item), "must be an object")
        k = item.get("kind", item_kind)
        meta = _obj(item.get("metadata"), f"items[{i}].metadata")
        name = meta.get("name")
        if k not in ("Node", "Pod", "PodGroup"):
            ignored[f"objects of kind {k}"] += 1
            continue
        if not (isinstance(name, str) and name):
            raise InvalidInputError(f"items[{i}] ({k}).metadata.name", clip(name), "must be a non-empty string")
        ns = meta.get("namespace", "default") if k != "Node" else ""
        if not (isinstance(ns, str) and (ns or k == "Node")):
            raise InvalidInputError(f"items[{i}] ({k} {name}).metadata.namespace", clip(ns),
                                    "must be a non-empty string")
        ident = (str(k), ns, name)
        shown = f"{ns}/{name}" if ns else name
        where = f"items[{i}] ({k} {shown})"
        if ident in seen:
            raise InvalidInputError(f"{where}.metadata.name", name, f"duplicate: items[{seen[ident]}] is the same "
                                    f"{k}")
        seen[ident] = i
        if k == "Node":
            names.add(name)
            node = _node(item, name, where, extra, ignored)
            if node is not None:
                nodes[name] = node
        elif k == "PodGroup":
            mm = _obj(item.get("spec"), f"{where}.spec").get("minMember", 1)
            if isinstance(mm, bool) or not isinstance(mm, int) or mm < 1:
                raise InvalidInputError(f"{where}.spec.minMember", clip(mm), "must be an integer >= 1")
            groups[(ns, name)] = mm
        else:
            pod = _pod(item, ns, name, where, ignored)
            if pod is not None:
                raw_pods.append(pod)
    for pod in raw_pods:
        if pod.node is None:
            continue
        if pod.node not in names:
            raise InvalidInputError(f"{pod.where}.spec.nodeName", pod.node, "unknown node: no Node of that name in "
                                    "the snapshot")
        node = nodes.get(pod.node)
        if node is None or node.offer(pod.resource) is None:
            raise InvalidInputError(f"{pod.where}.spec.nodeName", pod.node, f"the node offers no {pod.resource} "
                                    "(status.allocatable), but the pod asks for it")
    return Snapshot(nodes, tuple(raw_pods), groups, dict(ignored))


def _node(item: Mapping[str, Any], name: str, where: str, extra: Mapping[str, str],
          ignored: Counter[str]) -> KubeNode | None:
    labels = _strings(_obj(item.get("metadata"), where + ".metadata").get("labels"), f"{where}.metadata.labels")
    status = _obj(item.get("status"), f"{where}.status")
    alloc = _obj(status.get("allocatable"), f"{where}.status.allocatable")
    gpu_keys = [r for r in alloc if r in (GPU, GPU_SHARED) or r.startswith(MIG_PREFIX)]
    units = {r: quantity(alloc[r], f"{where}.status.allocatable[{r!r}]") for r in gpu_keys}
    product = labels.get(PRODUCT_LABEL)
    if not any(units.values()):
        ignored["nodes without allocatable GPUs" if product else "nodes without GPUs"] += 1
        return None
    plabel = f"{where}.metadata.labels[{PRODUCT_LABEL!r}]"
    if product is None:
        raise InvalidInputError(plabel, None, f"missing: the node has {', '.join(r for r in units if units[r])} "
                                "allocatable but no GPU product label (is GPU feature discovery running?)")
    base, single_profile = split_mig_product(product)
    gpu_type = catalog_type(base, extra, plabel)
    strategy = labels.get(MIG_STRATEGY_LABEL, "none")
    replicas_text = labels.get(REPLICAS_LABEL, "1")
    if not _DIGITS.match(replicas_text) or int(replicas_text) < 1:
        raise InvalidInputError(f"{where}.metadata.labels[{REPLICAS_LABEL!r}]", replicas_text,
                                "must be an integer >= 1")
    replicas = int(replicas_text)
    sharing = labels.get(SHARING_LABEL, "time-slicing" if replicas > 1 else "none")
    if replicas > 1 and sharing not in ("time-slicing", "mps"):
        raise InvalidInputError(f"{where}.metadata.labels[{SHARING_LABEL!r}]", sharing,
                                "must be time-slicing or mps on a node with gpu.replicas > 1")
    offers = []
    for r, n in units.items():
        if n == 0:
            continue
        at = f"{where}.status.allocatable[{r!r}]"
        if r.startswith(MIG_PREFIX):
            profile = r[len(MIG_PREFIX):]
            offers.append(Offer(Pool(f"{gpu_type}:mig-{profile}", gpu_type, "mig", r,
                                     mig_share(profile, gpu_type, at)), n))
        elif r == GPU and (single_profile is not None or strategy == "single"):
            if single_profile is None:
                raise InvalidInputError(plabel, product, "the node's MIG strategy is single, so its product "
                                        "label must name the slice (<product>-MIG-<profile>)")
            offers.append(Offer(Pool(f"{gpu_type}:mig-{single_profile}/single", gpu_type, "mig", r,
                                     mig_share(single_profile, gpu_type, plabel)), n))
        elif r == GPU_SHARED or replicas > 1:
            if replicas < 2:
                raise InvalidInputError(f"{where}.metadata.labels[{REPLICAS_LABEL!r}]", replicas_text,
                                        f"the node offers {GPU_SHARED} but no replica count > 1")
            if n % replicas:
                raise InvalidInputError(at, n, f"not a multiple of the node's {replicas} replicas per GPU")
            suffix = ":shared" if r == GPU_SHARED else ""
            offers.append(Offer(Pool(f"{gpu_type}:{sharing}/{replicas}{suffix}", gpu_type, sharing, r,
                                     1.0 / replicas), n))
        else:
            offers.append(Offer(Pool(gpu_type, gpu_type, "whole", r, 1.0), n))
    spec = _obj(item.get("spec"), f"{where}.spec")
    conditions = status.get("conditions") or []
    if not isinstance(conditions, list):
        raise InvalidInputError(f"{where}.status.conditions", clip(conditions), "must be a list")
    ready = all(c.get("status") == "True" for c in conditions if isinstance(c, Mapping) and c.get("type") == "Ready")
    return KubeNode(name, where, labels, tuple(offers), ready and spec.get("unschedulable") is not True)


def _requests(spec: Mapping[str, Any], where: str) -> dict[str, int]:
    """GPU resources the pod asks for: max(sum over containers, largest init container), per resource."""
    totals: dict[str, int] = {}
    init: dict[str, int] = {}
    for key, acc, add in (("containers", totals, True), ("initContainers", init, False)):
        conts = spec.get(key) or []
        if not isinstance(conts, list):
            raise InvalidInputError(f"{where}.spec.{key}", clip(conts), "must be a list")
        for c, cont in enumerate(conts):
            at = f"{where}.spec.{key}[{c}].resources"
            res = _obj(_obj(cont, f"{where}.spec.{key}[{c}]").get("resources"), at)
            req = _obj(res.get("requests"), at + ".requests")
            lim = _obj(res.get("limits"), at + ".limits")
            for r in {*req, *lim}:
                if not (r in (GPU, GPU_SHARED) or r.startswith(MIG_PREFIX)):
                    continue
                part = "requests" if r in req else "limits"
                n = quantity((req if r in req else lim)[r], f"{at}.{part}[{r!r}]")
                if r in req and r in lim and quantity(lim[r], f"{at}.limits[{r!r}]") != n:
                    raise InvalidInputError(f"{at}.limits[{r!r}]", lim[r], f"must equal the request ({n}): "
                                            "GPU resources cannot be overcommitted")
                acc[r] = acc.get(r, 0) + n if add else max(acc.get(r, 0), n)
    return {r: max(totals.get(r, 0), init.get(r, 0)) for r in {*totals, *init} if max(totals.get(r, 0),
                                                                                      init.get(r, 0)) > 0}


def _pod(item: Mapping[str, Any], ns: str, name: str, where: str, ignored: Counter[str]) -> KubePod | None:
    meta = _obj(item.get("metadata"), f"{where}.metadata")
    spec = _obj(item.get("spec"), f"{where}.spec")
    status = _obj(item.get("status"), f"{where}.status")
    asks = _requests(spec, where)
    phase = status.get("phase", "Pending")
    if not isinstance(phase, str):
        raise InvalidInputError(f"{where}.status.phase", clip(phase), "must be a string")
    if not asks:
        ignored["pods without GPU requests"] += 1
        return None
    if phase in ("Succeeded", "Failed"):
        ignored["finished pods (Succeeded or Failed)"] += 1
        return None
    if len(asks) > 1:
        kinds = sorted(asks)
        raise InvalidInputError(f"{where}.spec.containers[].resources", {r: asks[r] for r in kinds},
                                "asks for more than one kind of GPU resource (e.g. whole GPUs and MIG slices); "
                                "a pod must ask for one")
    (resource, units), = asks.items()
    if resource.startswith(MIG_PREFIX) and units != 1:
        raise InvalidInputError(f"{where}.spec.containers[].resources[{resource!r}]", units,
                                "fairshare plans a pod on MIG as one slice of one GPU: ask for 1")
    node = spec.get("nodeName")
    if node is not None and not (isinstance(node, str) and node):
        raise InvalidInputError(f"{where}.spec.nodeName", clip(node), "must be a node name")
    prio = spec.get("priority")
    if prio is not None and (isinstance(prio, bool) or not isinstance(prio, int)):
        raise InvalidInputError(f"{where}.spec.priority", clip(prio), "must be an integer (a PriorityClass value)")
    uid = meta.get("uid")
    return KubePod(ns, name, where, uid if isinstance(uid, str) and uid else None, phase, node, resource, units,
                   _strings(meta.get("labels"), f"{where}.metadata.labels"),
                   _strings(meta.get("annotations"), f"{where}.metadata.annotations"),
                   _strings(spec.get("nodeSelector"), f"{where}.spec.nodeSelector"), prio,
                   meta.get("deletionTimestamp") is not None)
