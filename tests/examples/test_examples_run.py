"""The example scripts run with fairshare installed and nothing on ``sys.path``: as scripts and as modules."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from _examples import EXAMPLES

SCRIPTS = ["examples/ablations", "examples/tradeoff_epsilon", "examples/main_comparison", "examples/gavel_crosscheck",
           "benchmarks/bench_simulation", "benchmarks/round_parts"]


@pytest.mark.parametrize("how", ["script", "module"])
@pytest.mark.parametrize("name", SCRIPTS)
def test_example_starts_as_a_script_and_as_a_module(name: str, how: str) -> None:
    root = EXAMPLES.parent
    args = [str(root / f"{name}.py")] if how == "script" else ["-m", name.replace("/", ".")]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, *args, "--help"], cwd=root, env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("usage:")
