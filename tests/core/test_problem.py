"""Tests of fairshare.problem: every rejected input of spec section 6, valid corner cases, round-trips."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings

from fairshare import allocate
from fairshare.cli import example_round_text
from fairshare.errors import FairshareError, InvalidInputError
from fairshare.problem import RoundProblem
from fairshare.testing.strategies import round_documents, round_problems

NAN = float("nan")
INF = float("inf")

# The round of spec section 6. Jobs: 0 resnet18-1, 1 lm-2, 2 transformer-3 (all scale 1, every type),
# 3 resnet50-4 (scale 2, V100 and P100 only); one candidate pair (resnet18-1, lm-2) on V100.
BASE: dict[str, Any] = json.loads(example_round_text())  # the round of spec section 6, bundled


def base() -> dict[str, Any]:
    return copy.deepcopy(BASE)


def setting(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Mutation: set ``doc[path[0]][path[1]]... = value``."""
    def mutate(doc: dict[str, Any]) -> dict[str, Any]:
        obj = doc
        for key in path[:-1]:
            obj = obj[key]
        obj[path[-1]] = value
        return doc
    return mutate


def deleting(path: tuple[Any, ...]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def mutate(doc: dict[str, Any]) -> dict[str, Any]:
        obj = doc
        for key in path[:-1]:
            obj = obj[key]
        del obj[path[-1]]
        return doc
    return mutate


def adding_pair(entry: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def mutate(doc: dict[str, Any]) -> dict[str, Any]:
        doc["colocation"].append(entry)
        return doc
    return mutate


def chain(*mutations: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
    def mutate(doc: dict[str, Any]) -> Any:
        for m in mutations:
            doc = m(doc)
        return doc
    return mutate


def text(value: str) -> Callable[[dict[str, Any]], str]:
    """The document replaced by raw JSON text (goes through ``from_json``)."""
    return lambda doc: value


PAIR = ("colocation", 0)

# (case id, mutation of BASE, regex the message must match: the field name, then the value)
REJECTED: list[tuple[str, Callable[[dict[str, Any]], Any], str]] = [
    # the document
    ("not-json", text('{"gpus": {"V100": 2}, '), r"`document` = '\{\"gpus\": \{\"V100\": 2\}, '.*not valid JSON"),
    ("not-json-word", text("gpus"), r"`document` = 'gpus'.*not valid JSON"),
    ("not-an-object-list", text("[1, 2]"), r"`document` = \[1, 2\]: must be a JSON object"),
    ("not-an-object-number", text("42"), r"`document` = 42: must be a JSON object"),
    ("unknown-top-key", setting(("priority",), 7), r"`priority` = 7: unknown key"),
    ("unknown-job-key", setting(("jobs", 1, "prio"), 3), r"`jobs\[1\]\.prio` = 3: unknown key"),
    ("unknown-pair-key", setting(PAIR + ("share",), 0.5), r"`colocation\[0\]\.share` = 0\.5: unknown key"),
    ("missing-gpus", deleting(("gpus",)), r"`gpus` = None: missing"),
    ("missing-jobs", deleting(("jobs",)), r"`jobs` = None: missing"),
    # gpus
    ("gpus-list", setting(("gpus",), [2, 2]), r"`gpus` = \[2, 2\]: must be an object"),
    ("gpus-number", setting(("gpus",), 6), r"`gpus` = 6: must be an object"),
    ("gpus-negative", setting(("gpus", "K80"), -1), r"`gpus\.K80` = -1: must be an integer from 0 to 2,147,483,648"),
    ("gpus-fraction", setting(("gpus", "K80"), 1.5), r"`gpus\.K80` = 1\.5: must be an integer from 0 to 2,147,483,648"),
    ("gpus-bool", setting(("gpus", "K80"), True), r"`gpus\.K80` = True: must be an integer from 0 to 2,147,483,648"),
    ("gpus-string", setting(("gpus", "K80"), "2"), r"`gpus\.K80` = '2': must be an integer from 0 to 2,147,483,648"),
    ("gpus-nan", setting(("gpus", "K80"), NAN), r"`gpus\.K80` = nan: must be an integer from 0 to 2,147,483,648"),
    ("gpus-inf", setting(("gpus", "K80"), INF), r"`gpus\.K80` = inf: must be an integer from 0 to 2,147,483,648"),
    ("gpus-all-zero", setting(("gpus",), {"V100": 0, "P100": 0, "K80": 0}),
     r"`gpus` = \{'V100': 0, 'P100': 0, 'K80': 0\}: the cluster has no GPU"),
    ("gpus-empty", chain(setting(("gpus",), {}), setting(("jobs",), []), setting(("colocation",), [])),
     r"`gpus` = \{\}: the cluster has no GPU"),
    # jobs
    ("jobs-object", setting(("jobs",), {"a": 1}), r"`jobs` = \{'a': 1\}: must be a list"),
    ("job-not-object", setting(("jobs", 1), "lm-2"), r"`jobs\[1\]` = 'lm-2': must be an object"),
    ("id-missing", deleting(("jobs", 1, "id")), r"`jobs\[1\]\.id` = None: missing"),
    ("id-duplicate", setting(("jobs", 2, "id"), "lm-2"), r"`jobs\[2\]\.id` = 'lm-2': duplicate job id"),
    ("id-number", setting(("jobs", 1, "id"), 7), r"`jobs\[1\]\.id` = 7: must be a non-empty string"),
    ("scale-missing", deleting(("jobs", 1, "scale")), r"`jobs\[1\]\.scale` = None: must be a positive integer"),
    ("scale-0", setting(("jobs", 1, "scale"), 0), r"`jobs\[1\]\.scale` = 0: must be a positive integer"),
    ("scale-negative", setting(("jobs", 1, "scale"), -1), r"`jobs\[1\]\.scale` = -1: must be a positive"),
    ("scale-fraction", setting(("jobs", 1, "scale"), 1.5), r"`jobs\[1\]\.scale` = 1\.5: must be a positive"),
    ("scale-string", setting(("jobs", 1, "scale"), "2"), r"`jobs\[1\]\.scale` = '2': must be a positive"),
    ("scale-bool", setting(("jobs", 1, "scale"), True), r"`jobs\[1\]\.scale` = True: must be a positive"),
    ("weight-0", setting(("jobs", 1, "weight"), 0), r"`jobs\[1\]\.weight` = 0: must be finite and > 0"),
    ("weight-negative", setting(("jobs", 1, "weight"), -1), r"`jobs\[1\]\.weight` = -1: must be finite"),
    ("weight-nan", setting(("jobs", 1, "weight"), NAN), r"`jobs\[1\]\.weight` = nan: must be finite"),
    ("weight-inf", setting(("jobs", 1, "weight"), INF), r"`jobs\[1\]\.weight` = inf: must be finite"),
    ("weight-string", setting(("jobs", 1, "weight"), "1"), r"`jobs\[1\]\.weight` = '1': must be finite"),
    ("deficit-negative", setting(("jobs", 1, "deficit"), -0.1), r"`jobs\[1\]\.deficit` = -0\.1: must be finite"),
    ("deficit-nan", setting(("jobs", 1, "deficit"), NAN), r"`jobs\[1\]\.deficit` = nan: must be finite"),
    ("deficit-inf", setting(("jobs", 1, "deficit"), INF), r"`jobs\[1\]\.deficit` = inf: must be finite"),
    ("throughput-list", setting(("jobs", 1, "throughput"), [1.0, 2.0]),
     r"`jobs\[1\]\.throughput` = \[1\.0, 2\.0\]: must be an object"),
    ("throughput-missing", deleting(("jobs", 1, "throughput")), r"`jobs\[1\]\.throughput` = None: must be an"),
    ("throughput-unknown-type", setting(("jobs", 1, "throughput", "A100"), 3.0),
     r"`jobs\[1\]\.throughput\.A100` = 3\.0: GPU type 'A100' is not in `gpus`"),
    ("throughput-negative", setting(("jobs", 1, "throughput", "K80"), -2.0),
     r"`jobs\[1\]\.throughput\.K80` = -2\.0: must be finite and >= 0"),
    ("throughput-nan", setting(("jobs", 1, "throughput", "K80"), NAN),
     r"`jobs\[1\]\.throughput\.K80` = nan: must be finite and >= 0"),
    ("throughput-inf", setting(("jobs", 1, "throughput", "K80"), INF),
     r"`jobs\[1\]\.throughput\.K80` = inf: must be finite and >= 0"),
    ("throughput-string", setting(("jobs", 1, "throughput", "K80"), "17"),
     r"`jobs\[1\]\.throughput\.K80` = '17': must be finite and >= 0"),
    # a job that can run nowhere
    ("nowhere-all-zero", setting(("jobs", 2, "throughput"), {"V100": 0.0, "P100": 0, "K80": 0.0}),
     r"`jobs\[2\]` = 'transformer-3': the job can run nowhere"),
    ("nowhere-missing", setting(("jobs", 2, "throughput"), {}),
     r"`jobs\[2\]` = 'transformer-3': the job can run nowhere"),
    ("nowhere-too-few-gpus", chain(setting(("gpus", "K80"), 1), setting(("jobs", 3, "throughput"), {"K80": 3.0})),
     r"`jobs\[3\]` = 'resnet50-4': the job can run nowhere"),
    ("nowhere-gang-too-big", setting(("jobs", 3, "scale"), 4),
     r"`jobs\[3\]` = 'resnet50-4': the job can run nowhere"),
    # colocation
    ("colocation-object", setting(("colocation",), {"jobs": []}), r"`colocation` = \{'jobs': \[\]\}: must be a list"),
    ("pair-not-object", setting(PAIR, ["resnet18-1", "lm-2"]),
     r"`colocation\[0\]` = \['resnet18-1', 'lm-2'\]: must be an object"),
    ("pair-missing-gpu", deleting(PAIR + ("gpu",)), r"`colocation\[0\]\.gpu` = None: missing"),
    ("pair-unknown-job", setting(PAIR + ("jobs",), ["resnet18-1", "bert"]),
     r"`colocation\[0\]\.jobs` = \['resnet18-1', 'bert'\]: unknown job 'bert'"),
    ("pair-three-jobs", setting(PAIR + ("jobs",), ["resnet18-1", "lm-2", "transformer-3"]),
     r"`colocation\[0\]\.jobs` = \['resnet18-1', 'lm-2', 'transformer-3'\]: must be a list of two"),
    ("pair-self", setting(PAIR + ("jobs",), ["lm-2", "lm-2"]),
     r"`colocation\[0\]\.jobs` = \['lm-2', 'lm-2'\]: a job cannot be paired with itself"),
    ("pair-different-scales", setting(PAIR + ("jobs",), ["resnet18-1", "resnet50-4"]),
     r"`colocation\[0\]\.jobs` = \['resnet18-1', 'resnet50-4'\]: jobs of different scales \(1 and 2\)"),
    ("pair-gpu-unknown", setting(PAIR + ("gpu",), "A100"), r"`colocation\[0\]\.gpu` = 'A100': GPU type is not"),
    ("pair-gpu-not-string", setting(PAIR + ("gpu",), 0), r"`colocation\[0\]\.gpu` = 0: GPU type is not"),
    ("pair-cannot-run-zero", chain(setting(("jobs", 1, "throughput", "K80"), 0.0), setting(PAIR + ("gpu",), "K80")),
     r"`colocation\[0\]\.gpu` = 'K80': jobs 'resnet18-1' and 'lm-2' must both be able to run alone"),
    ("pair-cannot-run-missing", chain(deleting(("jobs", 0, "throughput", "K80")), setting(PAIR + ("gpu",), "K80")),
     r"`colocation\[0\]\.gpu` = 'K80': jobs 'resnet18-1' and 'lm-2' must both be able to run alone"),
    ("pair-cannot-run-too-few-gpus",
     chain(setting(("jobs", 0, "scale"), 2), setting(("jobs", 1, "scale"), 2), setting(("gpus", "K80"), 1),
           setting(("jobs", 0, "throughput", "K80"), 1.0), setting(PAIR + ("gpu",), "K80")),
     r"`colocation\[0\]\.gpu` = 'K80': jobs 'resnet18-1' and 'lm-2' must both be able to run alone"),
    ("pair-throughput-one", setting(PAIR + ("throughput",), [15.2]),
     r"`colocation\[0\]\.throughput` = \[15\.2\]: must be two finite non-negative numbers"),
    ("pair-throughput-three", setting(PAIR + ("throughput",), [1.0, 2.0, 3.0]),
     r"`colocation\[0\]\.throughput` = \[1\.0, 2\.0, 3\.0\]: must be two"),
    ("pair-throughput-scalar", setting(PAIR + ("throughput",), 15.2),
     r"`colocation\[0\]\.throughput` = 15\.2: must be two"),
    ("pair-throughput-string", setting(PAIR + ("throughput",), ["15.2", 41.0]),
     r"`colocation\[0\]\.throughput` = \['15\.2', 41\.0\]: must be two"),
    ("pair-throughput-bool", setting(PAIR + ("throughput",), [True, 41.0]),
     r"`colocation\[0\]\.throughput` = \[True, 41\.0\]: must be two"),
    ("pair-throughput-negative", setting(PAIR + ("throughput",), [15.2, -41.0]),
     r"`colocation\[0\]\.throughput` = \[15\.2, -41\.0\]: must be two"),
    ("pair-throughput-nan", setting(PAIR + ("throughput",), [NAN, 41.0]),
     r"`colocation\[0\]\.throughput` = \[nan, 41\.0\]: must be two"),
    ("pair-throughput-inf", setting(PAIR + ("throughput",), [15.2, INF]),
     r"`colocation\[0\]\.throughput` = \[15\.2, inf\]: must be two"),
    ("pair-duplicate", adding_pair({"jobs": ["resnet18-1", "lm-2"], "gpu": "V100", "throughput": [10.0, 30.0]}),
     r"`colocation\[1\]` = \['resnet18-1', 'lm-2', 'V100'\]: the same pair is listed twice"),
    ("pair-duplicate-reversed",
     adding_pair({"jobs": ["lm-2", "resnet18-1"], "gpu": "V100", "throughput": [41.0, 15.2]}),
     r"`colocation\[1\]` = \['lm-2', 'resnet18-1', 'V100'\]: the same pair is listed twice"),
    # knobs
    ("epsilon-negative", setting(("epsilon",), -0.1), r"`epsilon` = -0\.1: must be in \[0, 1\)"),
    ("epsilon-one", setting(("epsilon",), 1.0), r"`epsilon` = 1\.0: must be in \[0, 1\)"),
    ("epsilon-nan", setting(("epsilon",), NAN), r"`epsilon` = nan: must be in \[0, 1\)"),
    ("epsilon-string", setting(("epsilon",), "0.1"), r"`epsilon` = '0\.1': must be in \[0, 1\)"),
    ("epsilon-null", setting(("epsilon",), None), r"`epsilon` = None: must be in \[0, 1\)"),
    ("lambda-0", setting(("fairness_weight",), 0), r"`fairness_weight` = 0: must be finite and > 0"),
    ("lambda-negative", setting(("fairness_weight",), -1.0), r"`fairness_weight` = -1\.0: must be finite"),
    ("lambda-inf", setting(("fairness_weight",), INF), r"`fairness_weight` = inf: must be finite and > 0"),
    ("lambda-nan", setting(("fairness_weight",), NAN), r"`fairness_weight` = nan: must be finite and > 0"),
    ("lambda-bool", setting(("fairness_weight",), True), r"`fairness_weight` = True: must be finite and > 0"),
]


def _load(doc: Any) -> RoundProblem:
    return RoundProblem.from_json(doc) if isinstance(doc, str) else RoundProblem.from_dict(doc)


@pytest.mark.parametrize(("mutate", "match"), [pytest.param(m, r, id=i) for i, m, r in REJECTED])
def test_rejected_document_names_field_and_value(mutate, match):
    doc = mutate(base())
    with pytest.raises(InvalidInputError, match=match):
        _load(doc)


@pytest.mark.parametrize(("mutate", "match"), [pytest.param(m, r, id=i) for i, m, r in REJECTED])
def test_allocate_rejects_before_solving(mutate, match):
    """``allocate`` validates dicts and JSON text itself, with the same message (no model is built)."""
    doc = mutate(base())
    with pytest.raises(InvalidInputError, match=match):
        allocate(doc, mode="exact")


@pytest.mark.parametrize(("mutate", "match"), [pytest.param(m, r, id=i) for i, m, r in REJECTED
                                               if not i.startswith("not-")])
def test_rejected_through_json_text(mutate, match):
    """The same documents as JSON text (NaN and Infinity are JSON extensions that json accepts)."""
    doc = mutate(base())
    with pytest.raises(InvalidInputError, match=match):
        RoundProblem.from_json(json.dumps(doc))


def test_error_fields():
    with pytest.raises(InvalidInputError) as info:
        RoundProblem.from_dict(setting(("jobs", 1, "scale"), 0)(base()))
    err = info.value
    assert (err.field, err.value) == ("jobs[1].scale", 0)
    assert "positive integer" in err.reason


def test_invalid_input_error_is_a_value_error():
    assert issubclass(InvalidInputError, ValueError)
    assert issubclass(InvalidInputError, FairshareError)
    with pytest.raises(ValueError, match=r"`epsilon` = 1\.0"):
        RoundProblem.from_dict(setting(("epsilon",), 1.0)(base()))


def test_duplicate_json_key_is_rejected():
    text_ = ('{"gpus": {"V100": 2, "V100": 3}, "jobs": [{"id": "a", "scale": 1, "scale": 2, '
             '"throughput": {"V100": 1.0}}]}')
    with pytest.raises(InvalidInputError, match=r"V100|scale"):
        RoundProblem.from_json(text_)


def test_huge_scale_is_rejected_as_invalid_input():
    with pytest.raises(InvalidInputError, match=r"`jobs\[1\]"):
        RoundProblem.from_dict(setting(("jobs", 1, "scale"), 2**70)(base()))


def test_huge_gpu_count_is_valid_or_invalid_input():
    try:
        p = RoundProblem.from_dict(setting(("gpus", "K80"), 10**20)(base()))
    except InvalidInputError as exc:
        assert "gpus.K80" in str(exc)
    else:
        assert p.capacity[2] > 0


# ---------------------------------------------------------------- array constructor validation
def _arrays(**changes: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "gpu_types": ("A", "B"), "capacity": np.array([2, 1]), "job_ids": ("x", "y", "z"),
        "scale": np.array([1, 1, 2]), "throughput": np.array([[1.0, 2.0], [3.0, 0.0], [4.0, 0.0]]),
        "pair_jobs": np.array([[0, 1]]), "pair_gpu": np.array([0]), "pair_throughput": np.array([[0.5, 1.0]])}
    fields.update(changes)
    return fields


@pytest.mark.parametrize(("changes", "match"), [
    ({"gpu_types": ("A", "A")}, r"`gpus` = 'A': duplicate GPU type"),
    ({"capacity": np.array([2, -1])}, r"`gpus\.B` = -1: must be an integer from 0 to 2,147,483,648"),
    ({"capacity": np.array([0, 0])}, r"`gpus` = \{'A': 0, 'B': 0\}: the cluster has no GPU"),
    ({"job_ids": ("x", "y", "x")}, r"`jobs\[2\]\.id` = 'x': duplicate job id"),
    ({"scale": np.array([1, 0, 2])}, r"`jobs\[1\]\.scale` = 0: must be a positive integer"),
    ({"weight": np.array([1.0, 0.0, 1.0])}, r"`jobs\[1\]\.weight` = 0\.0: must be finite and > 0"),
    ({"deficit": np.array([0.0, 0.0, -0.5])}, r"`jobs\[2\]\.deficit` = -0\.5: must be finite and >= 0"),
    ({"throughput": np.array([[1.0, np.nan], [3.0, 0.0], [4.0, 0.0]])}, r"`jobs\[0\]\.throughput\.B` = nan"),
    ({"throughput": np.array([[1.0, 2.0], [3.0, 0.0], [0.0, 4.0]])}, r"`jobs\[2\]` = 'z': the job can run nowhere"),
    ({"epsilon": 1.5}, r"`epsilon` = 1\.5"),
    ({"fairness_weight": -2.0}, r"`fairness_weight` = -2\.0"),
    ({"pair_jobs": np.array([[0, 3]])}, r"`colocation\[0\]\.jobs` = \[0, 3\]: unknown job"),
    ({"pair_jobs": np.array([[1, 1]])}, r"`colocation\[0\]\.jobs` = \['y', 'y'\]: a job cannot be paired"),
    ({"pair_jobs": np.array([[0, 2]])}, r"`colocation\[0\]\.jobs` = \['x', 'z'\]: jobs of different scales"),
    ({"pair_gpu": np.array([1])}, r"`colocation\[0\]\.gpu` = 'B': jobs 'x' and 'y' must both"),
    ({"pair_gpu": np.array([2])}, r"`colocation\[0\]\.gpu` = 2: unknown GPU type"),
    ({"pair_throughput": np.array([[0.5, -1.0]])}, r"`colocation\[0\]\.throughput` = \[0\.5, -1\.0\]"),
    ({"pair_jobs": np.array([[0, 1], [1, 0]]), "pair_gpu": np.array([0, 0]),
      "pair_throughput": np.array([[0.5, 1.0], [1.0, 0.5]])}, r"`colocation\[1\]` = \['y', 'x', 'A'\]: the same"),
])
def test_array_constructor_rejects(changes, match):
    with pytest.raises(InvalidInputError, match=match):
        RoundProblem(**_arrays(**changes))


def test_arrays_are_read_only_and_typed():
    p = RoundProblem(**_arrays())
    for a in (p.capacity, p.scale, p.throughput, p.weight, p.deficit, p.pair_jobs, p.pair_gpu, p.pair_throughput):
        assert not a.flags.writeable
    assert p.capacity.dtype == np.int64 and p.scale.dtype == np.int64 and p.throughput.dtype == np.float64
    with pytest.raises(ValueError):
        p.throughput[0, 0] = 5.0


# ---------------------------------------------------------------- valid corner cases
def test_type_with_zero_gpus_is_fine():
    doc = base()
    doc["gpus"]["A100"] = 0
    doc["jobs"][0]["throughput"]["A100"] = 99.0  # a throughput on an empty type is legal, just unusable
    p = RoundProblem.from_dict(doc)
    assert p.gpu_types == ("V100", "P100", "K80", "A100")
    assert p.capacity.tolist() == [2, 2, 2, 0]
    assert not p.runnable[:, 3].any()
    assert p.total_gpus == 6


def test_defaults():
    doc = {"gpus": {"V100": 1}, "jobs": [{"id": "a", "scale": 1, "throughput": {"V100": 2.0}}]}
    p = RoundProblem.from_dict(doc)
    assert p.weight.tolist() == [1.0] and p.deficit.tolist() == [0.0]
    assert p.epsilon == 0.0 and p.fairness_weight == 100.0
    assert p.num_pairs == 0 and p.pair_jobs.shape == (0, 2)


def test_same_pair_on_two_types_is_fine():
    doc = adding_pair({"jobs": ["lm-2", "resnet18-1"], "gpu": "P100", "throughput": [50.0, 20.0]})(base())
    p = RoundProblem.from_dict(doc)
    assert p.num_pairs == 2
    assert p.pair_jobs.tolist() == [[0, 1], [1, 0]]
    assert p.pair_gpu.tolist() == [0, 1]
    assert p.pair_throughput.tolist() == [[15.2, 41.0], [50.0, 20.0]]


def test_job_also_listing_a_too_small_type_is_fine():
    """resnet50-4 (scale 2) may list K80 with 1 GPU: that type is just not runnable for it."""
    doc = chain(setting(("gpus", "K80"), 1), setting(("jobs", 3, "throughput", "K80"), 3.0))(base())
    p = RoundProblem.from_dict(doc)
    assert p.runnable[3].tolist() == [True, True, False]
    assert p.throughput[3, 2] == 3.0


def test_example_document_parses():
    p = RoundProblem.from_dict(base())
    assert p.job_ids == ("resnet18-1", "lm-2", "transformer-3", "resnet50-4")
    assert p.scale.tolist() == [1, 1, 1, 2]
    assert p.deficit.tolist() == [0.0, 0.0, 0.5, 0.0]
    assert p.throughput[3].tolist() == [7.9, 4.7, 0.0]
    assert p.epsilon == 0.1
    assert np.allclose(p.need, [0.9, 0.9, 1.4, 0.9])
    assert p.job_index("transformer-3") == 2


def test_normalized_weights_have_mean_one():
    doc = base()
    for job, w in zip(doc["jobs"], (1.0, 3.0, 2.0, 2.0)):
        job["weight"] = w
    p = RoundProblem.from_dict(doc)
    assert p.normalized_weight.tolist() == [0.5, 1.5, 1.0, 1.0]


@pytest.mark.parametrize("mode", ["exact", "lp", "fast"])
def test_empty_job_list_is_valid_and_gives_the_empty_placement(mode):
    doc = {"gpus": {"V100": 2, "K80": 0}, "jobs": []}
    p = RoundProblem.from_dict(doc)
    assert p.num_jobs == 0
    alloc = allocate(p, mode=mode)
    assert str(alloc.status) == "optimal"
    assert alloc.values.objective == 0.0
    assert alloc.values.efficiency == 0.0 and alloc.values.shortfall == 0.0
    assert alloc.placements == ()
    out = alloc.to_dict()
    assert out["status"] == "optimal" and out["objective"] == 0.0
    assert out["placements"] == [] and out["jobs"] == {}


def test_empty_job_list_through_json():
    alloc = allocate('{"gpus": {"V100": 1}, "jobs": [], "colocation": []}', mode="exact")
    assert (str(alloc.status), alloc.values.objective, alloc.placements) == ("optimal", 0.0, ())


# ---------------------------------------------------------------- round-trips
def _same_problem(p: RoundProblem, q: RoundProblem) -> None:
    assert p.gpu_types == q.gpu_types and p.job_ids == q.job_ids
    for name in ("capacity", "scale", "throughput", "weight", "deficit", "pair_jobs", "pair_gpu", "pair_throughput"):
        assert np.array_equal(getattr(p, name), getattr(q, name)), name
    assert p.epsilon == q.epsilon and p.fairness_weight == q.fairness_weight


@given(round_problems())
def test_to_dict_from_dict_round_trip(problem):
    again = RoundProblem.from_dict(problem.to_dict())
    _same_problem(problem, again)
    assert again.to_dict() == problem.to_dict()


@given(round_documents())
def test_document_round_trip_through_json(doc):
    p = RoundProblem.from_json(json.dumps(doc))
    _same_problem(p, RoundProblem.from_dict(doc))
    _same_problem(p, RoundProblem.from_json(p.to_json()))
    # nothing is dropped: every job, type and pair of the document is in the problem
    assert p.job_ids == tuple(j["id"] for j in doc["jobs"])
    assert dict(zip(p.gpu_types, p.capacity.tolist())) == doc["gpus"]
    assert p.num_pairs == len(doc.get("colocation", []))
    for i, job in enumerate(doc["jobs"]):
        for g, v in job["throughput"].items():
            assert p.throughput[i, p.gpu_types.index(g)] == v
        assert p.weight[i] == job.get("weight", 1.0) and p.deficit[i] == job.get("deficit", 0.0)
    assert p.epsilon == doc.get("epsilon", 0.0)
    assert p.fairness_weight == doc.get("fairness_weight", 100.0)


@given(round_problems(min_jobs=2))
def test_take_jobs_keeps_pairs_among_kept_jobs(problem):
    rows = list(range(problem.num_jobs))[::-1][: problem.num_jobs - 1]  # drop job 0, reverse the rest
    sub = problem.take_jobs(rows)
    assert sub.job_ids == tuple(problem.job_ids[i] for i in rows)
    kept = {(problem.job_ids[a], problem.job_ids[b], g) for (a, b), g in
            zip(problem.pair_jobs.tolist(), problem.pair_gpu.tolist()) if 0 not in (a, b)}
    got = {(sub.job_ids[a], sub.job_ids[b], g) for (a, b), g in zip(sub.pair_jobs.tolist(), sub.pair_gpu.tolist())}
    assert got == kept


def test_replace_validates_again():
    p = RoundProblem.from_dict(base())
    assert p.replace(epsilon=0.5).epsilon == 0.5
    with pytest.raises(InvalidInputError, match=r"`epsilon` = 1\.0"):
        p.replace(epsilon=1.0)
    assert math.isclose(RoundProblem.from_dict(base()).epsilon, 0.1)


# ---------------------------------------------------------------- numpy scalars, bools and huge numbers
def test_numpy_scalars_are_numbers():
    doc = base()
    doc["gpus"]["K80"] = np.int64(2)
    doc["jobs"][1]["scale"] = np.int32(1)
    doc["jobs"][1]["weight"] = np.float32(2.5)
    doc["jobs"][1]["deficit"] = np.float64(0.25)
    doc["jobs"][1]["throughput"]["K80"] = np.float32(17.5)
    doc["colocation"][0]["throughput"] = [np.float64(15.2), np.int64(41)]
    doc["epsilon"], doc["fairness_weight"] = np.float64(0.1), np.int64(10)
    p = RoundProblem.from_dict(doc)
    assert p.capacity.tolist() == [2, 2, 2] and p.scale[1] == 1
    assert (p.weight[1], p.deficit[1], p.throughput[1, 2]) == (2.5, 0.25, 17.5)
    assert p.pair_throughput.tolist() == [[15.2, 41.0]]
    assert (p.epsilon, p.fairness_weight) == (0.1, 10.0)
    assert type(p.epsilon) is float and type(p.fairness_weight) is float


@pytest.mark.parametrize(("mutate", "match"), [
    (setting(("gpus", "K80"), np.bool_(True)), r"`gpus\.K80` = np\.True_: must be an integer from 0 to 2,147,483,648"),
    (setting(("jobs", 1, "scale"), np.bool_(True)), r"`jobs\[1\]\.scale` = np\.True_: must be a positive integer"),
    (setting(("jobs", 1, "weight"), np.bool_(True)), r"`jobs\[1\]\.weight` = np\.True_: must be finite and > 0"),
    (setting(("jobs", 1, "deficit"), False), r"`jobs\[1\]\.deficit` = False: must be finite and >= 0"),
    (setting(("jobs", 1, "throughput", "K80"), True), r"`jobs\[1\]\.throughput\.K80` = True: must be finite"),
    (setting(("jobs", 1, "weight"), np.float64("nan")), r"`jobs\[1\]\.weight` = np\.float64\(nan\): must be"),
    (setting(("jobs", 1, "deficit"), "0.5"), r"`jobs\[1\]\.deficit` = '0\.5': must be finite and >= 0"),
    (setting(("jobs", 1, "scale"), None), r"`jobs\[1\]\.scale` = None: must be a positive integer"),
    (setting(("jobs", 1, "weight"), 10**400), r"`jobs\[1\]\.weight` = '1000.*\.\.\.': must be finite and > 0"),
    (setting(("jobs", 1, "throughput", "K80"), -(10**400)), r"`jobs\[1\]\.throughput\.K80` = '-1000.*: must be"),
    (setting(PAIR + ("throughput",), [15.2, 10**400]), r"`colocation\[0\]\.throughput` = '\[15\.2, 1000.*: must"),
    (setting(("gpus", "K80"), 10**400), r"`gpus\.K80` = '1000.*: must be an integer from 0 to 2,147,483,648"),
    (setting(("jobs", 1, "scale"), 10**400), r"`jobs\[1\]\.scale` = '1000.*: larger than any GPU count"),
])
def test_bools_strings_and_huge_ints_are_rejected_with_the_field(mutate, match):
    with pytest.raises(InvalidInputError, match=match):
        RoundProblem.from_dict(mutate(base()))


# ---------------------------------------------------------------- supported ranges (HiGHS's limits)
@pytest.mark.parametrize(("mutate", "match"), [
    (setting(("gpus", "K80"), 2**31 + 1), r"`gpus\.K80` = 2147483649: must be an integer "
     r"from 0 to 2,147,483,648"),
    (setting(("gpus", "K80"), 2**53 + 1), r"`gpus\.K80` = 9007199254740993: must be an "
     r"integer from 0 to 2,147,483,648"),
    (setting(("gpus", "K80"), 2.0**60), r"`gpus\.K80` = 1\.152921504606847e\+18: must be an integer from 0"),
    (setting(("jobs", 1, "scale"), 2**31 + 1), r"`jobs\[1\]\.scale` = 2147483649: larger than any GPU count"),
    (setting(("jobs", 1, "throughput", "K80"), 1.5e12), r"`jobs\[1\]\.throughput\.K80` = 1500000000000\.0: larger "
     r"than fairshare supports \(at most 1e12"),
    (setting(("jobs", 1, "deficit"), 2e12), r"`jobs\[1\]\.deficit` = 2000000000000\.0: larger than fairshare"),
    (setting(("fairness_weight",), 1e13), r"`fairness_weight` = 10000000000000\.0: larger than fairshare"),
    (setting(PAIR + ("throughput",), [1.0, 1e16]), r"`colocation\[0\]\.throughput` = \[1\.0, 1e\+16\]: larger than"),
    (setting(("jobs", 1, "weight"), 1e13), r"`jobs\[1\]\.weight` = 10000000000000\.0: more than 1e12 times the "
     r"smallest weight \(1\.0 of jobs\[0\]\)"),
    (setting(("jobs", 1, "weight"), 1e-13), r"`jobs\[0\]\.weight` = 1\.0: more than 1e12 times the smallest weight "
     r"\(1e-13 of jobs\[1\]\)"),
])
def test_values_beyond_the_supported_range_are_rejected(mutate, match):
    with pytest.raises(InvalidInputError, match=match):
        RoundProblem.from_dict(mutate(base()))


def test_values_at_the_supported_limits_are_valid():
    doc = base()
    doc["gpus"]["K80"] = 2**31
    doc["jobs"][1]["throughput"]["K80"] = 1e12
    doc["jobs"][1]["deficit"] = 1e12
    doc["jobs"][1]["weight"] = 1e12  # the others are 1: a ratio of exactly 1e12
    doc["fairness_weight"] = 1e12
    p = RoundProblem.from_dict(doc)
    assert p.capacity[2] == 2**31 and p.capacity.dtype == np.int64
    assert p.total_gpus == 2**31 + 4


def test_many_huge_gpu_types_give_a_clear_error_not_no_gpu():
    doc = {"gpus": {f"T{i}": 2**53 for i in range(1024)}, "jobs": []}
    with pytest.raises(InvalidInputError, match=r"`gpus\.T0` = 9007199254740992: must be an integer from 0 to "
                                                 r"2,147,483,648"):
        RoundProblem.from_dict(doc)
    p = RoundProblem.from_dict({"gpus": {f"T{i}": 2**31 for i in range(1024)}, "jobs": []})
    assert p.total_gpus == 1024 * 2**31  # no int64 overflow at the limit


def test_the_array_constructor_checks_the_same_ranges():
    with pytest.raises(InvalidInputError, match=r"`gpus\.A` = 4294967296: must be an integer from 0"):
        RoundProblem(**_arrays(capacity=np.array([2**32, 1])))
    with pytest.raises(InvalidInputError, match=r"`jobs\[2\]\.throughput\.A` = 2e\+16: larger than"):
        RoundProblem(**_arrays(throughput=np.array([[1.0, 2.0], [3.0, 0.0], [2e16, 0.0]])))
    with pytest.raises(InvalidInputError, match=r"^`jobs\[1\]\.weight` = 1\.0: more than 1e12 "
                       r"times the smallest weight \(1e-20 of jobs\[0\]\)$"):
        RoundProblem(**_arrays(weight=np.array([1e-20, 1.0, 1.0])))


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize(("weights", "expected"), [
    ([1e308, 1e308, 1e308, 1e308], [1.0, 1.0, 1.0, 1.0]),
    ([1e308, 5e307, 1e308, 5e307], [4 / 3, 2 / 3, 4 / 3, 2 / 3]),
    ([1.7e308, 1.7e308, 1.7e308, 1.7e308 / 1e12], [4 / (3 + 1e-12)] * 3 + [4e-12 / (3 + 1e-12)]),
])
def test_normalized_weight_has_mean_one_even_when_the_sum_overflows(weights, expected):
    doc = base()
    for job, w in zip(doc["jobs"], weights):
        job["weight"] = w
    nw = RoundProblem.from_dict(doc).normalized_weight
    assert np.all(np.isfinite(nw))
    assert nw == pytest.approx(expected, rel=1e-12)
    assert nw.mean() == pytest.approx(1.0, rel=1e-12)


def test_normalized_weight_is_unchanged_for_ordinary_weights():
    w = np.array([0.3, 1.7, 2.0, 11.0])
    p = RoundProblem(**_arrays(job_ids=("a", "b", "c", "d"), scale=np.array([1, 1, 1, 1]),
                               throughput=np.ones((4, 2)), weight=w))
    assert np.array_equal(p.normalized_weight, w / w.mean())  # bit for bit: no change to solved numbers


# ---------------------------------------------------------------- plain array fields and replace()
def test_omitted_optional_arrays_get_read_only_defaults():
    p = RoundProblem(gpu_types=("A",), capacity=np.array([2]), job_ids=("x", "y"), scale=np.array([1, 2]),
                     throughput=np.array([[1.0], [2.0]]))
    assert p.weight.tolist() == [1.0, 1.0] and p.deficit.tolist() == [0.0, 0.0]
    assert p.pair_jobs.shape == (0, 2) and p.pair_gpu.shape == (0,) and p.pair_throughput.shape == (0, 2)
    assert p.pair_jobs.dtype == np.int64 and p.pair_throughput.dtype == np.float64
    for a in (p.weight, p.deficit, p.pair_jobs, p.pair_gpu, p.pair_throughput):
        assert isinstance(a, np.ndarray) and not a.flags.writeable
    assert (p.epsilon, p.fairness_weight) == (0.0, 100.0)


def test_replace_keeps_every_field_it_is_not_given():
    p = RoundProblem.from_dict(base())
    q = p.replace()
    _same_problem(p, q)
    assert q.job_index("lm-2") == 1
    r = p.replace(fairness_weight=7.0, deficit=np.zeros(4))
    assert r.fairness_weight == 7.0 and r.deficit.tolist() == [0.0] * 4
    assert r.epsilon == p.epsilon and np.array_equal(r.pair_throughput, p.pair_throughput)
    with pytest.raises(TypeError):
        p.replace(_job_index={})


def test_problem_is_frozen():
    p = RoundProblem.from_dict(base())
    with pytest.raises(AttributeError):
        p.epsilon = 0.5  # type: ignore[misc]


def test_problem_pickles():
    import pickle

    p = RoundProblem.from_dict(base())
    q = pickle.loads(pickle.dumps(p))
    _same_problem(p, q)
    assert q.job_index("resnet50-4") == 3


@settings(max_examples=60, deadline=None)
@given(problem=round_problems(max_jobs=12, scales=(0.5, 1, 2, 4)))
def test_the_simulators_unchecked_rounds_equal_checked_ones(problem: RoundProblem) -> None:
    """``RoundProblem.from_trusted_arrays`` (the simulator's rounds) builds what the constructor builds."""
    args = dict(gpu_types=problem.gpu_types, capacity=np.array(problem.capacity), job_ids=problem.job_ids,
                scale=np.array(problem.scale), throughput=np.array(problem.throughput),
                weight=np.array(problem.weight), deficit=np.array(problem.deficit),
                pair_jobs=np.array(problem.pair_jobs), pair_gpu=np.array(problem.pair_gpu),
                pair_throughput=np.array(problem.pair_throughput), epsilon=problem.epsilon,
                fairness_weight=problem.fairness_weight)
    checked, unchecked = RoundProblem(**args), RoundProblem.from_trusted_arrays(**args)
    for f in dataclasses.fields(RoundProblem):
        a, b = getattr(checked, f.name), getattr(unchecked, f.name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), f.name
            assert not b.flags.writeable and b.flags.c_contiguous, f.name
        else:
            assert a == b and type(a) is type(b), f.name


@pytest.mark.parametrize(("field", "value"), [("weight", [1.0, 1e13]), ("deficit", [0.0, -1.0]),
                                              ("deficit", [0.0, np.inf]), ("job_ids", ("a", "a"))])
def test_the_simulators_unchecked_rounds_still_refuse_what_depends_on_the_round(field: str, value) -> None:
    """What a trace checked job by job cannot rule out fails as the constructor fails."""
    args = dict(gpu_types=("V100",), capacity=np.array([2]), job_ids=("a", "b"), scale=np.array([1, 1]),
                throughput=np.ones((2, 1)), weight=np.ones(2), deficit=np.zeros(2), pair_jobs=np.zeros((0, 2)),
                pair_gpu=np.zeros(0), pair_throughput=np.zeros((0, 2)), epsilon=0.0, fairness_weight=100.0)
    args[field] = value if field == "job_ids" else np.array(value)
    with pytest.raises(InvalidInputError) as checked:
        RoundProblem(**args)
    with pytest.raises(InvalidInputError) as unchecked:
        RoundProblem.from_trusted_arrays(**args)
    assert str(unchecked.value) == str(checked.value)
