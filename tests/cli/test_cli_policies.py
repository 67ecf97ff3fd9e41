"""`fairshare compare --help` and docs/cli.md list every registered policy with its options."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fairshare.policies import get_policy, policy_names, policy_options

CLI_DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


@pytest.fixture(scope="module")
def compare_help() -> str:
    out = subprocess.run([sys.executable, "-m", "fairshare", "compare", "--help"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("name", policy_names())
def test_help_lists_every_policy_with_its_options(compare_help, name):
    assert f"  {name}: " in compare_help
    for key, default in policy_options(name).items():
        assert f"{key}={default!r}" in compare_help


@pytest.mark.parametrize("name", policy_names())
def test_listed_options_construct_the_policy(name):
    # the defaults shown are the constructor's own: passing them back gives a policy of that name
    assert get_policy(name, **policy_options(name)).name == name


@pytest.mark.parametrize("name", policy_names())
def test_cli_doc_lists_every_policy_and_option(name):
    text = CLI_DOC.read_text(encoding="utf-8")
    assert f"`{name}`" in text
    for key in policy_options(name):
        assert f"`{key}`" in text
