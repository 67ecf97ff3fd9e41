"""Part-of-a-GPU requests: share classes and the packing of shares onto the GPUs of one type.

A fractional job asks for a share ``0 < s < 1`` of ONE GPU. The round problem counts such a job in the
capacity row of its type with its request rounded up to a *share class* ``1/2^k`` (``k = 0..4``, so 1/16 is the
finest class). Shares of that form pack onto whole GPUs whenever their total is at most the number of GPUs:
taken largest first, each GPU's free room stays a multiple of the share being placed, so filling one GPU
before opening the next never strands room. That is what keeps the capacity row exact: every integer placement
that satisfies it can be put on real GPUs with no GPU over 1.

These functions are pure (no solver, no round document) so that the output of a round and the node-level
binding use the same packing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fairshare.errors import InvalidInputError

__all__ = ["FINEST_SHARE", "SHARE_CLASS_LEVELS", "pack_shares", "share_class", "share_classes"]

#: Number of halvings allowed below one whole GPU: classes 1, 1/2, 1/4, 1/8, 1/16.
SHARE_CLASS_LEVELS = 4
#: The finest share class, 1/16 of a GPU (a request below it is rounded up to it).
FINEST_SHARE = 1.0 / 2**SHARE_CLASS_LEVELS

# Tolerance for totals of float shares (classes themselves are exact binary fractions).
_TOL = 1e-9


def share_class(share: float) -> float:
    """The share class of a request: the smallest ``1/2^k`` (``k = 0..4``) that is at least ``share``.

    Parameters
    ----------
    share : float
        A request in ``(0, 1]`` (a share of one GPU).

    Returns
    -------
    float
        ``1.0``, ``0.5``, ``0.25``, ``0.125`` or ``0.0625``.

    Raises
    ------
    InvalidInputError
        If ``share`` is not a finite number in ``(0, 1]``.

    Examples
    --------
    >>> share_class(0.3), share_class(0.5), share_class(0.01), share_class(0.81)
    (0.5, 0.5, 0.0625, 1.0)
    """
    s = float(share)
    if not (math.isfinite(s) and 0.0 < s <= 1.0):
        raise InvalidInputError("share", share, "must be a number in (0, 1]")
    k = SHARE_CLASS_LEVELS
    while k > 0 and 1.0 / 2**k < s:
        k -= 1
    return 1.0 / 2**k


def share_classes(shares: Sequence[float] | np.ndarray) -> np.ndarray:
    """:func:`share_class` of every entry (vectorised); whole-GPU entries (``>= 1``) are returned unchanged.

    Parameters
    ----------
    shares : sequence of float
        Positive requests; entries below 1 are rounded up to their class.

    Returns
    -------
    numpy.ndarray of float
        Same length as ``shares``.
    """
    s = np.asarray(shares, dtype=float)
    out = s.copy()
    frac = s < 1.0
    if frac.any():
        if not (np.all(np.isfinite(s)) and np.all(s > 0.0)):
            bad = int(np.flatnonzero(~(np.isfinite(s) & (s > 0.0)))[0])
            raise InvalidInputError(f"shares[{bad}]", float(s[bad]), "must be a positive finite number")
        # Smallest k' >= 0 with 2^-k' >= s  <=>  k' = floor(-log2 s), capped at the finest class.
        k = np.minimum(np.floor(-np.log2(s[frac])), SHARE_CLASS_LEVELS)
        cls = np.exp2(-k)
        # Guard float log2 at exact classes: move down a class while the next finer one still covers s.
        finer = (cls / 2.0 >= s[frac]) & (k < SHARE_CLASS_LEVELS)
        cls = np.where(finer, cls / 2.0, cls)
        out[frac] = np.where(cls < s[frac], cls * 2.0, cls)  # and never below the request
    return out


def pack_shares(shares: Sequence[float] | np.ndarray, gpus: int) -> list[int]:
    """Put shares of one GPU onto ``gpus`` GPUs, largest first; return the GPU index of each share.

    Shares are taken in decreasing order (ties by position) and each goes on the lowest-indexed GPU with room
    (first fit decreasing). When every share is a share class ``1/2^k`` and their total is at most ``gpus``,
    this always succeeds (see the module docstring); other shares are packed if first fit decreasing finds room.

    Parameters
    ----------
    shares : sequence of float
        Each in ``(0, 1]``: the (rounded) share of one GPU a job holds.
    gpus : int
        Number of GPUs available, indices ``0 .. gpus - 1``.

    Returns
    -------
    list of int
        ``index[i]`` is the GPU that hosts share ``i``; the shares on every GPU sum to at most 1.

    Raises
    ------
    InvalidInputError
        If a share is not in ``(0, 1]``, ``gpus`` is negative, or the shares do not fit.

    Examples
    --------
    >>> pack_shares([0.25, 0.5, 0.25, 0.5, 0.125], 2)
    [1, 0, 1, 0, 1]
    """
    if isinstance(gpus, bool) or not isinstance(gpus, (int, np.integer)) or gpus < 0:
        raise InvalidInputError("gpus", gpus, "must be a non-negative integer")
    s = np.asarray(shares, dtype=float)
    if s.ndim != 1:
        raise InvalidInputError("shares", list(np.ravel(s)), "must be a flat sequence of numbers")
    if s.size == 0:
        return []
    ok = np.isfinite(s) & (s > 0.0) & (s <= 1.0)
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0])
        raise InvalidInputError(f"shares[{bad}]", float(s[bad]), "must be a number in (0, 1]")
    total = float(s.sum())
    if total > gpus + _TOL:
        raise InvalidInputError("shares", round(total, 9), f"total exceeds the {gpus} GPUs available")
    order = np.argsort(-s, kind="stable")
    free = np.ones(int(gpus))
    out = [0] * s.size
    lowest_open = 0  # every GPU below this one is full (free < smallest share seen so far is not needed)
    for i in order:
        share = s[i]
        while lowest_open < free.size and free[lowest_open] <= _TOL:
            lowest_open += 1
        fits = np.flatnonzero(free[lowest_open:] >= share - _TOL)
        if fits.size == 0:
            raise InvalidInputError("shares", _clip_list(s), f"do not fit on {gpus} GPUs (largest first)")
        g = lowest_open + int(fits[0])
        free[g] -= share
        out[int(i)] = g
    return out


def _clip_list(values: np.ndarray, limit: int = 12) -> list[float]:
    """The first ``limit`` values as plain floats (for error messages)."""
    return [float(v) for v in values[:limit]]
