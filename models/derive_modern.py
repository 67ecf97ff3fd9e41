"""Write the derived catalog of rule ``modern-v1`` (``catalog_modern_derived.json``) into models/ and fairshare/data/.

The rule, its published inputs and its calibration are in ``fairshare/sim/catalog/modern.py`` and
``docs/catalog.md`` ("The modern catalog"). The file is a pure function of the measured catalog files
(``catalog_gavel_simulation.json``, ``catalog_h200.json``) and the rule: ``tests/sim/catalog/test_catalog_modern.py``
recomputes it and fails if the shipped file differs.

Usage::

    python models/derive_modern.py
"""

from __future__ import annotations

import json
from pathlib import Path

from convert_sources import OUT_DIRS, dump

from fairshare.sim.catalog import DATA_DIR, load_catalog
from fairshare.sim.catalog.modern import derive_document

NAME = "catalog_modern_derived.json"


def main() -> None:
    """Recompute the derived file and write both copies (identical bytes)."""
    info = json.loads((DATA_DIR / "catalog_h200.json").read_text(encoding="utf-8"))["model_info"]
    doc = derive_document(load_catalog(("gavel-simulation", "h200")), info)
    text = dump(doc)
    for out in OUT_DIRS:
        (Path(out) / NAME).write_text(text, encoding="utf-8")
        print(f"wrote {Path(out) / NAME}: {len(doc['alone'])} alone rows, {len(doc['pairs'])} pairs")


if __name__ == "__main__":
    main()
