"""Planning snapshots (fairshare.kube.plan) and the ``fairshare kube plan`` command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fairshare.cli import main
from fairshare.errors import InvalidInputError
from fairshare.kube import plan_snapshot
from fairshare.sim.catalog import load_catalog
from tests._kube import CLUSTER, cluster, node, pod, snapshot

MODERN = load_catalog("modern")


def test_shipped_cluster() -> None:
    plan = plan_snapshot(cluster())
    bound = dict(plan.bindings)
    evicted = dict(plan.evictions)
    waiting = dict(plan.waiting)
    # every GPU pod of the snapshot is accounted for exactly once
    pods = [f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in cluster()["items"] if p["kind"] == "Pod"]
    groups = [set(bound), set(evicted), set(plan.stays), set(waiting), set(plan.held)]
    assert sum(map(len, groups)) == len(set().union(*groups))
    assert set().union(*groups) == set(pods) - {"ml/prep", "ml/done-job"}
    # the gang of four is bound whole, on A100 nodes; MIG and time-sliced pods go to their nodes
    sweep = [bound.get(f"ml/sweep-{i}") for i in range(4)]
    assert all(sweep) or not any(sweep)
    assert set(filter(None, sweep)) <= {"a100-0", "a100-1"}
    assert {bound.get("ml/lora-0", "h100-mig-0"), bound.get("ml/infer-1", "h100-mig-0")} == {"h100-mig-0"}
    assert bound.get("dev/nb-carol", "t4-0") == "t4-0"
    assert waiting["ml/pair-0"] == "gang ml/gang/pair has 1 of its 2 pods"
    assert plan.held == ("ml/old-l4",)
    # a gang's running pods stay or go together
    assert ("ml/ddp-0" in evicted) == ("ml/ddp-1" in evicted)
    # the List has the evictions first, then the bindings, each sorted by pod
    items = plan.to_list()["items"]
    assert [i["kind"] for i in items] == ["Eviction"] * len(evicted) + ["Binding"] * len(bound)
    assert plan_snapshot(cluster()).to_list() == plan.to_list()          # deterministic
    text = plan.summary()
    assert f"bind {len(bound)}, evict {len(evicted)}, stay {len(plan.stays)}" in text


def test_running_pods_that_stay_get_nothing() -> None:
    plan = plan_snapshot(snapshot(node("a", gpus=2), node("b", gpus=2), pod("r", node="b"), pod("new")),
                         restart_seconds=0)
    assert plan.stays == ("ml/r",) and plan.evictions == ()         # keeps node b, although a is first
    assert [i["kind"] for i in plan.to_list()["items"]] == ["Binding"]


def test_restart_cost_keeps_a_running_job_unless_moving_pays() -> None:
    """One job on an A100 with a free H100: it moves exactly when the faster GPU repays the restart."""
    a = MODERN.alone_throughput("ResNet-50 (batch size 64)", 1, "A100-80GB")
    h = MODERN.alone_throughput("ResNet-50 (batch size 64)", 1, "H100")
    breakeven = 360 * (1 - a / h)         # h * (1 - r / 360) = a
    snap = snapshot(node("a", gpus=1), node("h", "H100", 1), pod("r", node="a"))
    moved = plan_snapshot(snap, restart_seconds=breakeven - 10)
    assert moved.evictions == (("ml/r", "moves to H100 on node h"),) and moved.stays == ()
    kept = plan_snapshot(snap, restart_seconds=breakeven + 10)
    assert kept.evictions == () and kept.stays == ("ml/r",)
    annotated = snapshot(node("a", gpus=1), node("h", "H100", 1),
                         pod("r", node="a", annotations={"fairshare.io/restart-seconds": str(breakeven + 10)}))
    assert plan_snapshot(annotated, restart_seconds=0).stays == ("ml/r",)
    assert plan_snapshot(snap, restart_seconds=breakeven + 10, round_seconds=3600).evictions != ()


def test_preemption_weights_and_deficits() -> None:
    """Two jobs, one GPU. Equal jobs: the running one keeps it, and the deficits make them take turns; a
    heavier waiting job takes the GPU at once."""
    snap = snapshot(node("a", gpus=1), pod("old", node="a"), pod("new"))
    first = plan_snapshot(snap, restart_seconds=0)
    assert first.stays == ("ml/old",) and first.waiting == (("ml/new", "not placed this round"),)
    assert first.next_deficits() == {"ml/new": pytest.approx(1.0)}
    second = plan_snapshot(snap, restart_seconds=0, deficits=first.next_deficits())
    assert second.evictions == (("ml/old", "not placed this round"),) and second.bindings == (("ml/new", "a"),)
    assert second.round.doc["jobs"][0] == {**second.round.doc["jobs"][0], "id": "ml/new", "deficit": 1.0}
    heavy = snapshot(node("a", gpus=1), pod("old", node="a"), pod("new", annotations={"fairshare.io/weight": "4"}))
    assert plan_snapshot(heavy, restart_seconds=0).bindings == (("ml/new", "a"),)
    with pytest.raises(InvalidInputError, match=r"`deficits\['ml/new'\]` = -1: must be a finite number >= 0"):
        plan_snapshot(snap, deficits={"ml/new": -1})


def test_whole_gpu_pod_needs_one_node() -> None:
    plan = plan_snapshot(snapshot(node("a", gpus=2), node("b", gpus=2), pod("big", 4)))
    assert plan.bindings == ()
    assert plan.waiting == (("ml/big", "its pods do not fit the planned GPUs {'a': 2, 'b': 2}"),)
    gang = {"fairshare.io/gang": "g"}
    plan = plan_snapshot(snapshot(node("a", gpus=2), node("b", gpus=2), pod("g0", 2, labels=gang),
                                  pod("g1", 2, labels=gang)))
    assert sorted(n for _, n in plan.bindings) == ["a", "b"]


def test_mig_slices_never_overcommitted() -> None:
    """Seven 1g.10gb slices count as one GPU of 1/8 shares: the eighth pod is deferred, not bound."""
    pods = [pod(f"i{k}", resource="nvidia.com/mig-1g.10gb", model="resnet18_cifar10") for k in range(8)]
    plan = plan_snapshot(snapshot(node("h", "H100", mig={"1g.10gb": 7}), *pods))
    assert len(plan.bindings) == 7
    assert len(plan.waiting) == 1 and plan.waiting[0][1] == ("deferred: node h has 0 nvidia.com/mig-1g.10gb free, "
                                                             "the plan needs 1")


def test_partly_running_gang() -> None:
    g = {"fairshare.io/gang": "g"}
    plan = plan_snapshot(snapshot(node("a", gpus=2), pod("g0", labels=g, node="a"), pod("g1", labels=g)))
    assert plan.stays == ("ml/g0",) and plan.bindings == (("ml/g1", "a"),)


def test_options_checked() -> None:
    with pytest.raises(InvalidInputError, match=r"`mode` = 'lp': must be fast or exact"):
        plan_snapshot(cluster(), mode="lp")
    with pytest.raises(InvalidInputError, match=r"`restart_seconds` = -1: must be a finite number >= 0"):
        plan_snapshot(cluster(), restart_seconds=-1)
    with pytest.raises(InvalidInputError, match=r"`round_seconds` = 0: must be > 0"):
        plan_snapshot(cluster(), round_seconds=0)


def test_exact_mode_and_empty_rounds() -> None:
    plan = plan_snapshot(cluster(), mode="exact")
    assert plan.allocation is not None and str(plan.allocation.status) == "optimal"
    empty = plan_snapshot(snapshot(node("a")))
    assert empty.allocation is None and empty.to_list()["items"] == []


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "plan.json"
    rnd = tmp_path / "round.json"
    assert main(["kube", "plan", str(CLUSTER), "-o", str(out), "--round", str(rnd)]) == 0
    assert json.loads(out.read_text()) == plan_snapshot(cluster()).to_list()
    assert json.loads(rnd.read_text()) == plan_snapshot(cluster()).round.doc
    said = capsys.readouterr()
    assert said.out.startswith("11 jobs on 20 GPUs of 4 types on 4 nodes") and f"-> {out}" in said.out
    assert main(["kube", "plan", str(CLUSTER)]) == 0
    said = capsys.readouterr()
    assert json.loads(said.out)["kind"] == "List" and "bind " in said.err


@pytest.mark.parametrize(("args", "match"), [
    (["--product", "nope"], r"`--product` = 'nope': must be LABEL=TYPE"),
    (["--catalog", "default"], r"GPU type A100-80GB is not in the catalog"),
    (["--time-limit", "5"], r"`--time-limit` = 5.0: applies to --mode exact only"),
])
def test_cli_errors(args: list[str], match: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kube", "plan", str(CLUSTER), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fairshare: error: ") and len(err.splitlines()) == 1
    import re
    assert re.search(match, err)


def test_cli_deficits(tmp_path: Path) -> None:
    snap = tmp_path / "s.json"
    snap.write_text(json.dumps(snapshot(node("a", gpus=1), pod("old", node="a"), pod("new"))))
    d = tmp_path / "d.json"
    assert main(["kube", "plan", str(snap), "-o", str(tmp_path / "p1.json"), "--next-deficits", str(d),
                 "--restart-seconds", "0"]) == 0
    assert json.loads(d.read_text()) == {"ml/new": pytest.approx(1.0)}
    assert main(["kube", "plan", str(snap), "-o", str(tmp_path / "p2.json"), "--deficits", str(d),
                 "--next-deficits", str(d), "--restart-seconds", "0"]) == 0
    assert [i["kind"] for i in json.loads((tmp_path / "p2.json").read_text())["items"]] == ["Eviction", "Binding"]
    assert json.loads(d.read_text()) == {"ml/old": pytest.approx(1.0)}


def test_cli_bad_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc: Any = {"kind": "List", "items": [pod("p", node="ghost")]}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    assert main(["kube", "plan", str(path)]) == 2
    assert "(Pod ml/p).spec.nodeName` = 'ghost': unknown node" in capsys.readouterr().err


def test_docs_worked_example_is_the_commands_output() -> None:
    """docs/kubernetes.md shows the summary of the shipped snapshot's plan as the command prints it."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "kubernetes.md").read_text()
    block = text.split("$ fairshare kube plan tests/data/kube/cluster.json -o plan.json\n", 1)[1]
    shown = block.split("\n-> plan.json", 1)[0]
    assert shown == plan_snapshot(cluster()).summary()
