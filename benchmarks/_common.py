"""Shared helpers of the performance tools in ``benchmarks/``: those of ``examples/_common.py``, re-exported.

Progress lines, report files, the long-replay arguments, and the settings of release 0.2 with which the published
reports were made (``--current``: today's defaults). They live once, in ``examples/_common.py``; this module finds
them whether a tool runs as a module (``python -m benchmarks.x``: the repository root is on the path) or as a
script (``python benchmarks/x.py``: loaded from the file beside this folder). Not part of the library API.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["current_argument", "log", "long_trace_arguments", "policy_settings", "sim_settings", "write_report"]


def _examples_common() -> ModuleType:
    """``examples/_common.py`` of this repository, as ``examples._common`` where that imports."""
    try:
        from examples import _common
    except ImportError:  # run as a script from elsewhere: the repository root is not on the path
        path = Path(__file__).resolve().parents[1] / "examples" / "_common.py"
        spec = importlib.util.spec_from_file_location("_fairshare_examples_common", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load the examples' helpers from {path}") from None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module
    return _common


_shared = _examples_common()
current_argument = _shared.current_argument
log = _shared.log
long_trace_arguments = _shared.long_trace_arguments
policy_settings = _shared.policy_settings
sim_settings = _shared.sim_settings
write_report = _shared.write_report
