"""Shared input checks: one place for the rules and one format for every message.

Every check raises :class:`~fairshare.errors.InvalidInputError`, whose message reads
``` `field` = value: reason ```. Array checks report the first offending entry with its index in the field
name (``jobs[3].weight``), so a user can find it in the document.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from fairshare.errors import InvalidInputError

__all__ = ["check_array", "check_shape", "clip", "is_int", "is_number", "is_real", "readonly", "row_max"]


def readonly(a: np.ndarray) -> np.ndarray:
    """A C-contiguous, read-only view of ``a`` (the form every core array takes)."""
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def is_number(v: object) -> bool:
    """``v`` is an int or a float (numpy scalars included), and not a bool."""
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def is_real(v: object) -> bool:
    """``v`` is a finite number (see :func:`is_number`); never raises, even on a huge int."""
    if not is_number(v):
        return False
    try:
        return math.isfinite(float(v))  # type: ignore[arg-type]
    except OverflowError:
        return False


def is_int(v: object) -> bool:
    """``v`` is an integer, or a float with an integral value (``2.0``); bools are not integers."""
    if isinstance(v, (bool, np.bool_)):
        return False
    if isinstance(v, (int, np.integer)):
        return True
    return isinstance(v, (float, np.floating)) and math.isfinite(v) and float(v).is_integer()


def clip(value: object, limit: int = 80) -> object:
    """``value`` itself if its repr is short, else its repr cut to ``limit`` characters (for messages)."""
    text = repr(value)
    return value if len(text) <= limit else text[: limit - 3] + "..."


def check_array(values: np.ndarray, ok: np.ndarray, field: str | Callable[[tuple[int, ...]], str],
                reason: str) -> None:
    """Raise for the first entry of ``values`` where ``ok`` is false (NaN and inf never pass).

    Parameters
    ----------
    values : array
        The values checked (shown in the message).
    ok : array of bool, same shape
        Where the rule holds; entries that are not finite always fail.
    field : str or callable
        The field name; a callable receives the index tuple of the offending entry and returns the name
        (``lambda i: f"jobs[{i[0]}].weight"``). A plain string gets ``[i]`` appended for 1-d arrays.
    reason : str
        What the rule is ("must be finite and > 0").

    Examples
    --------
    >>> check_array(np.array([1.0, -2.0]), np.array([1.0, -2.0]) > 0, "weight", "must be > 0")
    Traceback (most recent call last):
    ...
    fairshare.errors.InvalidInputError: `weight[1]` = -2.0: must be > 0
    """
    values = np.asarray(values)
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(values) if values.dtype.kind in "fc" else np.ones(values.shape, bool)
    bad = ~(np.asarray(ok, bool) & finite)
    if not bad.any():
        return
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    if callable(field):
        name = field(index)
    else:
        name = field + "".join(f"[{i}]" for i in index)
    value = values[index]
    raise InvalidInputError(name, clip(value.item() if isinstance(value, np.generic) else value), reason)


def check_shape(values: np.ndarray, shape: Sequence[int], field: str) -> None:
    """Raise unless ``values`` has exactly ``shape``."""
    if tuple(np.shape(values)) != tuple(shape):
        raise InvalidInputError(field, clip(np.asarray(values).tolist()),
                                f"expected shape {tuple(shape)}, got {tuple(np.shape(values))}")


def row_max(a: np.ndarray) -> np.ndarray:
    """``a.max(axis=1)`` of a 2-D array with at least one column, by columns (a new float or int array).

    A round's per-job arrays are tall and narrow (a row per job, a column per GPU type): numpy reduces such an
    array along its rows several times slower than it combines its few columns one by one, with the same result
    to the last bit.

    Examples
    --------
    >>> row_max(np.array([[1.0, 3.0, 2.0], [0.0, -1.0, 5.0]])).tolist()
    [3.0, 5.0]
    """
    if a.ndim != 2 or a.shape[1] == 0:
        raise ValueError(f"row_max: a 2-D array with at least one column is required, got shape {a.shape}")
    out = np.array(a[:, 0], copy=True)
    for g in range(1, a.shape[1]):
        np.maximum(out, a[:, g], out=out)
    return out
