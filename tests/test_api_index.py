"""The top-level API index: every public name resolves and is listed in ``help(fairshare)``."""

from __future__ import annotations

import re

import pytest

import fairshare


@pytest.mark.parametrize("name", fairshare.__all__)
def test_every_public_name_resolves_and_is_in_the_index(name: str) -> None:
    value = getattr(fairshare, name)
    assert value is not None
    doc = fairshare.__doc__ or ""
    assert re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", doc), f"{name} is public but not in the API index"


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        fairshare.no_such_name  # noqa: B018
