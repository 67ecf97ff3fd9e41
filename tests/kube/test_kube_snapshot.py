"""Reading snapshots (fairshare.kube.snapshot, .round): pools, jobs, and every error naming object and field."""

from __future__ import annotations

from typing import Any

import pytest

from fairshare.errors import InvalidInputError
from fairshare.kube import plan_snapshot, read_snapshot
from fairshare.kube.products import PRODUCTS, catalog_type, mig_share
from fairshare.kube.round import build_round, priority_of_class
from fairshare.sim.catalog import load_catalog
from tests._kube import cluster, node, pod, snapshot

MODERN = load_catalog("modern")


def rnd(*items: dict[str, Any], **kw: Any) -> Any:
    return build_round(read_snapshot(snapshot(*items)), MODERN, **kw)


def test_shipped_cluster_pools_and_counts() -> None:
    snap = read_snapshot(cluster())
    pools = {o.pool.name: (o.units, o.gpus) for n in snap.nodes.values() for o in n.offers}
    assert pools == {"A100-80GB": (8, 8), "T4:time-slicing/4": (8, 2), "H100:mig-1g.10gb": (7, 1),
                     "H100:mig-3g.40gb": (2, 1), "L4": (2, 2)}
    assert snap.ignored == {"nodes without GPUs": 1, "pods without GPU requests": 1,
                            "finished pods (Succeeded or Failed)": 1}
    r = build_round(snap, MODERN)
    assert r.doc["gpus"] == {"A100-80GB": 16, "T4:time-slicing/4": 2, "H100:mig-1g.10gb": 1, "H100:mig-3g.40gb": 1}
    assert "L4" not in r.doc["gpus"] and [p.key for p in r.held] == ["ml/old-l4"]   # cordoned node left alone
    jobs = {j["id"]: j for j in r.doc["jobs"]}
    assert jobs["ml/gang/sweep"]["scale"] == 4 and jobs["ml/gang/ddp"]["scale"] == 8      # PodGroup, label
    assert jobs["dev/nb-bob"]["scale"] == 0.5 and jobs["ml/infer-1"]["scale"] == 0.125
    assert jobs["ml/lora-0"]["scale"] == 0.5
    assert jobs["ml/bert-ft"]["current"] == {"gpu": "A100-80GB", "partner": None}
    assert jobs["ml/bert-ft"]["restart_seconds"] == 120.0 and jobs["ml/resnet-a"]["restart_seconds"] == 60.0
    assert "current" not in jobs["ml/llm-pretrain"]
    assert jobs["ml/llm-pretrain"]["priority"] == priority_of_class(1000) == 2.0
    assert jobs["ml/llm-pretrain"]["weight"] == 2.0
    assert ("ml/pair-0", "gang ml/gang/pair has 1 of its 2 pods") in r.waiting


def test_throughputs_from_the_catalog() -> None:
    r = rnd(node("a", "A100", 8), node("t", "T4", 2, replicas=4), pod("g", 4),
            pod("s", 1, model="resnet18_cifar10", selector={"nvidia.com/gpu.sharing-strategy": "time-slicing"}))
    jobs = {j["id"]: j for j in r.doc["jobs"]}
    assert jobs["ml/g"]["throughput"] == {"A100-80GB": MODERN.alone_throughput("ResNet-50 (batch size 64)", 4,
                                                                               "A100-80GB")}
    assert jobs["ml/s"]["throughput"] == {"T4:time-slicing/4": 0.25 * MODERN.alone_throughput("resnet18_cifar10",
                                                                                              1, "T4")}


def test_products_and_mig_shares() -> None:
    assert catalog_type("NVIDIA-H100-80GB-HBM3", {}, "x") == "H100" and PRODUCTS["Tesla-T4"] == "T4"
    assert [mig_share(p, "A100-80GB", "x") for p in ("1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb")] == [
        0.125, 0.25, 0.5, 1.0]
    assert mig_share("1g.5gb", "A100-40GB", "x") == 0.125
    with pytest.raises(InvalidInputError, match=r"not a MIG profile"):
        mig_share("big", "H100", "x")
    with pytest.raises(InvalidInputError, match=r"MIG slices of T4 are not supported"):
        mig_share("1g.10gb", "T4", "x")


def test_single_strategy_mig_node() -> None:
    n = node("m", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", 14, labels={"nvidia.com/mig.strategy": "single"})
    r = rnd(n, pod("p", 1, model="resnet18_cifar10", selector={"nvidia.com/mig.strategy": "single"}))
    assert r.doc["gpus"] == {"A100-40GB:mig-1g.5gb/single": 2} and r.doc["jobs"][0]["scale"] == 0.125


@pytest.mark.parametrize(("doc", "match"), [
    ([], r"`snapshot` = \[\]: must be a JSON object: a v1 List"),
    ({"kind": "Pod", "items": []}, r"`snapshot.kind` = 'Pod': must be List"),
    ({"kind": "List", "items": {}}, r"`snapshot.items`.*must be a list"),
    ({"kind": "List", "items": [3]}, r"`items\[0\]` = 3: must be an object"),
    ({"kind": "List", "items": [{"kind": "Pod", "metadata": {}}]}, r"items\[0\] \(Pod\)\.metadata\.name"),
])
def test_not_a_snapshot(doc: Any, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        read_snapshot(doc)


def test_unknown_kinds_are_counted() -> None:
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "ml"}}
    snap = read_snapshot(snapshot(node("a"), svc, dict(svc), pod("p")))
    assert snap.ignored == {"objects of kind Service": 2}
    assert len(snap.pods) == 1


def test_node_without_gpu_labels() -> None:
    bare = node("a")
    del bare["metadata"]["labels"]["nvidia.com/gpu.product"]
    with pytest.raises(InvalidInputError, match=r"items\[0\] \(Node a\)\.metadata\.labels\['nvidia.com/gpu.product'\]"
                                                r"` = None: missing.*GPU feature discovery"):
        read_snapshot(snapshot(bare))
    cpu = {"kind": "Node", "metadata": {"name": "c"}, "status": {"allocatable": {"cpu": "8"}}}
    assert read_snapshot(snapshot(cpu)).ignored == {"nodes without GPUs": 1}


def test_unknown_product_names_node_and_label_and_the_way_out() -> None:
    items = (node("a", "NVIDIA-A10G", 4), pod("p"))
    with pytest.raises(InvalidInputError, match=r"\(Node a\)\.metadata\.labels\['nvidia.com/gpu.product'\]` = "
                                                r"'NVIDIA-A10G': unknown GPU product.*--product NVIDIA-A10G=TYPE"):
        plan_snapshot(snapshot(*items))
    assert plan_snapshot(snapshot(*items), products={"NVIDIA-A10G": "A10"}).bindings == (("ml/p", "a"),)


def test_gpu_type_missing_from_catalog() -> None:
    with pytest.raises(InvalidInputError, match=r"\(Node a\).*GPU type A100-80GB is not in the catalog.*modern"):
        plan_snapshot(snapshot(node("a"), pod("p")), catalog="default")


def test_pod_asking_for_whole_gpus_and_mig() -> None:
    p = pod("both", 1)
    p["spec"]["containers"].append({"name": "side", "resources": {"limits": {"nvidia.com/mig-1g.10gb": "1"}}})
    with pytest.raises(InvalidInputError, match=r"items\[1\] \(Pod ml/both\)\.spec\.containers\[\]\.resources.*"
                                                r"more than one kind of GPU resource"):
        read_snapshot(snapshot(node("a"), p))


@pytest.mark.parametrize("value", ["-1", "0.5", "500m", -2, 1.5, True, "1Gi"])
def test_negative_or_fractional_requests(value: Any) -> None:
    p = pod("bad")
    p["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = value
    with pytest.raises(InvalidInputError, match=r"\(Pod ml/bad\)\.spec\.containers\[0\]\.resources\.limits"
                                                r"\['nvidia.com/gpu'\]` = .*whole number of devices"):
        read_snapshot(snapshot(node("a"), p))


def test_requests_limits_and_init_containers() -> None:
    p = pod("x", 2)
    p["spec"]["containers"][0]["resources"]["requests"] = {"nvidia.com/gpu": "1"}
    with pytest.raises(InvalidInputError, match=r"limits\['nvidia.com/gpu'\]` = '2': must equal the request \(1\)"):
        read_snapshot(snapshot(node("a"), p))
    q = pod("y", 1)
    q["spec"]["initContainers"] = [{"name": "i", "resources": {"requests": {"nvidia.com/gpu": "4"}}}]
    q["spec"]["containers"].append({"name": "c2", "resources": {"requests": {"nvidia.com/gpu": "2"}}})
    assert read_snapshot(snapshot(node("a"), q)).pods[0].units == 4          # max(1 + 2, 4)


def test_pod_on_unknown_node() -> None:
    with pytest.raises(InvalidInputError, match=r"\(Pod ml/p\)\.spec\.nodeName` = 'ghost': unknown node"):
        read_snapshot(snapshot(node("a"), pod("p", node="ghost")))
    with pytest.raises(InvalidInputError, match=r"\(Pod ml/p\)\.spec\.nodeName` = 'a': the node offers no "
                                                r"nvidia.com/mig-1g.10gb"):
        read_snapshot(snapshot(node("a"), pod("p", node="a", resource="nvidia.com/mig-1g.10gb")))


def test_duplicate_names() -> None:
    with pytest.raises(InvalidInputError, match=r"items\[2\] \(Pod ml/p\)\.metadata\.name` = 'p': duplicate: "
                                                r"items\[1\]"):
        read_snapshot(snapshot(node("a"), pod("p"), pod("p")))
    with pytest.raises(InvalidInputError, match=r"items\[1\] \(Node a\)\.metadata\.name` = 'a': duplicate"):
        read_snapshot(snapshot(node("a"), node("a")))
    assert len(read_snapshot(snapshot(node("a"), pod("p"), pod("p", ns="other"))).pods) == 2


def test_model_annotations() -> None:
    p = pod("p")
    del p["metadata"]["annotations"]["fairshare.io/model"]
    with pytest.raises(InvalidInputError, match=r"\(Pod ml/p\)\.metadata\.annotations\['fairshare.io/model'\]` = "
                                                r"None: missing.*--default-model"):
        rnd(node("a"), p)
    assert rnd(node("a"), p, default_model="A3C").jobs["ml/p"].model == "A3C"
    with pytest.raises(InvalidInputError, match=r"\['fairshare.io/model'\]` = 'bert': not a model of the catalog"):
        rnd(node("a"), pod("p", model="bert"))
    with pytest.raises(InvalidInputError, match=r"no throughput for this model on 3 GPUs of A100-80GB"):
        rnd(node("a"), pod("p", 3))


@pytest.mark.parametrize(("key", "value"), [("fairshare.io/weight", "0"), ("fairshare.io/weight", "heavy"),
                                            ("fairshare.io/priority", "-1"), ("fairshare.io/restart-seconds", "nan")])
def test_bad_numbers_in_annotations(key: str, value: str) -> None:
    with pytest.raises(InvalidInputError, match=rf"\(Pod ml/p\)\.metadata\.annotations\['{key}'\]` = '{value}'"):
        rnd(node("a"), pod("p", annotations={key: value}))


def test_gangs() -> None:
    g = {"fairshare.io/gang": "g"}
    with pytest.raises(InvalidInputError, match=r"\(Pod ml/b\)\.metadata\.annotations\['fairshare.io/model'\]` = "
                                                r"'A3C': differs from the gang's other pods \(ml/a"):
        rnd(node("a"), pod("a", labels=g), pod("b", labels=g, model="A3C"))
    with pytest.raises(InvalidInputError, match=r"gang-size'\]` = 'two': must be an integer >= 1"):
        rnd(node("a"), pod("a", annotations={**g, "fairshare.io/gang-size": "two"}))
    r = rnd(node("a"), pod("a", 2, labels=g), pod("b", 2, labels=g), pod("c", labels={
        "scheduling.x-k8s.io/pod-group": "h"}), pod("d", annotations={"fairshare.io/gang-size": "3", **g}, ns="x"))
    assert {j: job.scale for j, job in r.jobs.items()} == {"ml/gang/g": 4, "ml/gang/h": 1}
    assert r.waiting == (("x/d", "gang x/gang/g has 1 of its 3 pods"),)
    t4 = node("t", "T4", 1, replicas=4)
    share = {"nvidia.com/gpu.replicas": "4"}
    with pytest.raises(InvalidInputError, match=r"gangs are whole GPUs"):
        rnd(t4, pod("a", labels=g, selector=share), pod("b", labels=g, selector=share))


def test_shares_must_be_unambiguous() -> None:
    t2, t4 = node("t2", "T4", 1, replicas=2), node("t4", "T4", 1, replicas=4)
    sel = {"nvidia.com/gpu.sharing-strategy": "time-slicing"}
    with pytest.raises(InvalidInputError, match=r"\(Pod ml/p\)\.spec\.nodeSelector.*different share of a GPU.*"
                                                r"T4:time-slicing/2: 0.5, T4:time-slicing/4: 0.25"):
        rnd(t2, t4, pod("p", selector=sel, model="resnet18_cifar10"))
    r = rnd(t2, t4, pod("p", selector={**sel, "nvidia.com/gpu.replicas": "4"}, model="resnet18_cifar10"))
    assert r.doc["jobs"][0]["scale"] == 0.25 and list(r.doc["jobs"][0]["throughput"]) == ["T4:time-slicing/4"]
    with pytest.raises(InvalidInputError, match=r"\['nvidia.com/gpu'\]` = 4: is 1 of a GPU.*less than one GPU"):
        rnd(t4, pod("p", 4, selector=sel, model="resnet18_cifar10"))
    with pytest.raises(InvalidInputError, match=r"\['nvidia.com/mig-1g.10gb'\]` = 2: .*ask for 1"):
        rnd(node("h", "H100", mig={"1g.10gb": 7}), pod("p", 2, resource="nvidia.com/mig-1g.10gb"))


def test_node_labels_and_allocatable_checked() -> None:
    bad = node("t", "T4", 1, replicas=4)
    bad["status"]["allocatable"]["nvidia.com/gpu"] = "6"
    with pytest.raises(InvalidInputError, match=r"\(Node t\)\.status\.allocatable\['nvidia.com/gpu'\]` = 6: not a "
                                                r"multiple of the node's 4 replicas"):
        read_snapshot(snapshot(bad))
    bad = node("t", "T4", 1, replicas=4, labels={"nvidia.com/gpu.replicas": "x"})
    with pytest.raises(InvalidInputError, match=r"labels\['nvidia.com/gpu.replicas'\]` = 'x': must be an integer"):
        read_snapshot(snapshot(bad))
    single = node("m", "NVIDIA-A100-SXM4-40GB", 7, labels={"nvidia.com/mig.strategy": "single"})
    with pytest.raises(InvalidInputError, match=r"MIG strategy is single.*<product>-MIG-<profile>"):
        read_snapshot(snapshot(single))


def test_nodes_left_out() -> None:
    cordoned = node("c", gpus=2)
    cordoned["spec"]["unschedulable"] = True
    sick = node("s", gpus=2, conditions=[{"type": "Ready", "status": "False"}])
    r = rnd(cordoned, sick, node("ok", gpus=2), pod("on-c", node="c"), pod("new"))
    assert r.doc["nodes"] == [{"id": "ok", "gpu": "A100-80GB", "gpus": 2}]
    assert [p.key for p in r.held] == ["ml/on-c"] and list(r.jobs) == ["ml/new"]
    gone = pod("gone", node="a")
    gone["metadata"]["deletionTimestamp"] = "2026-12-04T05:00:00Z"
    r = rnd(node("a", gpus=2), gone, pod("new"))
    assert r.doc["nodes"] == [{"id": "a", "gpu": "A100-80GB", "gpus": 1}] and [p.key for p in r.held] == ["ml/gone"]
