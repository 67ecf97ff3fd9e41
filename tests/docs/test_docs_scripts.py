"""Every script the docs tell a reader to run exists where they say: ``examples/`` and ``benchmarks/`` paths."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "benchmarks" / "README.md",
         *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "results").rglob("*.md"))]
SCRIPT = re.compile(r"(?<![\w/.])(examples|benchmarks)([/.])([a-z_0-9]+)(?:\.py)?\b")


def _named() -> list[tuple[str, str]]:
    """(page, script path) for every ``examples/x.py``, ``benchmarks/x.py`` or ``-m examples.x`` a page names."""
    out = set()
    for page in PAGES:
        for m in SCRIPT.finditer(page.read_text(encoding="utf-8")):
            if m.group(2) == "." and not m.group(0).startswith(("examples.", "benchmarks.")):
                continue
            out.add((str(page.relative_to(ROOT)), f"{m.group(1)}/{m.group(3)}.py"))
    return sorted(out)


def test_the_pages_name_scripts() -> None:
    scripts = {s for _, s in _named()}
    assert "benchmarks/bench_round.py" in scripts and "examples/main_comparison.py" in scripts


@pytest.mark.parametrize(("page", "script"), _named())
def test_every_named_script_exists(page: str, script: str) -> None:
    assert (ROOT / script).is_file(), f"{page} names {script}, which does not exist"
