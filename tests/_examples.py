"""Helpers of the example and benchmark smoke tests: load a script of ``examples/`` or ``benchmarks/`` as a
module, read its CSV outputs."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
PNG = b"\x89PNG\r\n\x1a\n"


def _package(name: str = "examples", folder: Path = EXAMPLES) -> ModuleType:
    """The package ``name`` (``examples`` or ``benchmarks``), imported from its folder, whatever ``sys.path`` holds."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])
        assert spec is not None and spec.loader is not None
        pkg = importlib.util.module_from_spec(spec)
        sys.modules[name] = pkg
        spec.loader.exec_module(pkg)
    return sys.modules[name]


def _load(package: str, folder: Path, name: str) -> ModuleType:
    _package(package, folder)
    spec = importlib.util.spec_from_file_location(f"{package}.{name}", folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def load_example(name: str) -> ModuleType:
    """``examples/<name>.py`` as a fresh module ``examples.<name>``, as ``python -m examples.<name>`` runs it.

    It is registered in ``sys.modules`` (for pickling), and its shared helpers come from
    ``examples._common`` through the package.
    """
    return _load("examples", EXAMPLES, name)


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a fresh module ``benchmarks.<name>`` (helpers from ``benchmarks._common``)."""
    return _load("benchmarks", BENCHMARKS, name)


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
