"""Small builders of Kubernetes objects for the tests of fairshare.kube (plain JSON, as kubectl prints them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CLUSTER = Path(__file__).parent / "data" / "kube" / "cluster.json"

PRODUCT = {"A100": "NVIDIA-A100-SXM4-80GB", "T4": "Tesla-T4", "H100": "NVIDIA-H100-80GB-HBM3", "L4": "NVIDIA-L4"}


def cluster() -> dict[str, Any]:
    """The shipped snapshot (a fresh copy)."""
    return json.loads(CLUSTER.read_text())


def node(name: str, product: str = "A100", gpus: int = 8, *, replicas: int = 1, mig: dict[str, int] | None = None,
         labels: dict[str, str] | None = None, **status: Any) -> dict[str, Any]:
    lab = {"nvidia.com/gpu.product": PRODUCT.get(product, product)}
    alloc: dict[str, str] = {"cpu": "32"}
    if mig is not None:
        lab["nvidia.com/mig.strategy"] = "mixed"
        alloc.update({f"nvidia.com/mig-{k}": str(v) for k, v in mig.items()})
    else:
        alloc["nvidia.com/gpu"] = str(gpus * replicas)
    if replicas > 1:
        lab.update({"nvidia.com/gpu.replicas": str(replicas), "nvidia.com/gpu.sharing-strategy": "time-slicing"})
    lab.update(labels or {})
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": lab},
            "spec": {}, "status": {"allocatable": alloc, **status}}


def pod(name: str, gpus: int = 1, *, ns: str = "ml", node: str | None = None, model: str = "ResNet-50 (batch size 64)",
        resource: str = "nvidia.com/gpu", annotations: dict[str, str] | None = None,
        labels: dict[str, str] | None = None, selector: dict[str, str] | None = None,
        phase: str | None = None, **spec: Any) -> dict[str, Any]:
    ann = {"fairshare.io/model": model, **(annotations or {})}
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}", "annotations": ann}
    if labels:
        meta["labels"] = labels
    s: dict[str, Any] = {"containers": [{"name": "main", "resources": {"limits": {resource: str(gpus)}}}], **spec}
    if node:
        s["nodeName"] = node
    if selector:
        s["nodeSelector"] = selector
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": s,
            "status": {"phase": phase or ("Running" if node else "Pending")}}


def snapshot(*items: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": list(items)}
