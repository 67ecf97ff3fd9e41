"""Tests of fairshare.sim.traces: the Trace array form, CSV/JSON reading and writing, and the generator."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairshare.errors import InvalidInputError
from fairshare.sim.catalog import load_catalog
from fairshare.sim.traces import (
    DEFAULT_TRACE,
    SCALE_PROBABILITIES,
    Trace,
    generate_trace,
    read_trace,
    write_trace,
)

CAT = load_catalog()
GAVEL = ("K80", "P100", "V100")
HEADER = "id,arrival,model,scale,iterations,weight,tenant"
GOOD = "a,0,A3C,1,100,1,x"
JOB_A = '{"id": "a", "arrival": 0, "model": "A3C", "scale": 1, "iterations": 1}'


def _csv(*rows: str, header: str = HEADER) -> io.StringIO:
    return io.StringIO("\n".join([header, *rows]) + "\n")


# ---------------------------------------------------------------------- the Trace dataclass
def test_trace_defaults_and_arrival_order() -> None:
    t = Trace(id=["c", "a", "b"], arrival=[5.0, 0.0, 5.0], model=["A3C", "CycleGAN", "LM (batch size 5)"],
              scale=[1, 1, 2], iterations=[1, 2, 3])
    assert t.id == ("a", "c", "b")                                     # stable: c before b at t = 5
    assert t.scale.dtype == np.int64 and t.scale.tolist() == [1, 1, 2]
    assert t.weight.tolist() == [1.0, 1.0, 1.0] and t.tenant == ("", "", "")
    assert not t.arrival.flags.writeable and len(t) == t.num_jobs == 3
    assert t.take([2, 0]).id == ("a", "b")


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"id": ["a", "a"]}, r"`jobs\[1\].id` = 'a': duplicate job id"),
    ({"id": ["a", ""]}, r"`jobs\[1\].id` = '': must be a non-empty string"),
    ({"arrival": [0.0, -1.0]}, r"`jobs\[1\].arrival` = -1.0: must be finite and >= 0"),
    ({"arrival": [0.0, np.nan]}, r"`jobs\[1\].arrival` = nan"),
    ({"scale": [1, 0]}, r"`jobs\[1\].scale` = 0.0: must be a positive integer"),
    ({"iterations": [1.0, np.inf]}, r"`jobs\[1\].iterations` = inf: must be finite and > 0"),
    ({"weight": [1.0, 0.0]}, r"`jobs\[1\].weight` = 0.0: must be finite and > 0"),
    ({"model": ["A3C"]}, r"`model` = 1: expected 2 values"),
    ({"iterations": [1.0]}, r"`iterations` = \(1,\): expected 2 values"),
    ({"tenant": ["x", 3]}, r"`jobs\[1\].tenant` = 3: must be a string"),
])
def test_trace_validation(kwargs: dict, match: str) -> None:
    base = {"id": ["a", "b"], "arrival": [0.0, 1.0], "model": ["A3C", "A3C"], "scale": [1, 1],
            "iterations": [1.0, 1.0]}
    with pytest.raises(InvalidInputError, match=match):
        Trace(**{**base, **kwargs})


# ---------------------------------------------------------------------- reading
def test_read_csv_minimal_and_optional_columns() -> None:
    t = read_trace(_csv("j2,30.5,LM (batch size 20),2,1e3", "j1,0,A3C,1,50",
                        header="id,arrival,model,scale,iterations"))
    assert t.id == ("j1", "j2") and t.arrival.tolist() == [0.0, 30.5] and t.iterations.tolist() == [50.0, 1000.0]
    assert t.weight.tolist() == [1.0, 1.0] and t.tenant == ("", "")
    t = read_trace(_csv("a,0,A3C,1,100,,", "b,1,A3C,1,100,2.5,team-b", header=HEADER))
    assert t.weight.tolist() == [1.0, 2.5] and t.tenant == ("", "team-b")
    t = read_trace(_csv("A3C,2,10,7.5,a", header="model,scale,iterations,arrival,id"))   # any column order
    assert t.id == ("a",) and t.model == ("A3C",) and t.scale.tolist() == [2] and t.arrival.tolist() == [7.5]


def test_read_quoted_and_blank_lines() -> None:
    t = read_trace(io.StringIO(f'{HEADER}\n\n"x,1",0,"ResNet-50 (batch size 64)",1,5,1,\n\n'))
    assert t.id == ("x,1",) and t.model == ("ResNet-50 (batch size 64)",)


@pytest.mark.parametrize(("text", "match"), [
    ("id,arrival,model,scale\na,0,A3C,1\n", r"`header` = 'id,arrival,model,scale': missing column 'iterations'"),
    ("id,arrival,model,scale,iterations,colour\n", r"`header` = 'colour': unknown column"),
    ("id,arrival,arrival,model,scale,iterations\n", r"`header` = 'arrival': duplicate column"),
    ("", r"`header` = '': <stream> is empty"),
    (f"{HEADER}\n{GOOD}\nb,soon,A3C,1,100,1,x\n", r"`row 2.arrival` = 'soon': not a number \(<stream>, line 3\)"),
    (f"{HEADER}\nb,-5,A3C,1,100,1,x\n", r"`row 1.arrival` = '-5': must be a finite number >= 0"),
    (f"{HEADER}\nb,nan,A3C,1,100,1,x\n", r"`row 1.arrival` = 'nan': must be a finite number >= 0"),
    (f"{HEADER}\nb,,A3C,1,100,1,x\n", r"`row 1.arrival` = '': missing value"),
    (f"{HEADER}\nb,0,,1,100,1,x\n", r"`row 1.model` = '': missing value"),
    (f"{HEADER}\n,0,A3C,1,100,1,x\n", r"`row 1.id` = '': missing value"),
    (f"{HEADER}\nb,0,A3C,0,100,1,x\n", r"`row 1.scale` = '0': must be a positive integer"),
    (f"{HEADER}\nb,0,A3C,2.5,100,1,x\n", r"`row 1.scale` = '2.5': must be a positive integer"),
    (f"{HEADER}\nb,0,A3C,two,100,1,x\n", r"`row 1.scale` = 'two': not a number"),
    (f"{HEADER}\nb,0,A3C,1,0,1,x\n", r"`row 1.iterations` = '0': must be a finite number > 0"),
    (f"{HEADER}\nb,0,A3C,1,inf,1,x\n", r"`row 1.iterations` = 'inf': must be a finite number > 0"),
    (f"{HEADER}\nb,0,A3C,1,lots,1,x\n", r"`row 1.iterations` = 'lots': not a number"),
    (f"{HEADER}\nb,0,A3C,1,100,0,x\n", r"`row 1.weight` = '0': must be a finite number > 0"),
    (f"{HEADER}\nb,0,A3C,1,100,-2,x\n", r"`row 1.weight` = '-2': must be a finite number > 0"),
    (f"{HEADER}\nb,0,A3C,1,100,nan,x\n", r"`row 1.weight` = 'nan': must be a finite number > 0"),
    (f"{HEADER}\n{GOOD}\n{GOOD}\n", r"`row 2.id` = 'a': duplicate id \(first in row 1\) \(<stream>, line 3\)"),
    (f"{HEADER}\n{GOOD}\nb,0,A3C,1\n", r"`row 2` = 'b,0,A3C,1': expected 7 fields, got 4 \(<stream>, line 3\)"),
])
def test_csv_reader_errors(text: str, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        read_trace(io.StringIO(text))


def test_unknown_model_only_with_catalog() -> None:
    text = f"{HEADER}\n{GOOD}\nb,0,GPT-7,1,100,1,x\n"
    assert read_trace(io.StringIO(text)).model == ("A3C", "GPT-7")
    with pytest.raises(InvalidInputError, match=r"`row 2.model` = 'GPT-7': unknown model \(not in the catalog\)"):
        read_trace(io.StringIO(text), catalog=CAT)


def test_line_numbers_count_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(f"{HEADER}\n\n{GOOD}\n\nb,0,A3C,-1,100,1,x\n")
    with pytest.raises(InvalidInputError, match=r"`row 2.scale` = '-1': .* \(t.csv, line 5\)"):
        read_trace(path)


def test_read_json_forms() -> None:
    jobs = [{"id": "b", "arrival": 10, "model": "A3C", "scale": 1, "iterations": 5},
            {"id": 7, "arrival": 0.5, "model": "CycleGAN", "scale": 2.0, "iterations": 9.5, "weight": 5,
             "tenant": "t1"}]
    a = read_trace(io.StringIO(json.dumps({"jobs": jobs, "meta": {"seed": 1}})))
    b = read_trace(io.StringIO(json.dumps(jobs)))
    assert a == b and a.id == ("7", "b") and a.scale.tolist() == [2, 1] and a.weight.tolist() == [5.0, 1.0]


@pytest.mark.parametrize(("doc", "match"), [
    ('{"jobs": [', r"`document` = '<stream>': not valid JSON"),
    ('{"job": []}', r"`job` = '...': unknown top-level key"),
    ('{"meta": {}}', r"`jobs` = None: missing"),
    ('{"jobs": 3}', r"`jobs` = 'int': must be a list"),
    ('[1]', r"`row 1` = 1: must be a job object"),
    ('[{"id": "a", "arrival": 0, "model": "A3C", "scale": 1}]', r"`row 1.iterations` = None: missing value"),
    ('[{"id": "a", "arrival": "0", "model": "A3C", "scale": 1, "iterations": 1}]',
     r"`row 1.arrival` = '0': not a number \(<stream>, jobs\[0\]\)"),
    ('[{"id": "a", "arrival": 0, "model": "A3C", "scale": true, "iterations": 1}]', r"`row 1.scale` = True"),
    ('[{"id": "a", "arrival": 0, "model": "A3C", "scale": 1, "iterations": 1, "colour": 2}]',
     r"`row 1.colour` = 2: unknown column"),
    ('[{"id": "a", "arrival": 0, "model": 5, "scale": 1, "iterations": 1}]', r"`row 1.model` = 5: must be a non-empty"),
    ('[{"id": null, "arrival": 0, "model": "A3C", "scale": 1, "iterations": 1}]', r"`row 1.id` = None: missing"),
    ('[{"id": [1], "arrival": 0, "model": "A3C", "scale": 1, "iterations": 1}]', r"`row 1.id` = \[1\]"),
    ('[{"id": "a", "arrival": 0, "model": "A3C", "scale": 1, "iterations": 1, "tenant": 3}]',
     r"`row 1.tenant` = 3: must be a string"),
    (f"[{JOB_A}, {JOB_A}]", r"`row 2.id` = 'a': duplicate id"),
])
def test_json_reader_errors(doc: str, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        read_trace(io.StringIO(doc))


def test_format_by_suffix_or_content(tmp_path: Path) -> None:
    t = generate_trace(6, jobs_per_hour=30, seed=4, weighted_fraction=0.5, tenants=2)
    for name in ("t.csv", "t.json", "T.JSON"):
        write_trace(t, tmp_path / name)
        assert read_trace(tmp_path / name) == t
    (tmp_path / "t.txt").write_text((tmp_path / "t.json").read_text())
    assert read_trace(tmp_path / "t.txt") == t
    (tmp_path / "t.dat").write_bytes((tmp_path / "t.csv").read_bytes())
    assert read_trace(tmp_path / "t.dat") == t
    assert read_trace(io.BytesIO((tmp_path / "t.csv").read_bytes())) == t
    with pytest.raises(InvalidInputError, match=r"`format` = 'txt': must be 'csv' or 'json'"):
        write_trace(t, tmp_path / "t.txt")
    with pytest.raises(InvalidInputError, match=r"`format` = None: required"):
        write_trace(t, io.StringIO())
    with pytest.raises(InvalidInputError, match=r"`path` = .*nope.csv'?: no such file"):
        read_trace(tmp_path / "nope.csv")


def test_csv_omits_default_columns() -> None:
    t = generate_trace(3, jobs_per_hour=10, seed=0)
    buf = io.StringIO()
    write_trace(t, buf, format="csv")
    assert buf.getvalue().splitlines()[0] == "id,arrival,model,scale,iterations"
    buf = io.StringIO()
    write_trace(Trace(id=[], arrival=[], model=[], scale=[], iterations=[]), buf, format="json")
    assert read_trace(io.StringIO(buf.getvalue())).num_jobs == 0


_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc", "Zs", "Zl", "Zp"]),
                min_size=1, max_size=12)


@st.composite
def traces(draw: st.DrawFn) -> Trace:
    n = draw(st.integers(0, 8))
    ids = draw(st.lists(_text, min_size=n, max_size=n, unique=True))
    pos = st.floats(min_value=0, max_value=1e12, exclude_min=True, allow_nan=False, allow_infinity=False)
    return Trace(id=ids,
                 arrival=draw(st.lists(st.floats(0, 1e9, allow_nan=False), min_size=n, max_size=n)),
                 model=draw(st.lists(st.sampled_from(CAT.models) | _text, min_size=n, max_size=n)),
                 scale=draw(st.lists(st.integers(1, 64), min_size=n, max_size=n)),
                 iterations=draw(st.lists(pos | st.integers(1, 10**15).map(float), min_size=n, max_size=n)),
                 weight=draw(st.lists(st.just(1.0) | pos, min_size=n, max_size=n)),
                 tenant=draw(st.lists(st.just("") | _text, min_size=n, max_size=n)))


@settings(max_examples=40, deadline=None)
@given(traces(), st.sampled_from(["csv", "json"]))
def test_write_read_round_trip(trace: Trace, fmt: str) -> None:
    buf = io.StringIO()
    write_trace(trace, buf, format=fmt)
    assert read_trace(io.StringIO(buf.getvalue())) == trace


# ---------------------------------------------------------------------- generating
def test_generator_is_deterministic_and_seeded() -> None:
    kw = {"jobs_per_hour": 8, "weighted_fraction": 0.2, "tenants": 3}
    a, b = generate_trace(200, seed=11, **kw), generate_trace(200, seed=11, **kw)
    assert a == b and a.id == tuple(str(i) for i in range(200))
    assert generate_trace(200, seed=12, **kw) != a
    assert generate_trace(50, seed=11, **kw) == a.take(range(50))      # a prefix does not depend on N
    d = generate_trace(seed=11, duration=3600 * 5.0, **kw)
    assert d == a.take(range(len(d))) and d.arrival.max() < 3600 * 5 <= a.arrival[len(d)]
    assert generate_trace(1000, seed=11, duration=3600 * 5.0, **kw) == d
    assert a.arrival[0] == 0 and (np.diff(a.arrival) >= 0).all()
    c = generate_trace(200, seed=11, jobs_per_hour=8, weighted_fraction=0.2)      # one option changed
    assert c.tenant == ("",) * 200 and c.model == a.model and np.array_equal(c.iterations, a.iterations)
    assert np.array_equal(c.arrival, a.arrival) and np.array_equal(c.weight, a.weight)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32), st.integers(0, 30), st.booleans())
def test_generator_determinism_property(seed: int, n: int, multi: bool) -> None:
    a = generate_trace(n, jobs_per_hour=5, seed=seed, multi_gpu=multi, durations="philly")
    assert a == generate_trace(n, jobs_per_hour=5, seed=seed, multi_gpu=multi, durations="philly")
    assert len(a) == n and (a.scale == 1).all() or multi


def _durations(t: Trace, gpus=GAVEL) -> np.ndarray:
    return t.iterations / CAT.throughput_matrix(t.model, t.scale, gpus).max(axis=1)


def test_generator_distribution_sanity() -> None:
    """Tolerances are >= 5 standard errors at n = 20,000, and the seed is fixed: this cannot flake."""
    n = 20_000
    t = generate_trace(n, jobs_per_hour=12, seed=2024, weighted_fraction=0.2, heavy_weight=5, tenants=4)
    for s, p in SCALE_PROBABILITIES.items():
        assert abs(np.mean(t.scale == s) - p) < 0.02
    gaps = np.diff(t.arrival)
    assert abs(gaps.mean() / 300.0 - 1) < 0.04 and abs(gaps.std() / gaps.mean() - 1) < 0.05   # exponential
    assert abs(np.mean(t.weight == 5.0) - 0.2) < 0.02 and set(np.unique(t.weight)) == {1.0, 5.0}
    assert {x: t.tenant.count(x) for x in sorted(set(t.tenant))}.keys() == {"t0", "t1", "t2", "t3"}
    assert all(abs(t.tenant.count(f"t{k}") / n - 0.25) < 0.02 for k in range(4))
    dur = _durations(t)
    long = dur >= 60 * 10**3
    assert abs(long.mean() - 0.2) < 0.02                                 # 60*10^U(3,4) with probability 0.2
    assert dur.min() >= 60 * 10**1.5 - 1 and dur.max() <= 60 * 10**4 + 1
    short = np.log10(dur[~long] / 60)
    assert abs(short.mean() - 2.25) < 0.02                               # U(1.5, 3) in log10 space
    single = [m for m, s in zip(t.model, t.scale) if s == 1]
    counts = np.array([single.count(m) for m in CAT.runnable_models(1, GAVEL)])
    assert len(counts) == 26 and abs(counts / counts.mean() - 1).max() < 0.25  # uniform over 26 models
    assert set(t.model) <= set(CAT.runnable_models(1, GAVEL))            # Gavel's workloads by default


def test_generator_philly_durations() -> None:
    t = generate_trace(3000, jobs_per_hour=20, seed=5, durations="philly", multi_gpu=False)
    dur = _durations(t)
    assert (t.scale == 1).all()
    assert dur.min() > 3600 - 1 and dur.max() < 5196150 + 1               # Philly range
    assert abs(np.median(dur) / 14398 - 1) < 0.15                        # Philly median duration


def test_generator_options() -> None:
    a3c = generate_trace(50, jobs_per_hour=5, seed=1, models=["A3C"])
    assert set(a3c.model) == {"A3C"} and (a3c.scale == 1).all()         # no multi-GPU A3C: scale renormalised
    h = generate_trace(200, jobs_per_hour=5, seed=1, gpu_types=["H200"])
    assert set(h.model) <= set(CAT.runnable_models(1, ["H200"])) and (h.scale == 1).all()
    assert len(set(h.model)) == 6
    r50 = "ResNet-50 (batch size 64)"
    t = generate_trace(40, jobs_per_hour=5, seed=3, models=[r50], gpu_types=["K80", "V100"])
    dur = t.iterations / CAT.throughput_matrix(t.model, t.scale, ["V100"])[:, 0]
    assert (dur >= 60 * 10**1.5 - 1).all() and (dur <= 60 * 10**4 + 1).all()   # work on the fastest: V100
    assert generate_trace(0, jobs_per_hour=5, seed=1).num_jobs == 0


@pytest.mark.parametrize(("kwargs", "match"), [
    ({}, r"`num_jobs` = None: give num_jobs, duration or both"),
    ({"num_jobs": -1}, r"`num_jobs` = -1"),
    ({"num_jobs": 5, "jobs_per_hour": 0}, r"`jobs_per_hour` = 0"),
    ({"num_jobs": 5, "seed": -3}, r"`seed` = -3"),
    ({"duration": -10.0}, r"`duration` = -10.0"),
    ({"num_jobs": 5, "durations": "weibull"}, r"`durations` = 'weibull': must be 'gavel' or 'philly'"),
    ({"num_jobs": 5, "weighted_fraction": 1.5}, r"`weighted_fraction` = 1.5"),
    ({"num_jobs": 5, "heavy_weight": 0}, r"`heavy_weight` = 0"),
    ({"num_jobs": 5, "tenants": -1}, r"`tenants` = -1"),
    ({"num_jobs": 5, "models": ["GPT-7"]}, r"`models\[0\]` = 'GPT-7': unknown model"),
    ({"num_jobs": 5, "models": []}, r"`models` = \[\]: must not be empty"),
    ({"num_jobs": 5, "gpu_types": ["A100"]}, r"`gpu_type` = 'A100': unknown GPU type"),
    ({"num_jobs": 5, "gpu_types": "V100"}, r"`gpu_types` = 'V100'"),
    ({"num_jobs": 5, "models": ["cyclegan"]}, r"`models` = \['cyclegan'\]: none can run on"),
])
def test_generator_errors(kwargs: dict, match: str) -> None:
    kw = {"jobs_per_hour": 5, "seed": 0, **kwargs}
    with pytest.raises(InvalidInputError, match=match):
        generate_trace(**kw)


def test_default_trace_is_reproducible() -> None:
    shipped = read_trace(DEFAULT_TRACE, catalog=CAT)
    # the call documented in docs/traces.md
    assert shipped == generate_trace(80, jobs_per_hour=6, seed=0, weighted_fraction=0.2, heavy_weight=5.0,
                                     tenants=2)
    assert 60 <= len(shipped) <= 100
