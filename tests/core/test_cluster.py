"""The cluster (fairshare.cluster): every form reads to the same value, node totals are the capacities, and each
bad input is refused once, with one message, naming the field, whichever entry point reads it."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairshare import Engine, RoundProblem
from fairshare.cluster import MAX_GPUS, Cluster, Node, gpus_of_nodes, parse_node_spec
from fairshare.errors import InvalidInputError
from fairshare.sim import parse_cluster

NAMES = st.text("ABCKVPTabc0123456789-_", min_size=1, max_size=6)
COUNT_RULE = "must be an integer from 0 to 2,147,483,648 (2**31)"


@st.composite
def by_type(draw: st.DrawFn) -> dict[str, int]:
    """A cluster by type: distinct names, counts from 0 to MAX_GPUS."""
    names = draw(st.lists(NAMES, min_size=1, max_size=5, unique=True))
    return {g: draw(st.integers(0, MAX_GPUS)) for g in names}


@st.composite
def node_groups(draw: st.DrawFn) -> list[tuple[int, str, int]]:
    """``(count, type, GPUs per node)`` groups; a type may come back in a later group."""
    names = draw(st.lists(NAMES, min_size=1, max_size=3, unique=True))
    return draw(st.lists(st.tuples(st.integers(1, 4), st.sampled_from(names), st.integers(1, 16)), min_size=1,
                         max_size=5))


def _nodes_of(groups: list[tuple[int, str, int]]) -> list[Node]:
    """The nodes ``"COUNTxTYPE:GPUS,..."`` stands for: ``TYPE-0``, ``TYPE-1``, ... per type, in order."""
    out: list[Node] = []
    seen: dict[str, int] = {}
    for count, gpu, size in groups:
        first = seen.get(gpu, 0)
        out += [Node(f"{gpu}-{first + i}", gpu, size) for i in range(count)]
        seen[gpu] = first + count
    return out


@given(by_type())
def test_a_mapping_and_its_text_read_to_one_cluster(counts: dict[str, int]) -> None:
    text = ",".join(f" {g} = {c}" for g, c in counts.items())
    c = Cluster.parse(counts)
    assert c == Cluster.parse(text) == Cluster(tuple(counts), tuple(counts.values()))
    assert c.by_type() == counts and list(c.gpu_types) == list(counts) and c.nodes == ()
    assert c.total_gpus == sum(counts.values()) and c.capacity_array().dtype == np.int64
    assert Cluster.parse(c) is c
    assert Cluster.of_counts(counts) == c  # the engine's and the state's way in


@settings(max_examples=40, deadline=None)
@given(node_groups())
def test_every_node_form_reads_to_one_cluster_whose_capacities_are_the_node_totals(groups) -> None:
    nodes = _nodes_of(groups)
    text = ",".join(f"{n}x{g}:{s}" for n, g, s in groups)
    c = Cluster.parse(text)
    assert c.nodes == tuple(nodes)
    assert c == Cluster.parse(nodes) == Cluster.parse([n.to_dict() for n in nodes])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "nodes.json"
        path.write_text(json.dumps({"nodes": [n.to_dict() for n in nodes]}))
        assert Cluster.parse(str(path)) == c
        path.write_text(json.dumps([n.to_dict() for n in nodes]))
        assert Cluster.parse(str(path)) == c
    totals: dict[str, int] = {}
    for n in nodes:
        totals[n.gpu] = totals.get(n.gpu, 0) + n.gpus
    assert c.by_type() == totals == gpus_of_nodes(nodes)  # types in order of first appearance
    assert Cluster.parse(totals).with_nodes(nodes) == c  # nodes given beside the counts, as in a round document
    assert Cluster(c.gpu_types, c.capacity, c.nodes) == c


@given(node_groups(), st.lists(NAMES, max_size=3))
def test_listed_types_without_nodes_stay_at_zero(groups, types) -> None:
    nodes = _nodes_of(groups)
    c = Cluster.of_nodes(nodes, types=list(dict.fromkeys(types)))
    assert list(c.gpu_types[: len(set(types))]) == list(dict.fromkeys(types))
    assert {g: n for g, n in c.by_type().items() if n} == gpus_of_nodes(nodes)
    assert sum(c.capacity) == sum(n.gpus for n in nodes)


def test_a_round_and_an_engine_read_the_same_cluster() -> None:
    doc = {"gpus": {"V100": 4, "K80": 2}, "jobs": [{"id": "a", "scale": 1, "throughput": {"V100": 1.0}}],
           "nodes": [{"id": "n0", "gpu": "V100", "gpus": 4}, {"id": "n1", "gpu": "K80", "gpus": 2}]}
    p = RoundProblem.from_dict(doc)
    want = Cluster.parse(doc["nodes"])
    assert p.cluster == want
    eng = Engine(doc["gpus"], nodes=doc["nodes"])
    assert eng.cluster == want and Engine.from_state(eng.state()).cluster == want
    assert RoundProblem.from_dict({**doc, "gpus": {"V100": 4.0, "K80": 2}}).cluster == want  # JSON numbers


# ---------------------------------------------------------------------------------------------- refusals
@pytest.mark.parametrize(("spec", "field", "reason"), [
    ({"V100": -1}, "cluster.V100", COUNT_RULE),
    ({"V100": 2**31 + 1}, "cluster.V100", COUNT_RULE),
    ({"V100": True}, "cluster.V100", COUNT_RULE),
    ({"V100": 2.0}, "cluster.V100", COUNT_RULE),
    ({"V100": "2"}, "cluster.V100", COUNT_RULE),
    ("V100=x", "cluster.V100", COUNT_RULE),
    ("V100=1234567890123", "cluster.V100", COUNT_RULE),
    ({"": 2}, "cluster", "GPU types must be non-empty strings"),
    ({3: 2}, "cluster", "GPU types must be non-empty strings"),
    ("=2", "cluster", "GPU types must be non-empty strings"),
    ("V100=1,V100=2", "cluster", "duplicate GPU type"),
    ("V100", "cluster", "expected TYPE=COUNT pairs"),
    (5, "cluster", "must be an object of GPU type -> number of GPUs"),
    ("2xV100:x", "nodes", "expected COUNTxTYPE:GPUS_PER_NODE groups"),
    ("2xV100", "cluster", "expected TYPE=COUNT pairs"),  # no colon: read as a cluster by type
    ("0xV100:8", "nodes", "needs at least 1 node"),
    ("2xV100:0", "nodes", "needs at least 1 node"),
    ("missing-dir/none.json", "nodes", "cannot read the node file"),
    ("n", "cluster", "expected TYPE=COUNT pairs"),
    ([{"id": "a", "gpu": "V100", "gpus": 0}], "nodes[0].gpus", "must be an integer from 1 to 1048576"),
    ([{"id": "a", "gpu": "V100", "gpus": 2}, {"id": "a", "gpu": "V100", "gpus": 2}], "nodes[1].id",
     "duplicate node id"),
    ([{"id": "a", "gpu": "", "gpus": 2}], "nodes[0].gpu", "must be a non-empty string"),
    ([{"id": "a", "gpu": "V100"}], "nodes[0].gpus", "missing"),
    ([{"id": "a", "gpu": "V100", "gpus": 1, "rack": 2}], "nodes[0].rack", "unknown key"),
    (["a"], "nodes[0]", "must be an object {id, gpu, gpus}"),
])
def test_each_bad_cluster_is_refused_naming_the_field(spec, field, reason) -> None:
    with pytest.raises(InvalidInputError) as err:
        Cluster.parse(spec)
    assert err.value.field == field and reason in err.value.reason


def test_nodes_must_hold_exactly_the_capacities() -> None:
    c = Cluster.parse({"V100": 4, "K80": 0})
    with pytest.raises(InvalidInputError) as err:
        c.with_nodes([Node("n0", "V100", 2)])
    assert err.value.field == "nodes" and err.value.value == {"V100": 2}
    assert err.value.reason == "the nodes of type 'V100' hold 2 GPUs, but `gpus.V100` is 4: they must be equal"
    with pytest.raises(InvalidInputError) as err:
        c.with_nodes([Node("n0", "V100", 4), Node("n1", "A100", 1)])
    assert err.value.field == "nodes[1].gpu" and err.value.reason == "GPU type is not in `gpus`"
    assert c.with_nodes(None) == c.with_nodes([]) == c


def test_a_cluster_without_gpus_is_the_callers_rule() -> None:
    c = Cluster.parse("V100=0")
    assert c.total_gpus == 0  # an engine keeps it (every job held out)
    assert Engine({"V100": 0}).cluster == c
    with pytest.raises(InvalidInputError, match=r"`cluster` = \{'V100': 0\}: the cluster has no GPU"):
        c.require_gpu("cluster")
    with pytest.raises(InvalidInputError, match="the cluster has no GPU"):
        parse_cluster("V100=0")
    with pytest.raises(InvalidInputError, match=r"`gpus` = \{'V100': 0\}: the cluster has no GPU"):
        RoundProblem.from_dict({"gpus": {"V100": 0}, "jobs": []})


@pytest.mark.parametrize("bad", [-1, 2**31 + 1, True, 1.5, "2", None])
def test_one_count_rule_one_message_at_every_entry_point(bad) -> None:
    readers = [
        ("cluster.V100", lambda: parse_cluster({"V100": bad})),
        ("gpus.V100", lambda: Engine({"V100": bad})),
        ("state.gpus.V100", lambda: Engine.from_state({"version": 1, "gpus": {"V100": bad}})),
        ("gpus.V100", lambda: RoundProblem.from_dict({"gpus": {"V100": bad, "K80": 1}, "jobs": []})),
    ]
    for field, read in readers:
        with pytest.raises(InvalidInputError) as err:
            read()
        assert err.value.field == field and err.value.reason == COUNT_RULE and err.value.value == bad, field


def test_an_engine_keeps_its_cluster_checked_on_assignment() -> None:
    eng = Engine({"V100": 8, "K80": 4}, nodes=[Node("a", "V100", 8), Node("b", "K80", 4)])
    with pytest.raises(InvalidInputError) as err:
        eng.gpus = {"V100": 8, "K80": 2}  # the nodes hold 4 K80
    assert err.value.field == "gpus"
    eng.nodes = [Node("a", "V100", 8)]  # the K80 node went: K80 stays, with 0 GPUs
    assert eng.gpus == {"V100": 8, "K80": 0} and eng.cluster.nodes == (Node("a", "V100", 8),)
    with pytest.raises(InvalidInputError) as err:
        eng.nodes = [{"id": "a", "gpu": "V100", "gpus": 2**21}]
    assert err.value.field == "nodes[0].gpus"
    eng.nodes = None
    assert eng.nodes == () and eng.gpus == {"V100": 8, "K80": 0}


def test_a_node_file_is_read_size_limited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fairshare.documents as documents

    path = tmp_path / "nodes.json"
    path.write_text(json.dumps([{"id": "a", "gpu": "V100", "gpus": 2}]) + " " * 100)
    monkeypatch.setattr(documents, "MAX_JSON_BYTES", 64)
    with pytest.raises(InvalidInputError, match=r"`nodes` = '\d+ bytes': larger than the limit of 64 bytes"):
        parse_node_spec(str(path))
