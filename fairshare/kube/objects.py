"""Writing what a scheduler applies: ``Binding`` and ``Eviction`` objects in a v1 ``List``.

The objects are plain JSON, exactly the API server's schema (``tests/kube/test_kube_objects.py`` reads them with the
official client's models and writes them back unchanged):

- ``Binding`` (``v1``): ``metadata`` names the pod (and its ``uid`` when the snapshot had one, so that a pod
  deleted and re-created under the same name is not bound by mistake, as kube-scheduler does); ``target`` is
  the node (``{"apiVersion": "v1", "kind": "Node", "name": ...}``). Created with
  ``POST /api/v1/namespaces/{namespace}/pods/{name}/binding``.
- ``Eviction`` (``policy/v1``): ``metadata`` names the pod; with a ``uid``, ``deleteOptions.preconditions.uid``
  makes the eviction apply to that pod only. Created with ``POST .../pods/{name}/eviction``, which honours
  PodDisruptionBudgets.
"""

from __future__ import annotations

from typing import Any

__all__ = ["binding_object", "eviction_object", "list_object"]


def binding_object(namespace: str, name: str, node: str, uid: str | None = None) -> dict[str, Any]:
    """A v1 ``Binding`` of pod ``namespace/name`` to ``node``.

    >>> binding_object("ml", "train-0", "gpu-a")["target"]
    {'apiVersion': 'v1', 'kind': 'Node', 'name': 'gpu-a'}
    """
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if uid is not None:
        meta["uid"] = uid
    return {"apiVersion": "v1", "kind": "Binding", "metadata": meta,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}


def eviction_object(namespace: str, name: str, uid: str | None = None) -> dict[str, Any]:
    """A ``policy/v1`` ``Eviction`` of pod ``namespace/name``.

    >>> eviction_object("ml", "old-1")
    {'apiVersion': 'policy/v1', 'kind': 'Eviction', 'metadata': {'name': 'old-1', 'namespace': 'ml'}}
    """
    out: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "Eviction",
                           "metadata": {"name": name, "namespace": namespace}}
    if uid is not None:
        out["deleteOptions"] = {"preconditions": {"uid": uid}}
    return out


def list_object(items: list[dict[str, Any]]) -> dict[str, Any]:
    """A v1 ``List`` of ``items``, as ``kubectl get -o json`` prints one."""
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}
