"""The examples of re-planning at events in the docs run as written and give what the pages show.

docs/scheduler-integration.md "Planning at events" (the Engine at events) and docs/json-formats.md (a round with
a running pair).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from fairshare import allocate

DOC = Path(__file__).resolve().parents[2] / "docs" / "scheduler-integration.md"
FORMATS = Path(__file__).resolve().parents[2] / "docs" / "json-formats.md"


def _section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## Planning at events")
    return text[start:text.index("\n## ", start + 1)]


def _run(code: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/scheduler-integration.md", "exec"), {})  # noqa: S102
    return out.getvalue()


def test_the_example_prints_the_output_shown():
    blocks = re.findall(r"```(\w*)\n(.*?)```", _section(), re.S)
    code = next(body for lang, body in blocks if lang == "python")
    shown = next(body for lang, body in blocks if lang == "")
    assert _run(code) == shown


def test_without_a_restart_cost_the_preempted_job_is_moved_instead():
    # the page says: with RESTART = 0 the plan at 120 s moves train-b to the K80 instead of preempting it
    code = re.search(r"```python\n(.*?)```", _section(), re.S).group(1)  # type: ignore[union-attr]
    assert "RESTART = 30.0" in code
    lines = _run(code.replace("RESTART = 30.0", "RESTART = 0.0")).splitlines()
    assert lines[1] == "t=120 [('short-c', 'V100'), ('train-b', 'K80')] moved: ['train-b']"


def _running_pair_example() -> tuple[dict, dict]:
    text = FORMATS.read_text(encoding="utf-8")
    start = text.index("For example, a round planned 120 s into a 360 s round")
    doc, shown = re.findall(r"```json\n(.*?)```", text[start:], re.S)[:2]
    return json.loads(doc), json.loads(shown)


def test_the_running_pair_round_gives_the_output_shown():
    doc, shown = _running_pair_example()
    out = allocate(doc, mode="exact").to_dict()
    for key, value in shown.items():
        assert out[key] == (pytest.approx(value, abs=5e-3) if isinstance(value, float) else value), key
    assert out["jobs"]["a"]["throughput"] == pytest.approx(1.2 * (1 - 120 / 240))


@pytest.mark.parametrize(("price", "restart", "moved"), [(1.0, 120, []), (1.0, 30, ["a", "b"]), (4.0, 30, ["a", "b"])])
def test_the_running_pair_round_as_the_page_says_with_other_prices_and_restarts(price, restart, moved):
    doc, _ = _running_pair_example()
    doc["jobs"][2]["shortfall_price"] = price
    for job in doc["jobs"][:2]:
        job["restart_seconds"] = restart
    assert allocate(doc, mode="exact").to_dict()["moved"] == moved


def test_the_one_call_form_places_and_charges_as_the_three_steps():
    # the page says engine.event(...) places and charges exactly as commit + current + plan did
    blocks = [body for lang, body in re.findall(r"```(\w*)\n(.*?)```", _section(), re.S) if lang == "python"]
    assert len(blocks) >= 2
    first, one_call = blocks[0], blocks[1]
    assert "engine.event(" in one_call
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(first, "docs/scheduler-integration.md", "exec"), namespace)  # noqa: S102
        steps = dict(namespace["engine"].deficits)
        exec(compile(one_call, "docs/scheduler-integration.md", "exec"), namespace)  # noqa: S102
    engine = namespace["engine"]
    assert engine.incremental and engine.round_index == 3
    assert engine.deficits == pytest.approx(steps)
    assert round(engine.deficits["train-a"], 3) == 0.278
