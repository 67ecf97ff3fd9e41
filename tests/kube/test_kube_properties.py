"""Invariants of fairshare.kube plans on generated snapshots (hypothesis).

Clusters of whole-GPU, time-sliced and MIG nodes with running pods that fit them, pending pods and gangs. For
every plan: no node's GPU resources over-committed by the pods that stay plus the pods bound; every pending
pod bound at most once, only pending pods bound and only running pods evicted; every GPU pod accounted for
exactly once (bound, evicted, staying, waiting or held); gangs bound and kept all or nothing.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fairshare.kube import plan_snapshot, plan_violations
from tests._kube import node, pod, snapshot

WHOLE_MODELS = ("ResNet-50 (batch size 64)", "Transformer (batch size 64)", "LM (batch size 20)")
MIG = {"1g.10gb": 7, "3g.40gb": 2}


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    n_nodes = draw(st.integers(1, 4))
    whole_types: set[str] = set()
    replicas: set[int] = set()
    k = 0

    def name() -> str:
        nonlocal k
        k += 1
        return f"p{k}"

    for i in range(n_nodes):
        kind = draw(st.sampled_from(["whole", "whole", "shared", "mig"]))
        nid = f"n{i}"
        if kind == "whole":
            gpu = draw(st.sampled_from(["A100", "H100", "T4"]))
            size = draw(st.integers(1, 4))
            items.append(node(nid, gpu, size))
            whole_types.add(gpu)
            free = size
            if free >= 2 and draw(st.booleans()):   # a running gang of two pods
                g = {"fairshare.io/gang": f"run{i}"}
                model = draw(st.sampled_from(WHOLE_MODELS))
                pods += [pod(name(), 1, node=nid, labels=g, model=model) for _ in range(2)]
                free -= 2
            while free and draw(st.booleans()):
                u = draw(st.sampled_from([u for u in (1, 2, 4) if u <= free]))
                pods.append(pod(name(), u, node=nid, model=draw(st.sampled_from(WHOLE_MODELS))))
                free -= u
        elif kind == "shared":
            r = draw(st.sampled_from([2, 4]))
            size = draw(st.integers(1, 2))
            items.append(node(nid, "T4", size, replicas=r))
            replicas.add(r)
            free = size * r
            while free and draw(st.booleans()):
                u = draw(st.integers(1, min(free, r - 1)))
                pods.append(pod(name(), u, node=nid, model="resnet18_cifar10",
                                selector={"nvidia.com/gpu.replicas": str(r)}))
                free -= u
        else:
            slices = {p: draw(st.integers(0, c)) for p, c in MIG.items()}
            if not any(slices.values()):
                slices["1g.10gb"] = 1
            items.append(node(nid, "H100", mig=slices))
            for p, c in slices.items():
                for _ in range(draw(st.integers(0, c))):
                    pods.append(pod(name(), resource=f"nvidia.com/mig-{p}", node=nid, model="resnet18_cifar10"))
    for _ in range(draw(st.integers(0, 6))):
        choice = draw(st.sampled_from(["whole", "gang", "shared", "mig"]))
        if choice in ("whole", "gang") and whole_types:
            model = draw(st.sampled_from(WHOLE_MODELS))
            if choice == "gang":
                g = {"fairshare.io/gang": name()}
                u = draw(st.sampled_from([1, 2]))
                pods += [pod(name(), u, labels=g, model=model) for _ in range(2)]
            else:
                pods.append(pod(name(), draw(st.sampled_from([1, 2, 4])), model=model))
        elif choice == "shared" and replicas:
            r = draw(st.sampled_from(sorted(replicas)))
            pods.append(pod(name(), draw(st.integers(1, r - 1)), model="resnet18_cifar10",
                            selector={"nvidia.com/gpu.replicas": str(r)}))
        elif choice == "mig":
            pods.append(pod(name(), resource=f"nvidia.com/mig-{draw(st.sampled_from(sorted(MIG)))}",
                            model="resnet18_cifar10"))
    return snapshot(*items, *pods)


def _key(p: dict[str, Any]) -> str:
    return f"{p['metadata']['namespace']}/{p['metadata']['name']}"


@settings(max_examples=60, deadline=None)
@given(clusters(), st.sampled_from([0.0, 60.0, 300.0]))
def test_plan_invariants(doc: dict[str, Any], restart: float) -> None:
    plan = plan_snapshot(doc, restart_seconds=restart)
    pods = {_key(p): p for p in doc["items"] if p["kind"] == "Pod"}
    nodes = {n["metadata"]["name"]: n for n in doc["items"] if n["kind"] == "Node"}
    running = {k for k, p in pods.items() if p["spec"].get("nodeName")}

    def ask(k: str) -> tuple[str, int]:
        (res, units), = pods[k]["spec"]["containers"][0]["resources"]["limits"].items()
        return res, int(units)

    bound = [p for p, _ in plan.bindings]
    evicted = [p for p, _ in plan.evictions]
    assert len(bound) == len(set(bound)) and not set(bound) & running           # pending pods, each once
    assert set(evicted) <= running                                              # only running pods evicted
    groups = [set(bound), set(evicted), set(plan.stays), {p for p, _ in plan.waiting}, set(plan.held)]
    assert sum(map(len, groups)) == len(pods) and set().union(*groups) == set(pods)   # each pod once
    # no node over-committed: what stays, what is held and what is bound fit the allocatable resources
    used: Counter[tuple[str, str]] = Counter()
    for k in (*plan.stays, *plan.held):
        res, units = ask(k)
        used[(pods[k]["spec"]["nodeName"], res)] += units
    for k, n in plan.bindings:
        res, units = ask(k)
        used[(n, res)] += units
    for (n, res), units in used.items():
        assert units <= int(nodes[n]["status"]["allocatable"].get(res, "0")), (n, res, units)
    # gangs: all or nothing
    gangs: dict[str, list[str]] = defaultdict(list)
    for k, p in pods.items():
        g = p["metadata"].get("labels", {}).get("fairshare.io/gang")
        if g:
            gangs[g].append(k)
    for members in gangs.values():
        pending = [k for k in members if k not in running]
        run = [k for k in members if k in running]
        assert len({k in set(bound) for k in pending}) <= 1
        assert len({k in set(plan.stays) for k in run}) <= 1
        if any(k in set(bound) for k in pending):
            assert not set(run) & set(evicted)
    assert len(plan.to_list()["items"]) == len(bound) + len(evicted)
    assert plan_violations(doc, plan) == []


def test_violations_are_found() -> None:
    """The library's validator reports each broken promise of a tampered plan."""
    doc = snapshot(node("a", gpus=2), pod("r", 2, node="a"), pod("g0", labels={"fairshare.io/gang": "g"}),
                   pod("g1", labels={"fairshare.io/gang": "g"}), pod("w", 2))
    plan = plan_snapshot(doc, restart_seconds=0)
    assert plan_violations(doc, plan) == []
    bad = replace(plan, bindings=(("ml/g0", "a"), ("ml/r", "a")), evictions=(), stays=("ml/r",),
                  waiting=(("ml/g1", "x"), ("ml/w", "x")))
    assert plan_violations(doc, bad) == [
        "pod ml/r appears 2 times in the plan", "running pod ml/r is bound",
        "node a over-committed: 3 nvidia.com/gpu more than allocatable",
        "job ml/gang/g: some pending pods bound, others not"]
    gone = replace(plan, bindings=(), evictions=(("ml/g0", "x"),), stays=(), waiting=(), held=())
    assert "pending pod ml/g0 is evicted" in plan_violations(doc, gone)
    assert "pod ml/w is not accounted for" in plan_violations(doc, gone)
