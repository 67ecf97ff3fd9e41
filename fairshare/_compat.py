"""Aliases that keep the import paths of fairshare 0.1 working for one release (see CHANGELOG.md)."""

from __future__ import annotations

import importlib
import sys
import warnings

__all__ = ["alias_module"]

REMOVED_IN = "0.3"


def alias_module(old: str, new: str) -> None:
    """Make module ``old`` an alias of module ``new`` (same object), with a :class:`DeprecationWarning`.

    Called at the top of a shim module left at an old path; every name of ``new``, public or not, is then
    reachable through ``old``, and ``old is new`` holds for the module objects.
    """
    warnings.warn(f"{old} moved to {new}; the old path will be removed in fairshare {REMOVED_IN}",
                  DeprecationWarning, stacklevel=3)
    sys.modules[old] = importlib.import_module(new)
