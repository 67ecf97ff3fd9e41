"""pytest configuration shared by the test suite and the doctests of the library (``--doctest-modules``).

Modules left at old import paths for one release (see CHANGELOG.md) are aliases of their new modules and
are not collected twice; ``fairshare/__main__.py`` runs the CLI on import.
"""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent

collect_ignore = ["fairshare/__main__.py"] + [
    str(p.relative_to(_HERE)) for p in sorted((_HERE / "fairshare").rglob("*.py"))
    if "alias_module(__name__" in p.read_text(encoding="utf-8")
]
