"""A simulation's cluster as text, a mapping or nodes: GPUs per type, and the nodes when given.

``"V100=36,K80=36"`` or a mapping gives GPUs per type; ``"36xV100:8,36xK80:4"``, a ``.json`` node file or a list
of ``{"id", "gpu", "gpus"}`` objects gives nodes, whose totals per type are the capacities. Every count is
checked and a bad one is refused naming the field and the value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from fairshare._io import ReadRefused, read_limited
from fairshare._validate import clip
from fairshare.binding import MAX_NODE_GPUS, Node, gpus_of_nodes, parse_nodes
from fairshare.documents import MAX_JSON_BYTES, read_json
from fairshare.errors import InvalidInputError
from fairshare.problem import MAX_GPUS

__all__ = ["cluster_nodes", "parse_cluster", "parse_nodes_spec"]


_NODE_GROUP = re.compile(r"\s*(\d{1,9})\s*[xX]\s*([^:=,]+?)\s*:\s*(\d{1,9})\s*")


def parse_nodes_spec(spec: str) -> tuple[Node, ...]:
    """``"36xV100:8,2xK80:4"`` (COUNTxTYPE:GPUS_PER_NODE groups) or a JSON file of node objects, as nodes.

    Nodes are named ``TYPE-0``, ``TYPE-1``, ... per type, in the order given. A file (``.json``) holds a list
    of ``{"id", "gpu", "gpus"}`` objects, or an object with that list under ``nodes``.

    >>> [n.id for n in parse_nodes_spec("2xV100:8,1xK80:4,1xV100:4")]
    ['V100-0', 'V100-1', 'K80-0', 'V100-2']
    """
    text = str(spec)
    if text.strip().lower().endswith(".json"):
        doc = read_json(_read_node_file(text.strip(), text), what="nodes")
        return parse_nodes(doc["nodes"] if isinstance(doc, dict) and "nodes" in doc else doc)
    nodes: list[Node] = []
    per_type: dict[str, int] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        m = _NODE_GROUP.fullmatch(part)
        if m is None:
            raise InvalidInputError("nodes", spec, f"expected COUNTxTYPE:GPUS_PER_NODE groups, got {part.strip()!r}")
        count, gpu, size = int(m.group(1)), m.group(2), int(m.group(3))
        if count < 1 or not 1 <= size <= MAX_NODE_GPUS:
            raise InvalidInputError("nodes", part.strip(), f"needs at least 1 node of 1 to {MAX_NODE_GPUS} GPUs")
        first = per_type.get(gpu, 0)
        nodes += [Node(f"{gpu}-{first + i}", gpu, size) for i in range(count)]
        per_type[gpu] = first + count
    if not nodes:
        raise InvalidInputError("nodes", spec, "no node")
    return parse_nodes(nodes)


def cluster_nodes(cluster: str | Mapping[str, int] | Sequence[Any]) -> tuple[dict[str, int], tuple[Node, ...]]:
    """The cluster's GPUs per type and its nodes (none for a cluster given by type).

    ``cluster`` is ``"V100=36,K80=36"`` or a mapping (by type, no nodes), ``"36xV100:8,36xK80:4"`` or a
    ``.json`` file (nodes: :func:`parse_nodes_spec`), or a list of nodes. With nodes, the capacities are their
    totals per type.

    >>> cluster_nodes("2xV100:8")[0]
    {'V100': 16}
    """
    if isinstance(cluster, str) and "=" not in cluster and (":" in cluster or
                                                          cluster.strip().lower().endswith(".json")):
        nodes = parse_nodes_spec(cluster)
    elif not isinstance(cluster, (str, Mapping)) and isinstance(cluster, Sequence):
        nodes = parse_nodes(cluster)
    else:
        return parse_cluster(cluster), ()
    return parse_cluster(gpus_of_nodes(nodes)), nodes


def _read_node_file(path: str, text: str) -> bytes:
    """The bytes of a node file; a file over :data:`~fairshare.documents.MAX_JSON_BYTES` is refused by size."""
    try:
        return read_limited(path, MAX_JSON_BYTES)
    except ReadRefused as why:
        if why.kind in ("size", "overflow"):  # read_json's wording, with the size when it is known
            size = MAX_JSON_BYTES + 1 if why.size is None else why.size
            raise InvalidInputError("nodes", f"{size} bytes", f"larger than the limit of {MAX_JSON_BYTES} bytes "
                                    f"({MAX_JSON_BYTES // 2**20} MiB)") from None
        exc = why.error  # "open", "read" or "folder": the OSError
        reason = why.kind if exc is None else exc.strerror or exc
        raise InvalidInputError("nodes", text, f"cannot read the node file ({reason})") from None


def parse_cluster(spec: str | Mapping[str, int]) -> dict[str, int]:
    """``"V100=36,P100=36,K80=36"`` (or a mapping) to ``{"V100": 36, ...}``, validated.

    >>> parse_cluster("V100=2,K80=1")
    {'V100': 2, 'K80': 1}
    """
    if isinstance(spec, Mapping):
        items = list(spec.items())
    else:
        items = []
        for part in str(spec).split(","):
            if not part.strip():
                continue
            if "=" not in part:
                raise InvalidInputError("cluster", spec, f"expected TYPE=COUNT pairs, got {part!r}")
            gpu, _, text = part.partition("=")
            text = text.strip()
            if not (text.isascii() and text.isdigit() and len(text) <= 12):
                raise InvalidInputError(f"cluster.{gpu.strip()}", clip(text),
                                        f"must be an integer from 0 to {MAX_GPUS} (2**31)")
            items.append((gpu.strip(), int(text)))
    out: dict[str, int] = {}
    for name, count in items:
        if not str(name):
            raise InvalidInputError("cluster", spec, "a GPU type name is empty")
        if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= MAX_GPUS:
            raise InvalidInputError(f"cluster.{name}", clip(count), f"must be an integer from 0 to {MAX_GPUS} (2**31)")
        if str(name) in out:
            raise InvalidInputError(f"cluster.{name}", count, "GPU type given twice")
        out[str(name)] = count
    if sum(out.values()) <= 0:
        raise InvalidInputError("cluster", spec, "the cluster has no GPU")
    return out
