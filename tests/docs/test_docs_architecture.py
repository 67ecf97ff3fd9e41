"""Every path and module that docs/architecture.md names exists: a newcomer who follows it lands on a file."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
TEXT = DOC.read_text(encoding="utf-8")

#: Files the recipes tell a reader to create: they must not exist (else the recipe is stale).
TO_CREATE = {"fairshare/policies/biggest_first.py"}

PATH = re.compile(r"(?<![\w./<>-])((?:[\w-]+/)*[\w.-]+\.(?:py|md))(?![\w/])")
FOLDER = re.compile(r"`((?:[\w.-]+/)+)`|(?<![\w./])((?:fairshare|examples|benchmarks|tests|docs|models)(?:/[\w.-]+)*/)")
MODULE = re.compile(r"(?<![\w./])(fairshare(?:\.(?!py\b|md\b)\w+)+)")
PACKAGES = [ROOT, ROOT / "fairshare", *sorted(p.parent for p in (ROOT / "fairshare").rglob("__init__.py"))]


def _exists(path: str) -> bool:
    """A path from the root or from ``fairshare/``; a bare file name in one of the package's folders."""
    if (ROOT / path).exists() or (ROOT / "fairshare" / path).exists():
        return True
    return "/" not in path.rstrip("/") and any((base / path).exists() for base in PACKAGES)


def _paths() -> list[str]:
    found = {m.group(1) for m in PATH.finditer(TEXT)}
    found |= {m.group(1) or m.group(2) for m in FOLDER.finditer(TEXT)}
    return sorted(found - TO_CREATE)


def test_the_page_names_paths() -> None:
    paths = _paths()
    assert len(paths) >= 40  # the pattern still finds what the page names
    assert "fairshare/sim/simulator.py" in paths and "fairshare/sim/importers/" in paths


@pytest.mark.parametrize("path", _paths())
def test_every_named_path_exists(path: str) -> None:
    assert _exists(path), f"docs/architecture.md names {path}, which does not exist"


def test_the_recipe_files_do_not_exist_yet() -> None:
    for path in TO_CREATE:
        assert path in TEXT and not (ROOT / path).exists()


@pytest.mark.parametrize("name", sorted({m.group(1) for m in MODULE.finditer(TEXT)}))
def test_every_named_module_or_attribute_exists(name: str) -> None:
    parts = name.split(".")
    for k in range(len(parts), 0, -1):  # the longest importable prefix, then attributes
        try:
            obj: object = importlib.import_module(".".join(parts[:k]))
        except ModuleNotFoundError:
            continue
        for attr in parts[k:]:
            assert hasattr(obj, attr), f"docs/architecture.md names {name}: {attr} not found"
            obj = getattr(obj, attr)
        return
    pytest.fail(f"docs/architecture.md names {name}, which does not import")
