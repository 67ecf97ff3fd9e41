"""Numpy steps that the round's hot paths take many times, written for their shapes.

A round's per-job arrays are tall and narrow: a row per job and a column per GPU type (a handful). numpy
reduces such an array along its rows several times slower than it combines its few columns one by one, and
the results are the same to the last bit (a maximum is exact).
"""

from __future__ import annotations

import numpy as np


def row_max(a: np.ndarray) -> np.ndarray:
    """``a.max(axis=1)`` of a 2-D array with at least one column, by columns (a new float or int array).

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
