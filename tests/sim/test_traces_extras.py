"""Trace files with the fields of real traces: gpus (fractions), censored, metadata; old files unchanged."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairshare.errors import InvalidInputError
from fairshare.sim.traces import DEFAULT_TRACE, Trace, format_trace, read_trace, write_trace

OLD_CSV = "id,arrival,model,scale,iterations\na,0,A3C,1,10\nb,5,A3C,2,20\n"


def test_old_traces_read_and_write_as_before(tmp_path: Path) -> None:
    t = read_trace(io.StringIO(OLD_CSV))
    assert t.gpus.tolist() == [1.0, 2.0] and not t.censored.any() and t.metadata == ({}, {})
    assert not t.has_extras
    assert format_trace(t, "csv") == OLD_CSV
    assert '"gpus"' not in format_trace(t, "json") and '"meta"' not in format_trace(t, "json")
    built_in = read_trace(DEFAULT_TRACE)
    assert format_trace(built_in, "csv") == DEFAULT_TRACE.read_text()


def test_extra_fields_in_csv_and_json() -> None:
    text = ("id,arrival,model,scale,iterations,gpus,censored,meta.qos,meta.queue\n"
            "a,0,A3C,1,10,0.5,false,LS,q1\n"
            "b,5,A3C,2,20,,true,BE,\n")
    t = read_trace(io.StringIO(text))
    assert t.gpus.tolist() == [0.5, 2.0] and t.censored.tolist() == [False, True]
    assert t.metadata == ({"qos": "LS", "queue": "q1"}, {"qos": "BE"})
    assert read_trace(io.StringIO(format_trace(t, "csv"))) == t
    doc = json.loads(format_trace(t, "json", meta={"imported": {"format": "x"}}))
    assert doc["meta"] == {"imported": {"format": "x"}}
    assert doc["jobs"][0]["gpus"] == 0.5 and doc["jobs"][1]["censored"] is True
    assert doc["jobs"][1]["meta"] == {"qos": "BE"}
    assert read_trace(io.StringIO(json.dumps(doc))) == t


@pytest.mark.parametrize("text, match", [
    ("id,arrival,model,scale,iterations,qos\na,0,A3C,1,10,LS\n",
     r"`header` = 'qos': unknown column .*name a column meta.qos to keep it as metadata"),
    ("id,arrival,model,scale,iterations,censored\na,0,A3C,1,10,maybe\n", r"`row 1.censored` = 'maybe'"),
    ("id,arrival,model,scale,iterations,gpus\na,0,A3C,1,10,-1\n", r"`row 1.gpus` = '-1': must be a finite number > 0"),
    ("id,arrival,model,scale,iterations,gpus\na,0,A3C,1,10,1e400\n", r"`row 1.gpus` = '1e400'"),
    ('[{"id": "a", "arrival": 0, "model": "A3C", "scale": 1, "iterations": 1, "meta": {"q": 3}}]',
     r"`row 1.meta` = \{'q': 3\}: must be an object of strings"),
    ('[{"id": "a", "arrival": 0, "model": "A3C", "scale": 1, "iterations": 1, "censored": "yes"}]',
     r"`row 1.censored` = 'yes': must be true or false"),
    ("id,arrival,model,scale,iterations\na,0,A3C,1e300,10\n", r"`row 1.scale` = '1e300': must be a positive integer"),
    ("id,arrival,model,scale,iterations\na,1e300,A3C,1,10\n", r"`row 1.arrival` = '1e300'.*at most 1e\+12 s"),
    ("id,arrival,model,scale,iterations\na,0,A3C,1,1e300\n", r"`row 1.iterations` = '1e300'.*at most 1e\+18"),
])
def test_bad_extra_fields_are_named(text: str, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        read_trace(io.StringIO(text))


def test_binary_and_folder_files_are_refused(tmp_path: Path) -> None:
    b = tmp_path / "t.csv"
    b.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(InvalidInputError, match="not a UTF-8 text file"):
        read_trace(b)
    z = tmp_path / "z.csv"
    z.write_bytes(b"id,arrival\x00")
    with pytest.raises(InvalidInputError, match="NUL"):
        read_trace(z)
    with pytest.raises(InvalidInputError, match="is a folder"):
        read_trace(tmp_path)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InvalidInputError, match=r"`document` = 'deep.json': not valid JSON"):
        read_trace(deep)


def test_trace_validates_the_new_columns() -> None:
    kw = dict(id=["a"], arrival=[0.0], model=["A3C"], scale=[1], iterations=[1.0])
    with pytest.raises(InvalidInputError, match=r"`jobs\[0\].gpus` = 0.0"):
        Trace(**kw, gpus=[0.0])
    with pytest.raises(InvalidInputError, match="`censored`"):
        Trace(**kw, censored=[1])
    with pytest.raises(InvalidInputError, match=r"`jobs\[0\].metadata`"):
        Trace(**kw, metadata=[{"": "x"}])
    t = Trace(**kw, metadata=[{"a": ""}])
    assert t.metadata == ({},)                                            # an empty value is no value


names = st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=6)
values = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=8).map(str.strip)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1e6), st.sampled_from([1, 2, 4]), st.floats(0.01, 64),
                          st.booleans(), st.dictionaries(names, values, max_size=3)), min_size=1, max_size=12))
def test_round_trip_with_extras(rows: list) -> None:
    n = len(rows)
    t = Trace(id=[f"j{i}" for i in range(n)], arrival=[r[0] for r in rows], model=["A3C"] * n,
              scale=[r[1] for r in rows], iterations=[10.0] * n, gpus=[r[2] for r in rows],
              censored=np.array([r[3] for r in rows]), metadata=[r[4] for r in rows])
    for fmt in ("csv", "json"):
        buf = io.StringIO()
        write_trace(t, buf, format=fmt)
        assert read_trace(io.StringIO(buf.getvalue())) == t, fmt
    assert t.take(list(range(n))) == t
