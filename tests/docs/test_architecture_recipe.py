"""The recipe "a new policy: one file and a registry line" of docs/architecture.md works as written."""

from __future__ import annotations

import re
import types
from pathlib import Path

import fairshare.policies.base as base
from fairshare.formulation import build_model
from fairshare.policies import RoundState, get_policy, policy_names
from fairshare.testing.random_rounds import random_round
from fairshare.validators import allocation_violations

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def _recipe_source() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("### A new policy"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


def test_the_documented_policy_registers_and_places_feasibly(monkeypatch):
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))  # leave the real registry as it was
    module = types.ModuleType("biggest_first_recipe")
    exec(compile(_recipe_source(), "docs/architecture.md", "exec"), module.__dict__)  # noqa: S102
    assert "biggest-first" in policy_names()
    policy = get_policy("biggest-first")
    for seed in range(3):
        problem = random_round(40, seed=seed)
        alloc = policy.allocate(RoundState.first_round(build_model(problem)))
        assert alloc.report.policy == "biggest-first"
        assert allocation_violations(problem, alloc) == []
        assert alloc.jobs.placed.any()


def test_the_recipe_is_one_file_of_plain_code():
    src = _recipe_source()
    assert "@register(\"biggest-first\")" in src and "def place(self, state: RoundState) -> Placed:" in src
