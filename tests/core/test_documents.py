"""Tests of fairshare.documents: the JSON reader's limits, and round documents <-> RoundProblem."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairshare import allocate, documents
from fairshare.cli import example_round_text
from fairshare.documents import (
    MAX_JSON_BYTES,
    MAX_JSON_DEPTH,
    read_json,
    reject_unknown_keys,
    round_problem_from_dict,
    round_problem_from_json,
    round_problem_to_dict,
)
from fairshare.errors import InvalidInputError
from fairshare.problem import RoundProblem
from fairshare.testing.strategies import round_documents

ROUND_TEXT = example_round_text()


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# ---------------------------------------------------------------- text: encoding and size
def test_reads_str_and_utf8_bytes_alike():
    text = '{"id": "caf\u00e9", "n": [1, 2.5, true, null]}'
    assert read_json(text) == read_json(text.encode("utf-8")) == {"id": "caf\u00e9", "n": [1, 2.5, True, None]}


def test_a_utf8_byte_order_mark_is_skipped():
    assert read_json(b"\xef\xbb\xbf" + b'{"a": 1}') == {"a": 1}
    assert read_json("\ufeff" + '{"a": 1}') == {"a": 1}


@pytest.mark.parametrize("data", [
    pytest.param('{"a": 1}'.encode("utf-16"), id="utf-16-bom"),
    pytest.param('{"a": 1}'.encode("utf-16-le"), id="utf-16-le"),
    pytest.param('{"a": 1}'.encode("utf-32"), id="utf-32"),
    pytest.param('{"a": "\u00e9"}'.encode("latin-1"), id="latin-1"),
    pytest.param(bytes(range(256)), id="binary"),
    pytest.param(b'{"a": "\xff"}', id="invalid-byte"),
])
def test_bytes_that_are_not_utf8_are_invalid_input(data):
    with pytest.raises(InvalidInputError, match=r"^`trace` = .*: not UTF-8 text"):
        read_json(data, what="trace")


def test_only_text_is_read():
    with pytest.raises(InvalidInputError, match=r"`document` = 'dict': must be JSON text \(str or bytes\)"):
        read_json({"a": 1})  # type: ignore[arg-type]


def test_size_limit_is_64_mib():
    assert MAX_JSON_BYTES == 64 * 2**20
    with pytest.raises(InvalidInputError, match=r"`state` = '67108865 bytes': larger than the limit of 67108864"):
        read_json(b" " * (MAX_JSON_BYTES + 1), what="state")


def test_size_limit_applies_to_str(monkeypatch):
    monkeypatch.setattr(documents, "MAX_JSON_BYTES", 10)
    assert read_json("[1, 2, 3]") == [1, 2, 3]
    with pytest.raises(InvalidInputError, match=r"`document` = '11 characters': larger than the limit of 10"):
        read_json("[1, 2, 3]  ")


# ---------------------------------------------------------------- nesting
def test_nesting_up_to_the_limit_is_read():
    doc = read_json(nested(MAX_JSON_DEPTH))
    for _ in range(MAX_JSON_DEPTH - 1):
        doc = doc[0]
    assert doc == []


@pytest.mark.parametrize("text", [
    pytest.param(nested(MAX_JSON_DEPTH + 1), id="one-too-deep"),
    pytest.param(nested(100_000), id="deeper-than-the-recursion-limit"),
    pytest.param("[" * 100_000, id="unclosed"),
    pytest.param('{"a": ' * 70 + "1" + "}" * 70, id="objects"),
    pytest.param('["\\\\", ' + nested(MAX_JSON_DEPTH) + "]", id="after-an-escaped-backslash"),
])
def test_deep_nesting_is_invalid_input_not_recursion_error(text):
    with pytest.raises(InvalidInputError, match=rf"^`document` = .*: nested deeper than {MAX_JSON_DEPTH} levels"):
        read_json(text)


def test_brackets_inside_strings_do_not_count():
    deep_string = "[" * 1000 + "{" * 1000
    assert read_json(json.dumps([deep_string, {"k": deep_string}])) == [deep_string, {"k": deep_string}]
    quoted = '["\\"' + "[" * 1000 + '", [1]]'  # an escaped quote does not end the string
    assert read_json(quoted) == ['"' + "[" * 1000, [1]]


# ---------------------------------------------------------------- numbers
@pytest.mark.parametrize(("text", "match"), [
    ('{"jobs": [{"weight": 1e400}]}', r"^`jobs\[0\]\.weight` = '1e400': number out of float64 range$"),
    ('{"a": {"b": [1, -1e400]}}', r"^`a\.b\[1\]` = '-1e400': number out of float64 range$"),
    ('{"a": ' + "9" * 400 + "}", r"^`a` = '9{40}\.\.\. \(400 characters\)': integer out of float64 range$"),
    ('{"a": -' + "2" + "0" * 308 + "}", r"^`a` = '-20{38}\.\.\. \(310 characters\)': integer out of float64"),
    ('{"a": ' + "7" * 5000 + "}", r"^`a` = '7{40}\.\.\. \(5000 characters\)': integer out of float64"),
    ('[1, {"w": NaN}]', r"^`document\[1\]\.w` = 'NaN': NaN and Infinity are not JSON numbers$"),
    ('{"x": Infinity}', r"^`x` = 'Infinity': NaN and Infinity"),
    ('{"x": -Infinity}', r"^`x` = '-Infinity': NaN and Infinity"),
    ("NaN", r"^`document` = 'NaN': NaN and Infinity"),
])
def test_numbers_beyond_float64_are_invalid_input_naming_the_field(text, match):
    with pytest.raises(InvalidInputError, match=match):
        read_json(text)


def test_large_numbers_within_float64_are_read_exactly():
    big = 10**308  # 309 digits, still a finite float
    assert read_json(f"[{big}, -{big}, 1.5e308, 1e-400]") == [big, -big, 1.5e308, 0.0]


def test_allow_nan_reads_the_literals_as_floats():
    x = read_json('[NaN, Infinity, -Infinity]', allow_nan=True)
    assert math.isnan(x[0]) and x[1:] == [math.inf, -math.inf]


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(), lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=20))
def test_reads_what_json_dumps_writes(value):
    assert read_json(json.dumps(value)) == value
    assert read_json(json.dumps(value).encode()) == value


# ---------------------------------------------------------------- keys and syntax
def test_duplicate_keys_are_invalid_input():
    with pytest.raises(InvalidInputError, match=r"`a` = 2: duplicate key in a JSON object"):
        read_json('{"a": 1, "a": 2}')


def test_invalid_json_names_the_document():
    with pytest.raises(InvalidInputError, match=r"^`state` = '\{\"a\": ': not valid JSON \(Expecting value"):
        read_json('{"a": ', what="state")


def test_reject_unknown_keys_names_the_first():
    reject_unknown_keys({"id": "a", "scale": 1}, documents.JOB_KEYS, "jobs[0].")
    with pytest.raises(InvalidInputError,
                       match=r"`jobs\[0\]\.prio` = 3: unknown key \(allowed: current, deficit, id, "):
        reject_unknown_keys({"id": "a", "prio": 3, "x": 1}, documents.JOB_KEYS, "jobs[0].")


# ---------------------------------------------------------------- round documents
def test_round_document_from_bytes_equals_from_text():
    p, q = round_problem_from_json(ROUND_TEXT), round_problem_from_json(ROUND_TEXT.encode("utf-8"))
    assert round_problem_to_dict(p) == round_problem_to_dict(q) == round_problem_to_dict(
        RoundProblem.from_json(b"\xef\xbb\xbf" + ROUND_TEXT.encode()))


@pytest.mark.parametrize("data", [ROUND_TEXT.encode("utf-16"), ROUND_TEXT.encode("utf-16-le")])
def test_round_problem_and_allocate_refuse_utf16(data):
    with pytest.raises(InvalidInputError, match=r"`document` = .*: not UTF-8 text"):
        RoundProblem.from_json(data)
    with pytest.raises(InvalidInputError, match=r"`document` = .*: not UTF-8 text"):
        allocate(data, mode="fast")


def test_allocate_reads_bytes_through_the_reader():
    deep = ROUND_TEXT.replace('"epsilon"', '"x": ' + nested(100) + ', "epsilon"').encode()
    with pytest.raises(InvalidInputError, match=r"nested deeper than 64 levels"):
        allocate(deep, mode="fast")
    from_bytes, from_text = allocate(ROUND_TEXT.encode("utf-8"), mode="exact"), allocate(ROUND_TEXT, mode="exact")
    assert from_bytes.values.objective == from_text.values.objective and from_bytes.placements == from_text.placements


def test_round_document_numbers_out_of_range_name_the_field():
    doc = json.loads(ROUND_TEXT)
    text = json.dumps(doc).replace('"weight": 1.0', '"weight": 2e400', 1)
    assert text != json.dumps(doc)
    with pytest.raises(InvalidInputError, match=r"^`jobs\[0\]\.weight` = '2e400': number out of float64 range"):
        RoundProblem.from_json(text)
    huge = json.dumps(doc).replace('"V100": 2', '"V100": ' + "9" * 320, 1)
    with pytest.raises(InvalidInputError, match=r"^`gpus\.V100` = '9{40}\.\.\. \(320 characters\)': integer out"):
        RoundProblem.from_json(huge)


def test_round_document_nan_is_rejected_with_the_rule_of_its_field():
    text = ROUND_TEXT.replace('"epsilon": 0.1', '"epsilon": NaN')
    with pytest.raises(InvalidInputError, match=r"^`epsilon` = nan: must be in \[0, 1\)"):
        RoundProblem.from_json(text)


def test_conversion_errors_show_the_value_as_written():
    doc = json.loads(ROUND_TEXT)
    doc["jobs"][1]["weight"] = -3  # an int in the document: shown as -3, not -3.0
    with pytest.raises(InvalidInputError, match=r"^`jobs\[1\]\.weight` = -3: must be finite and > 0$"):
        round_problem_from_dict(doc)


@given(round_documents())
def test_round_document_round_trip(doc):
    p = round_problem_from_dict(doc)
    again = round_problem_to_dict(p)
    assert round_problem_to_dict(round_problem_from_json(json.dumps(again))) == again
    assert again == p.to_dict() and RoundProblem.from_dict(again).to_dict() == again
