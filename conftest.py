"""pytest configuration shared by the test suite and the doctests of the library (``--doctest-modules``).

``fairshare/__main__.py`` runs the CLI on import, so it is not collected.
"""

from __future__ import annotations

collect_ignore = ["fairshare/__main__.py"]
