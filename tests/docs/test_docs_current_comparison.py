"""The published tables of the main comparison with today's defaults are the verdict file's, row for row."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VERDICT = ROOT / "docs" / "results" / "current" / "main_comparison_verdict.md"


def _table(text: str, start: int) -> list[str]:
    lines = text[start:].splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("|"))
    out = []
    for line in lines[first:]:
        if not line.startswith("|"):
            break
        out.append(line)
    return out


def _verdict(setting: str) -> list[str]:
    text = VERDICT.read_text(encoding="utf-8")
    return _table(text, text.index(f"## {setting}"))


def test_the_readme_table_is_the_verdicts():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("On Gavel's recipe with the same defaults")
    assert _table(text, start) == _verdict("het108 at 4 jobs/h")


def test_the_results_page_tables_are_the_verdicts():
    text = (ROOT / "docs" / "results-comparison.md").read_text(encoding="utf-8")
    section = text[text.index("## 0. Today's defaults"):text.index("## 1. ")]
    shown = re.findall(r"\*\*([^*]+)\*\*\n\n", section)
    settings = ["het108 at 4 jobs/h", "het108 at 2 jobs/h", "het108 at 1 jobs/h", "het108+h200 at 4 jobs/h"]
    assert len(shown) == len(settings)
    for title, setting in zip(shown, settings, strict=True):
        assert _table(section, section.index(f"**{title}**")) == _verdict(setting)
