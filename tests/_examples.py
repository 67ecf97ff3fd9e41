"""Helpers of the example smoke tests: load a script of ``examples/`` as a module, read its CSV outputs."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PNG = b"\x89PNG\r\n\x1a\n"


def _package() -> ModuleType:
    """The ``examples`` package, imported from its directory (whatever ``sys.path`` holds)."""
    if "examples" not in sys.modules:
        spec = importlib.util.spec_from_file_location("examples", EXAMPLES / "__init__.py",
                                                      submodule_search_locations=[str(EXAMPLES)])
        assert spec is not None and spec.loader is not None
        pkg = importlib.util.module_from_spec(spec)
        sys.modules["examples"] = pkg
        spec.loader.exec_module(pkg)
    return sys.modules["examples"]


def load_example(name: str) -> ModuleType:
    """``examples/<name>.py`` as a fresh module ``examples.<name>``, as ``python -m examples.<name>`` runs it.

    It is registered in ``sys.modules`` (for pickling), and its shared helpers come from
    ``examples._common`` through the package.
    """
    _package()
    spec = importlib.util.spec_from_file_location(f"examples.{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def read_csv(path: Path) -> list[dict[str, str]]:
    """Rows of a CSV file with a header, as dicts of strings."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def table_rows(md: str, first_header: str) -> list[list[str]]:
    """Data rows (cells stripped) of the first Markdown table whose header starts with ``| first_header |``."""
    lines = md.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"| {first_header} |"))
    rows = []
    for ln in lines[start + 2:]:
        if not ln.startswith("|"):
            break
        rows.append([c.strip() for c in ln.strip("|").split("|")])
    return rows
