"""What differs between the Python versions fairshare supports: ``enum.StrEnum`` (3.11) for Python 3.10."""

from __future__ import annotations

import sys

__all__ = ["StrEnum"]

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # pragma: no cover
    from enum import Enum

    class StrEnum(str, Enum):
        """``enum.StrEnum`` for Python 3.10: members are strings and ``str(member)`` is the value."""

        def __str__(self) -> str:
            return str(self.value)
