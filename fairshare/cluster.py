"""The cluster of a round: GPU types with their counts, and the nodes that hold them when they are named.

:class:`Cluster` is the one place a cluster is read and checked, whatever form it comes in: a mapping
``{"V100": 36}``, the text ``"V100=36,K80=36"``, node groups ``"36xV100:8,36xK80:4"``, a ``.json`` node file, or
a list of :class:`Node` objects or ``{"id", "gpu", "gpus"}`` objects (:meth:`Cluster.parse`). Each rule has one
check and one message, which names the field and the value:

* a GPU type is a non-empty string, listed once;
* a type holds an integer from 0 to :data:`MAX_GPUS` GPUs;
* a node has a non-empty id (unique), a GPU type and 1 to :data:`MAX_NODE_GPUS` GPUs;
* with nodes, the nodes of each type hold exactly the type's GPUs, and every node's type is a type of the cluster.

A cluster given by type has no nodes; given by nodes, its capacities are the nodes' totals per type. Whether a
cluster may have no GPU at all is the caller's rule (:meth:`Cluster.require_gpu`): a round needs one, an engine
whose last node failed keeps its types at 0.

:class:`Binding` and :class:`BoundPlacement` are a round's placements bound to node ids and GPU indices, the
result of :func:`fairshare.binding.bind` (the algorithm sits a layer up, beside the solve methods).

Examples
--------
>>> Cluster.parse("2xV100:8,1xK80:4").by_type()
{'V100': 16, 'K80': 4}
>>> Cluster.parse("V100=16,K80=4") == Cluster.parse({"V100": 16, "K80": 4})
True
>>> Cluster.parse({"V100": -1})
Traceback (most recent call last):
...
fairshare.errors.InvalidInputError: `cluster.V100` = -1: must be an integer from 0 to 2,147,483,648 (2**31)
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fairshare._io import ReadRefused, read_limited
from fairshare._validate import check_shape, clip, is_int, is_real
from fairshare.errors import InvalidInputError

__all__ = ["MAX_GPUS", "MAX_NODE_GPUS", "NODE_KEYS", "Binding", "BoundPlacement", "Cluster", "Node", "gpus_of_nodes",
           "parse_node_spec", "parse_nodes"]

#: Most GPUs of one type, and largest gang (2**31; with at most this many per type, totals fit in int64).
MAX_GPUS = 2**31
#: Most GPUs of one node.
MAX_NODE_GPUS = 2**20
#: Keys of a node object of the round document.
NODE_KEYS = frozenset({"id", "gpu", "gpus"})

_COUNT_RULE = f"must be an integer from 0 to {MAX_GPUS:,} (2**31)"
_BY_TYPE_RULE = "must be an object of GPU type -> number of GPUs"
_NODE_GROUP = re.compile(r"\s*(\d{1,9})\s*[xX]\s*([^:=,]+?)\s*:\s*(\d{1,9})\s*")


# ---------------------------------------------------------------------------------------------- nodes
@dataclass(frozen=True, slots=True)
class Node:
    """One node of the cluster: ``gpus`` GPUs of type ``gpu``, indexed ``0 .. gpus - 1``."""

    id: str
    gpu: str
    gpus: int

    def to_dict(self) -> dict[str, Any]:
        """The node's object of the round document."""
        return {"id": self.id, "gpu": self.gpu, "gpus": self.gpus}


def parse_nodes(value: object, field: str = "nodes") -> tuple[Node, ...]:
    """Check a node list (``Node`` objects or ``{"id", "gpu", "gpus"}`` objects) and return it as nodes.

    Raises
    ------
    InvalidInputError
        Naming the field (``nodes[3].gpus``) for: not a list, an entry that is not an object, an unknown or
        missing key, an id that is not a non-empty string or repeats, a type that is not a non-empty string,
        a GPU count that is not an integer from 1 to :data:`MAX_NODE_GPUS`.

    Examples
    --------
    >>> parse_nodes([{"id": "n0", "gpu": "V100", "gpus": 0}])
    Traceback (most recent call last):
    ...
    fairshare.errors.InvalidInputError: `nodes[0].gpus` = 0: must be an integer from 1 to 1048576
    """
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise InvalidInputError(field, clip(value), "must be a list of node objects {id, gpu, gpus}")
    out: list[Node] = []
    seen: set[str] = set()
    for i, item in enumerate(value):
        if type(item) is Node and type(item.id) is str and type(item.gpu) is str and type(item.gpus) is int \
                and item.id and item.gpu and 1 <= item.gpus <= MAX_NODE_GPUS and item.id not in seen:
            seen.add(item.id)  # already a valid node: the common case, checked cheaply
            out.append(item)
            continue
        where = f"{field}[{i}]"
        if isinstance(item, Node):
            item = item.to_dict()
        if not isinstance(item, Mapping):
            raise InvalidInputError(where, clip(item), "must be an object {id, gpu, gpus}")
        for key in item:
            if key not in NODE_KEYS:
                raise InvalidInputError(f"{where}.{key}", clip(item[key]), "unknown key (allowed: gpu, gpus, id)")
        for key in ("id", "gpu", "gpus"):
            if key not in item:
                raise InvalidInputError(f"{where}.{key}", None, "missing")
        nid, gpu, count = item["id"], item["gpu"], item["gpus"]
        if not isinstance(nid, str) or not nid:
            raise InvalidInputError(f"{where}.id", clip(nid), "must be a non-empty string")
        if nid in seen:
            raise InvalidInputError(f"{where}.id", nid, "duplicate node id")
        seen.add(nid)
        if not isinstance(gpu, str) or not gpu:
            raise InvalidInputError(f"{where}.gpu", clip(gpu), "must be a non-empty string (a GPU type)")
        if not (is_int(count) and not isinstance(count, float) and 1 <= count <= MAX_NODE_GPUS):
            raise InvalidInputError(f"{where}.gpus", clip(count), f"must be an integer from 1 to {MAX_NODE_GPUS}")
        out.append(Node(nid, gpu, int(count)))
    return tuple(out)


def parse_node_spec(spec: str, field: str = "nodes") -> tuple[Node, ...]:
    """``"36xV100:8,2xK80:4"`` (COUNTxTYPE:GPUS_PER_NODE groups) or the path of a ``.json`` node file, as nodes.

    Nodes are named ``TYPE-0``, ``TYPE-1``, ... per type, in the order given. A file holds a list of
    ``{"id", "gpu", "gpus"}`` objects, or an object with that list under ``nodes``; it is read size-limited
    (:data:`~fairshare.documents.MAX_JSON_BYTES`).

    >>> [n.id for n in parse_node_spec("2xV100:8,1xK80:4,1xV100:4")]
    ['V100-0', 'V100-1', 'K80-0', 'V100-2']
    """
    text = str(spec)
    if text.strip().lower().endswith(".json"):
        from fairshare.documents import read_json  # documents imports the round problem, which imports this

        doc = read_json(_read_node_file(text.strip(), field), what=field)
        return parse_nodes(doc["nodes"] if isinstance(doc, dict) and "nodes" in doc else doc, field)
    nodes: list[Node] = []
    per_type: dict[str, int] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        m = _NODE_GROUP.fullmatch(part)
        if m is None:
            raise InvalidInputError(field, spec, f"expected COUNTxTYPE:GPUS_PER_NODE groups, got {part.strip()!r}")
        count, gpu, size = int(m.group(1)), m.group(2), int(m.group(3))
        if count < 1 or not 1 <= size <= MAX_NODE_GPUS:
            raise InvalidInputError(field, part.strip(), f"needs at least 1 node of 1 to {MAX_NODE_GPUS} GPUs")
        first = per_type.get(gpu, 0)
        nodes += [Node(f"{gpu}-{first + i}", gpu, size) for i in range(count)]
        per_type[gpu] = first + count
    if not nodes:
        raise InvalidInputError(field, spec, "no node")
    return parse_nodes(nodes, field)


def _read_node_file(path: str, field: str) -> bytes:
    """The bytes of a node file; a file over :data:`~fairshare.documents.MAX_JSON_BYTES` is refused by size."""
    from fairshare.documents import MAX_JSON_BYTES

    try:
        return read_limited(path, MAX_JSON_BYTES)
    except ReadRefused as why:
        if why.kind in ("size", "overflow"):  # read_json's wording, with the size when it is known
            size = MAX_JSON_BYTES + 1 if why.size is None else why.size
            raise InvalidInputError(field, f"{size} bytes", f"larger than the limit of {MAX_JSON_BYTES} bytes "
                                    f"({MAX_JSON_BYTES // 2**20} MiB)") from None
        exc = why.error  # "open", "read" or "folder": the OSError
        reason = why.kind if exc is None else exc.strerror or exc
        raise InvalidInputError(field, path, f"cannot read the node file ({reason})") from None


def gpus_of_nodes(nodes: Iterable[Node]) -> dict[str, int]:
    """GPUs per type of a node list, types in order of first appearance.

    >>> gpus_of_nodes([Node("a", "V100", 8), Node("b", "K80", 4), Node("c", "V100", 8)])
    {'V100': 16, 'K80': 4}
    """
    out: dict[str, int] = {}
    for n in nodes:
        out[n.gpu] = out.get(n.gpu, 0) + n.gpus
    return out


# ---------------------------------------------------------------------------------------------- the cluster
def _count(value: object, field: str, whole_floats: bool) -> int:
    """``value`` as a GPU count (an integer from 0 to :data:`MAX_GPUS`), else the error naming ``field``.

    Bools are no counts; floats are only with ``whole_floats`` (numbers of a JSON round document, arrays).
    """
    n: int | None = None
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        n = int(value)
    elif whole_floats and isinstance(value, (float, np.floating)) and math.isfinite(value) \
            and float(value).is_integer():
        n = int(value)
    if n is None or not 0 <= n <= MAX_GPUS:
        raise InvalidInputError(field, clip(value), _COUNT_RULE)
    return n


def _checked_types(types: Iterable[object], field: str) -> tuple[str, ...]:
    """The GPU type names, each a non-empty string listed once."""
    out: list[str] = []
    seen: set[str] = set()
    for g in types:
        if not isinstance(g, str) or not g:
            raise InvalidInputError(field, clip(g), "GPU types must be non-empty strings")
        if g in seen:
            raise InvalidInputError(field, g, "duplicate GPU type")
        seen.add(g)
        out.append(g)
    return tuple(out)


@dataclass(frozen=True, slots=True, init=False)
class Cluster:
    """A cluster: GPU types, whole GPUs of each, and the nodes holding them when they are named (validated).

    Parameters
    ----------
    gpu_types : sequence of str
        The GPU type names, each a non-empty string, listed once; their order is kept.
    capacity : sequence or array of int, shape (G,)
        GPUs of each type, an integer from 0 to :data:`MAX_GPUS` (whole floats such as ``2.0`` count as
        integers here, as in an array or a JSON round document).
    nodes : sequence of Node or of node objects, optional
        The nodes (:func:`parse_nodes`); the nodes of each type must hold exactly its ``capacity``. Default:
        none (the cluster is known by type only).

    Attributes
    ----------
    gpu_types : tuple of str
    capacity : tuple of int
        Aligned with ``gpu_types``.
    nodes : tuple of Node
        Empty for a cluster given by type.

    Raises
    ------
    InvalidInputError
        Naming the field as a round document does (``gpus``, ``gpus.V100``, ``nodes[2].gpus``, ``nodes``).

    Examples
    --------
    >>> c = Cluster(("V100", "K80"), (8, 4), [Node("n0", "V100", 8), Node("n1", "K80", 4)])
    >>> c.by_type(), c.total_gpus
    ({'V100': 8, 'K80': 4}, 12)
    >>> Cluster(("V100",), (4,), [Node("n0", "V100", 8)])
    Traceback (most recent call last):
    ...
    fairshare.errors.InvalidInputError: `nodes` = {'V100': 8}: the nodes of type 'V100' hold 8 GPUs, but \
`gpus.V100` is 4: they must be equal
    """

    gpu_types: tuple[str, ...]
    capacity: tuple[int, ...]
    nodes: tuple[Node, ...]

    def __init__(self, gpu_types: Sequence[str], capacity: Sequence[int] | np.ndarray,
                 nodes: Sequence[Node | Mapping[str, Any]] | None = None) -> None:
        types = _checked_types(gpu_types, "gpus")
        cap = np.asarray(capacity, dtype=object if not isinstance(capacity, np.ndarray) else None)
        check_shape(cap, (len(types),), "gpus")
        values = cap.tolist()  # Python scalars, shown as written
        counts = tuple(_count(v, f"gpus.{g}", True) for g, v in zip(types, values))
        self._set(types, counts, _checked_nodes(nodes, types, counts, "nodes", "nodes"))

    def _set(self, types: tuple[str, ...], counts: tuple[int, ...], nodes: tuple[Node, ...]) -> None:
        object.__setattr__(self, "gpu_types", types)
        object.__setattr__(self, "capacity", counts)
        object.__setattr__(self, "nodes", nodes)

    @classmethod
    def _of(cls, types: tuple[str, ...], counts: tuple[int, ...], nodes: tuple[Node, ...]) -> Cluster:
        """The cluster of values already checked."""
        self = object.__new__(cls)
        self._set(types, counts, nodes)
        return self

    # ------------------------------------------------------------------ the ways in
    @classmethod
    def of_counts(cls, counts: object, field: str = "gpus", *, whole_floats: bool = False) -> Cluster:
        """The cluster ``{type: GPUs}`` (no nodes), its types in the mapping's order.

        ``whole_floats``: accept ``2.0`` as the count 2 (the numbers of a JSON round document); by default a
        count must be an int (numpy integers included), as in the engine's state document.

        Raises
        ------
        InvalidInputError
            ``field`` for a value that is not a mapping or a type name that is not a non-empty string;
            ``field.TYPE`` for a count that is not an integer from 0 to :data:`MAX_GPUS`.
        """
        if not isinstance(counts, Mapping):
            raise InvalidInputError(field, clip(counts), _BY_TYPE_RULE)
        return cls._of_items(list(counts.items()), field, whole_floats)

    @classmethod
    def _of_items(cls, items: list[tuple[object, object]], field: str, whole_floats: bool = False) -> Cluster:
        types = _checked_types((g for g, _ in items), field)
        return cls._of(types, tuple(_count(c, f"{field}.{g}", whole_floats) for g, (_, c) in zip(types, items)), ())

    @classmethod
    def of_nodes(cls, nodes: object, field: str = "nodes", *, types: Sequence[str] = ()) -> Cluster:
        """The cluster of these nodes: its capacities are their totals per type (types in order of first use).

        ``types``: GPU types listed first, in this order, with 0 GPUs unless a node has them (a cluster whose
        last node of a type went keeps the type).

        Raises
        ------
        InvalidInputError
            As :func:`parse_nodes`, naming ``field``.
        """
        node_list = parse_nodes(nodes, field)
        totals = {**dict.fromkeys(types, 0), **gpus_of_nodes(node_list)}
        by_type = cls._of_items(list(totals.items()), field)
        return cls._of(by_type.gpu_types, by_type.capacity, node_list)

    @classmethod
    def parse(cls, spec: object, field: str = "cluster") -> Cluster:
        """A cluster in any of the forms fairshare reads.

        * a :class:`Cluster` (returned as it is);
        * a mapping ``{"V100": 36, ...}`` or the text ``"V100=36,K80=36"`` (by type, no nodes);
        * the text ``"36xV100:8,36xK80:4"`` or the path of a ``.json`` node file (:func:`parse_node_spec`);
        * a list of :class:`Node` objects or ``{"id", "gpu", "gpus"}`` objects.

        With nodes, the capacities are the nodes' totals per type. Errors about the cluster by type name
        ``field`` (``cluster.V100``); errors about nodes name ``nodes`` (``nodes[2].gpus``).

        Examples
        --------
        >>> Cluster.parse("V100=2,K80=1")
        Cluster(gpu_types=('V100', 'K80'), capacity=(2, 1), nodes=())
        >>> Cluster.parse("V100")
        Traceback (most recent call last):
        ...
        fairshare.errors.InvalidInputError: `cluster` = 'V100': expected TYPE=COUNT pairs, got 'V100'
        """
        if isinstance(spec, Cluster):
            return spec
        if isinstance(spec, str):
            if "=" not in spec and (":" in spec or spec.strip().lower().endswith(".json")):
                return cls.of_nodes(parse_node_spec(spec))
            return cls._of_items(_items_of_text(spec, field), field)
        if isinstance(spec, Mapping):
            return cls.of_counts(spec, field)
        if isinstance(spec, Sequence) and not isinstance(spec, bytes):
            return cls.of_nodes(spec)
        raise InvalidInputError(field, clip(spec), f"{_BY_TYPE_RULE}, a text (\"V100=36\" or \"36xV100:8\"), a "
                                ".json node file or a list of nodes")

    # ------------------------------------------------------------------ derived clusters
    def with_nodes(self, nodes: object, field: str = "nodes") -> Cluster:
        """The same types and capacities with these nodes (``None`` or an empty list: none), checked against them.

        Raises
        ------
        InvalidInputError
            As :func:`parse_nodes`; ``field[i].gpu`` for a node whose type is not a type of the cluster;
            ``field`` for a type whose nodes do not hold exactly its GPUs.
        """
        return Cluster._of(self.gpu_types, self.capacity,
                           _checked_nodes(nodes, self.gpu_types, self.capacity, field, field))

    def require_gpu(self, field: str = "gpus") -> Cluster:
        """The cluster itself if it has at least one GPU; else an error naming ``field`` (a round needs a GPU).

        >>> Cluster.parse("V100=0").require_gpu("cluster")
        Traceback (most recent call last):
        ...
        fairshare.errors.InvalidInputError: `cluster` = {'V100': 0}: the cluster has no GPU
        """
        if not any(self.capacity):
            raise InvalidInputError(field, self.by_type(), "the cluster has no GPU")
        return self

    # ------------------------------------------------------------------ views
    def by_type(self) -> dict[str, int]:
        """GPU type -> GPUs, in the cluster's order (a new dict)."""
        return dict(zip(self.gpu_types, self.capacity))

    @property
    def total_gpus(self) -> int:
        """GPUs of every type together."""
        return sum(self.capacity)

    def capacity_array(self) -> np.ndarray:
        """``capacity`` as an int64 array."""
        return np.array(self.capacity, dtype=np.int64)


def _items_of_text(spec: str, field: str) -> list[tuple[object, object]]:
    """``"V100=36,K80=36"`` as ``[("V100", 36), ("K80", 36)]`` (names stripped; counts checked by the caller)."""
    items: list[tuple[object, object]] = []
    for part in spec.split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise InvalidInputError(field, spec, f"expected TYPE=COUNT pairs, got {part!r}")
        gpu, _, text = part.partition("=")
        gpu, text = gpu.strip(), text.strip()
        if not (text.isascii() and text.isdigit() and len(text) <= 12):
            raise InvalidInputError(f"{field}.{gpu}", clip(text), _COUNT_RULE)
        items.append((gpu, int(text)))
    return items


def _checked_nodes(value: object, types: tuple[str, ...], counts: tuple[int, ...], field: str,
                   totals_field: str) -> tuple[Node, ...]:
    """The nodes ``value`` (none for ``None`` or an empty list), which must hold exactly ``counts`` of ``types``."""
    if value is None:
        return ()
    nodes = parse_nodes(value, field if field.endswith("nodes") else "nodes")
    if not nodes:
        return ()
    known = set(types)
    for i, n in enumerate(nodes):
        if n.gpu not in known:
            raise InvalidInputError(f"{field}[{i}].gpu", n.gpu, "GPU type is not in `gpus`")
    totals = gpus_of_nodes(nodes)
    for g, c in zip(types, counts):
        if totals.get(g, 0) != c:
            raise InvalidInputError(totals_field, {g: totals.get(g, 0)}, f"the nodes of type {g!r} hold "
                                    f"{totals.get(g, 0)} GPUs, but `gpus.{g}` is {c}: they must be equal")
    return nodes


# ---------------------------------------------------------------------------------------------- bound placements
@dataclass(frozen=True, slots=True)
class BoundPlacement:
    """A placement bound to GPUs: ``gpus`` lists ``(node id, GPU index)`` pairs in node order, then index order.

    ``share`` is 1 for a whole-GPU placement (a job or a co-located pair on ``len(gpus)`` GPUs) and the
    job's share of its one GPU for a fractional job.
    """

    jobs: tuple[str, ...]
    gpu: str
    gpus: tuple[tuple[str, int], ...]
    share: float = 1.0

    @property
    def nodes(self) -> dict[str, list[int]]:
        """Node id -> GPU indices used on it (nodes in order of first use)."""
        out: dict[str, list[int]] = {}
        for node, idx in self.gpus:
            out.setdefault(node, []).append(idx)
        return out

    @property
    def split(self) -> bool:
        """The placement spans more than one node."""
        return len({n for n, _ in self.gpus}) > 1

    def to_dict(self) -> dict[str, Any]:
        """``{"jobs", "gpu", "nodes": {node id: [indices]}, "share"}``."""
        return {"jobs": list(self.jobs), "gpu": self.gpu, "nodes": self.nodes, "share": self.share}


@dataclass(frozen=True, slots=True)
class Binding:
    """Every placement of a round bound to node ids and GPU indices (:func:`fairshare.binding.bind`).

    Attributes
    ----------
    placements : tuple of BoundPlacement
        One per whole-GPU placement, in the order of the placements given, then one per fractional job.
    split_gangs : int
        Whole-GPU placements spread over more than one node.
    moved_jobs : int
        Jobs that held GPUs in the previous binding and hold a different set now.
    seconds : float
        Wall time of the binding.
    """

    placements: tuple[BoundPlacement, ...]
    split_gangs: int
    moved_jobs: int
    seconds: float = 0.0

    def gpus_of(self) -> dict[str, tuple[str, tuple[tuple[str, int], ...]]]:
        """Job id -> (GPU type, its GPUs)."""
        return {j: (p.gpu, p.gpus) for p in self.placements for j in p.jobs}

    def to_dict(self) -> dict[str, Any]:
        """The ``binding`` object of the round output (docs/json-formats.md)."""
        return {"placements": [p.to_dict() for p in self.placements], "split_gangs": self.split_gangs,
                "moved_jobs": self.moved_jobs, "seconds": self.seconds}

    @classmethod
    def from_dict(cls, doc: object, field: str = "binding") -> Binding:
        """Rebuild a binding from :meth:`to_dict` output.

        Raises
        ------
        InvalidInputError
            Naming the key (``binding.placements[2].nodes``) that is missing or malformed.
        """
        if not isinstance(doc, Mapping):
            raise InvalidInputError(field, clip(doc), "must be a binding object")
        raw = doc.get("placements")
        if not isinstance(raw, list):
            raise InvalidInputError(f"{field}.placements", clip(raw), "must be a list")
        out = []
        for i, p in enumerate(raw):
            where = f"{field}.placements[{i}]"
            if not isinstance(p, Mapping):
                raise InvalidInputError(where, clip(p), "must be an object")
            jobs, gpu, nodes, share = p.get("jobs"), p.get("gpu"), p.get("nodes"), p.get("share", 1.0)
            if not (isinstance(jobs, list) and jobs and all(isinstance(j, str) for j in jobs)):
                raise InvalidInputError(f"{where}.jobs", clip(jobs), "must be a non-empty list of job ids")
            if not isinstance(gpu, str):
                raise InvalidInputError(f"{where}.gpu", clip(gpu), "must be a GPU type")
            if not (isinstance(nodes, Mapping) and nodes and all(
                    isinstance(v, list) and v and all(is_int(x) and not isinstance(x, float) and x >= 0 for x in v)
                    for v in nodes.values())):
                raise InvalidInputError(f"{where}.nodes", clip(nodes),
                                        "must be an object of node id -> non-empty list of GPU indices")
            if not (is_real(share) and 0 < share <= 1):
                raise InvalidInputError(f"{where}.share", clip(share), "must be a number in (0, 1]")
            gpus = tuple((str(n), int(x)) for n, v in nodes.items() for x in v)
            out.append(BoundPlacement(tuple(jobs), gpu, gpus, float(share)))
        counts = {}
        for key in ("split_gangs", "moved_jobs"):
            v = doc.get(key, 0)
            if not (is_int(v) and not isinstance(v, float) and v >= 0):
                raise InvalidInputError(f"{field}.{key}", clip(v), "must be an integer >= 0")
            counts[key] = int(v)
        secs = doc.get("seconds", 0.0)
        if not (is_real(secs) and secs >= 0):
            raise InvalidInputError(f"{field}.seconds", clip(secs), "must be a number >= 0")
        return cls(tuple(out), counts["split_gangs"], counts["moved_jobs"], float(secs))
