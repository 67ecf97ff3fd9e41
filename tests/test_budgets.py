"""Size budgets of the package, as a ratchet: no function more complex than McCabe 15, none with more than 10
parameters, no module over 600 lines. Today's offenders are listed with their current value; an entry may only
go down, and an entry whose offender is gone (or moved) must be removed, so the lists shrink to nothing."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "fairshare"
MAX_COMPLEXITY = 15
MAX_ARGS = 10
MAX_LINES = 600

# (rule, module path, function) -> today's value; C901 is McCabe complexity, PLR0913 the number of parameters.
FUNCTIONS: dict[tuple[str, str, str], int] = {
    ("PLR0913", "fairshare/allocation.py", "Allocation.from_columns"): 11,
    ("C901", "fairshare/cli/importing.py", "_import"): 18,
    ("C901", "fairshare/cli/simulate.py", "_run"): 18,
    ("C901", "fairshare/documents.py", "round_problem_from_dict"): 29,
    ("PLR0913", "fairshare/engine.py", "Engine.__init__"): 12,
    ("C901", "fairshare/kept_jobs.py", "KeptJobs.apply"): 18,
    ("PLR0913", "fairshare/kube/plan.py", "plan_snapshot"): 11,
    ("C901", "fairshare/kube/plan.py", "_decide"): 16,
    ("PLR0913", "fairshare/kube/round.py", "_assemble"): 11,
    ("C901", "fairshare/kube/snapshot.py", "read_snapshot"): 19,
    ("C901", "fairshare/methods/rounding.py", "improve"): 21,
    ("PLR0913", "fairshare/problem.py", "RoundProblem.__init__"): 16,
    ("PLR0913", "fairshare/problem.py", "RoundProblem.from_trusted_arrays"): 15,
    ("C901", "fairshare/sim/catalog/files.py", "_read_file"): 29,
    ("C901", "fairshare/sim/config.py", "SimConfig.__post_init__"): 16,
    ("PLR0913", "fairshare/sim/idle_starts.py", "_start_waiting"): 11,
    ("PLR0913", "fairshare/sim/idle_starts.py", "_start_fitting"): 11,
    ("PLR0913", "fairshare/sim/importers/__init__.py", "import_trace"): 11,
    ("PLR0913", "fairshare/sim/importers/base.py", "_Raw.add"): 12,
    ("C901", "fairshare/sim/importers/pai2020.py", "read"): 19,
    ("C901", "fairshare/sim/importers/philly.py", "read"): 20,
    ("PLR0913", "fairshare/sim/importers/rule.py", "apply_rule"): 12,
    ("C901", "fairshare/sim/simulator.py", "simulate"): 17,
    ("C901", "fairshare/sim/traces.py", "Trace.__post_init__"): 17,
    ("C901", "fairshare/sim/traces.py", "_trace_from_rows"): 20,
    ("PLR0913", "fairshare/sim/traces.py", "generate_trace"): 12,
    ("PLR0913", "fairshare/solvers/highs.py", "solve_highs"): 13,
    ("C901", "fairshare/testing/strategies.py", "round_documents"): 23,
    ("PLR0913", "fairshare/testing/strategies.py", "round_documents"): 13,
    ("C901", "fairshare/validators.py", "allocation_violations"): 17,
}

# module path -> today's line count.
MODULES: dict[str, int] = {
    "fairshare/methods/warm.py": 616,
    "fairshare/sim/metrics.py": 671,
    "fairshare/sim/traces.py": 721,
}


def _function_at(path: Path, row: int) -> str:
    """Qualified name of the function defined at ``row`` of ``path``."""
    found: list[str] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef) and child.lineno == row:
                    found.append(name)
                walk(child, name + ".")

    walk(ast.parse(path.read_text(encoding="utf-8")), "")
    return found[0] if found else f"<line {row}>"


def offenders(folder: Path = PACKAGE, *, isolated: bool = False) -> dict[tuple[str, str, str], int]:
    """Every function of ``folder`` over the complexity or parameter budget, with its value (ruff's count), keyed
    by (rule, path relative to the repository or the file name when ``isolated``, qualified function name)."""
    run = subprocess.run(
        [sys.executable, "-m", "ruff", "check", str(folder), "--no-cache", "--select", "C901,PLR0913",
         "--config", f"lint.mccabe.max-complexity={MAX_COMPLEXITY}", "--config", f"lint.pylint.max-args={MAX_ARGS}",
         "--output-format", "json", "--exit-zero", *(["--isolated"] if isolated else [])],
        capture_output=True, text=True, check=True, cwd=REPO)
    out = {}
    for entry in json.loads(run.stdout):
        path = Path(entry["filename"])
        value = int(re.search(r"\((\d+) >", entry["message"]).group(1))  # type: ignore[union-attr]
        key = path.name if isolated else path.relative_to(REPO).as_posix()
        out[(entry["code"], key, _function_at(path, entry["location"]["row"]))] = value
    return out


def test_no_function_grows_past_its_budget():
    found = offenders()
    new = {k: v for k, v in found.items() if k not in FUNCTIONS}
    assert not new, (f"over the budget (complexity {MAX_COMPLEXITY}, {MAX_ARGS} parameters): {new}; "
                     "split the function")
    grown = {k: (FUNCTIONS[k], v) for k, v in found.items() if k in FUNCTIONS and v > FUNCTIONS[k]}
    assert not grown, f"grew past its listed value (listed, now): {grown}"


def test_the_function_list_only_shrinks():
    found = offenders()
    stale = sorted(k for k in FUNCTIONS if k not in found)
    assert not stale, f"no longer over the budget (or moved): remove from FUNCTIONS in {__file__}: {stale}"
    lower = {k: (FUNCTIONS[k], found[k]) for k in FUNCTIONS if k in found and found[k] < FUNCTIONS[k]}
    assert not lower, f"lower now (listed, now): lower the entries in FUNCTIONS: {lower}"


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: p.relative_to(REPO).as_posix())
def test_module_within_its_line_budget(path: Path):
    key = path.relative_to(REPO).as_posix()
    lines = len(path.read_text(encoding="utf-8").splitlines())
    limit = MODULES.get(key, MAX_LINES)
    assert lines <= limit, f"{key} has {lines} lines, over its budget of {limit}: split it by concern"
    if key in MODULES:
        assert lines > MAX_LINES, f"{key} is within {MAX_LINES} lines now: remove it from MODULES"


def test_the_checker_sees_an_offender(tmp_path: Path):
    branches = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(MAX_COMPLEXITY + 2))
    args = ", ".join(f"a{i}" for i in range(MAX_ARGS + 1))
    (tmp_path / "bad.py").write_text(f"def tangled(x):\n{branches}\n    return -1\n\n\ndef wide({args}):\n    pass\n")
    found = {(code, name): value for (code, _, name), value in offenders(tmp_path, isolated=True).items()}
    assert found == {("C901", "tangled"): MAX_COMPLEXITY + 3, ("PLR0913", "wide"): MAX_ARGS + 1}

