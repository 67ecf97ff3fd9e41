"""What fairshare.kube reads and writes is what the API server speaks: round trips through the official client.

Every Node and Pod of the shipped snapshot is read into the Kubernetes Python client's models (``V1NodeList``,
``V1PodList``, ``V1Pod``) and written back with ``sanitize_for_serialization``: the result must equal the input,
so the snapshot holds only fields of the API. Every object of the plan is read into ``V1Binding`` or
``V1Eviction`` and written back, equal to what fairshare wrote. The library itself never imports the client.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from typing import Any

import pytest

from fairshare.kube import binding_object, eviction_object, plan_snapshot
from tests._kube import cluster

client = pytest.importorskip("kubernetes.client")

API = client.ApiClient()


class _Response:
    """What the client's ``deserialize`` reads in releases that take a response object (``.data``)."""

    def __init__(self, doc: Any) -> None:
        self.data = json.dumps(doc)


def deserialize(doc: Any, kind: str) -> Any:
    """``ApiClient.deserialize`` of a JSON document, for both signatures the client has had."""
    if "response_text" in inspect.signature(API.deserialize).parameters:
        return API.deserialize(json.dumps(doc), kind, "application/json")
    return API.deserialize(_Response(doc), kind)


def round_trip(doc: Any, kind: str) -> Any:
    return API.sanitize_for_serialization(deserialize(doc, kind))


def _items(kind: str) -> list[dict[str, Any]]:
    return [x for x in cluster()["items"] if x["kind"] == kind]


def test_snapshot_nodes_and_pods_are_api_objects() -> None:
    nodes, pods = _items("Node"), _items("Pod")
    assert len(nodes) == 6 and len(pods) == 19
    back = round_trip({"apiVersion": "v1", "kind": "NodeList", "metadata": {}, "items": nodes}, "V1NodeList")
    assert back["items"] == nodes
    back = round_trip({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": pods}, "V1PodList")
    assert back["items"] == pods
    for p in pods:
        model = deserialize(p, "V1Pod")
        assert isinstance(model, client.V1Pod) and API.sanitize_for_serialization(model) == p


def test_plan_objects_are_api_objects() -> None:
    plan = plan_snapshot(cluster())
    doc = plan.to_list()
    assert doc["apiVersion"] == "v1" and doc["kind"] == "List"
    kinds = {"Binding": ("V1Binding", client.V1Binding), "Eviction": ("V1Eviction", client.V1Eviction)}
    assert {x["kind"] for x in doc["items"]} == set(kinds)
    for item in doc["items"]:
        name, cls = kinds[item["kind"]]
        model = deserialize(item, name)
        assert isinstance(model, cls)
        assert API.sanitize_for_serialization(model) == item
    bound = {(x.metadata.namespace, x.metadata.name): x.target.name
             for x in (deserialize(i, "V1Binding") for i in doc["items"] if i["kind"] == "Binding")}
    assert bound == {tuple(p.split("/")): n for p, n in plan.bindings}  # type: ignore[misc]
    pods = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in _items("Pod")}
    for (ns, name), target in bound.items():
        assert "nodeName" not in pods[(ns, name)]["spec"]        # only pending pods are bound
        assert target in {n["metadata"]["name"] for n in _items("Node")}
        assert deserialize(binding_object(ns, name, target, pods[(ns, name)]["metadata"]["uid"]),
                           "V1Binding").metadata.uid == pods[(ns, name)]["metadata"]["uid"]


def test_eviction_names_the_pod_and_its_uid() -> None:
    ev = deserialize(eviction_object("ml", "old-0", "u-1"), "V1Eviction")
    assert (ev.metadata.namespace, ev.metadata.name, ev.delete_options.preconditions.uid) == ("ml", "old-0", "u-1")
    assert round_trip(eviction_object("ml", "old-0"), "V1Eviction") == eviction_object("ml", "old-0")


def test_reads_a_snapshot_written_by_the_client() -> None:
    """Objects built with the client's models and serialised by it plan like the same objects written by hand."""
    node = client.V1Node(api_version="v1", kind="Node", metadata=client.V1ObjectMeta(
        name="a", labels={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}),
        status=client.V1NodeStatus(allocatable={"nvidia.com/gpu": "2"}))
    pod = client.V1Pod(api_version="v1", kind="Pod", metadata=client.V1ObjectMeta(
        name="p", namespace="ml", annotations={"fairshare.io/model": "ResNet-50 (batch size 64)"}),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", resources=client.V1ResourceRequirements(
            limits={"nvidia.com/gpu": "2"}))]), status=client.V1PodStatus(phase="Pending"))
    doc = {"apiVersion": "v1", "kind": "List", "items": API.sanitize_for_serialization([node, pod])}
    plan = plan_snapshot(doc)
    assert plan.bindings == (("ml/p", "a"),)


def test_library_does_not_import_the_client() -> None:
    code = ("import sys, json; import fairshare.kube as k; k.plan_snapshot(json.load(open(sys.argv[1]))); "
            "print(any(m == 'kubernetes' or m.startswith('kubernetes.') for m in sys.modules))")
    from tests._kube import CLUSTER
    out = subprocess.run([sys.executable, "-c", code, str(CLUSTER)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_plan_applies_with_the_client() -> None:
    """The snippet of docs/kubernetes.md sends each object as it is to the API paths of the pod's subresources."""
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    seen: list[tuple[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server hook
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append((self.path, json.loads(body)))
            self.send_response(201)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        conf = client.Configuration()
        conf.host = f"http://127.0.0.1:{server.server_port}"
        api = client.CoreV1Api(client.ApiClient(conf))
        plan = plan_snapshot(cluster()).to_list()
        for item in plan["items"]:
            meta = item["metadata"]
            if item["kind"] == "Eviction":
                api.create_namespaced_pod_eviction(meta["name"], meta["namespace"], item)
        for item in plan["items"]:
            meta = item["metadata"]
            if item["kind"] == "Binding":
                api.create_namespaced_pod_binding(meta["name"], meta["namespace"], item)
    finally:
        server.shutdown()
        server.server_close()
    sub = {"Eviction": "eviction", "Binding": "binding"}
    assert seen == [(f"/api/v1/namespaces/{i['metadata']['namespace']}/pods/{i['metadata']['name']}/"
                     f"{sub[i['kind']]}", i) for i in plan["items"]]
