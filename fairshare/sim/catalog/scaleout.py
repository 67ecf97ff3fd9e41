"""Gangs beyond the measured scales: the derived scaling rule ``scale-out-v1`` and its calibration.

Measured throughputs stop at 8 GPUs per job (Gavel measured scales 1, 2, 4 and 8); real traces have jobs of
16 to 128 GPUs. The derivation ``"scale-out"`` (:data:`~fairshare.sim.catalog.DERIVATIONS`; ask for it with
``load_catalog(("default", "scale-out"))``, ``load_catalog(derive=("scale-out",))`` or ``--catalog default
--catalog scale-out``) adds the scales of :data:`SCALES` by this rule, for each workload ``m`` and GPU type
``g``::

    b      = the largest scale below s with a figure T(m, b, g) not made by this rule; b >= 8
             (BASE_MIN_SCALE); T(m, 1, g) > 0
    d(m,g) = clip((T(m, b, g) / T(m, 1, g)) ** (1 / log2 b), 1, 2)     the mean gain per doubling, 1 .. b
    T(m, s, g) = T(m, b, g) * d(m, g) ** log2(s / b)                   for s in 16, 32, 64, 128

A workload keeps, per doubling of its gang, the mean gain it showed from 1 to ``b`` GPUs on that type,
never more than linear (``d <= 2``) and never slower with more GPUs (``d >= 1``). A workload with no
figure at 8 GPUs on a type gets none beyond. No co-location figures are added at these scales (such jobs
run alone). Figures derived from derived ones (the ``modern`` catalog's types) are derived twice; all are
labelled ``derived:scale-out-v1``.

:func:`calibration` measures the rule's error where the answer is known: leave the largest measured scale
(8) out, apply the rule to the scales below it, compare with the measurement (one doubling of
extrapolation), and the same from scales 1 and 2 only (two doublings).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fairshare.sim.catalog._catalog import Catalog, Source

__all__ = ["BASE_MIN_SCALE", "RULE", "SCALES", "ScaleOutCheck", "calibration", "derive_scale_out", "summary_table"]

RULE = "scale-out-v1"
"""Name of the rule (its source is ``derived:scale-out-v1``)."""

SCALES = (16, 32, 64, 128)
"""The scales the rule adds (GPUs per job)."""

BASE_MIN_SCALE = 8
"""A figure beyond this scale is derived only from a figure at this scale or above."""

DESCRIPTION = (
    "Gangs of 16 to 128 GPUs, derived (not measured) by rule scale-out-v1: per workload and GPU type, each "
    "doubling of the gang beyond the largest figure b (at least 8 GPUs) multiplies the job's throughput by d = "
    "clip((T_b / T_1)^(1/log2 b), 1, 2), the mean gain per doubling from 1 to b GPUs on that type; no "
    "co-location at these scales. Leave-one-out error on Gavel's measured scales (8 GPUs predicted from 1, 2 "
    "and 4): median |error| 13 %, 90th percentile 48 %, mostly pessimistic; `fairshare catalog calibration` "
    "prints it. Real scaling beyond one server depends on the network, which no catalog figure saw.")
"""The description stored in the derived source."""


def _gain(t1: np.ndarray, tb: np.ndarray, b: int) -> np.ndarray:
    """The rule's gain per doubling ``clip((tb / t1) ** (1 / log2 b), 1, 2)`` (``t1 > 0``)."""
    return np.clip((tb / t1) ** (1.0 / math.log2(b)), 1.0, 2.0)


def derive_scale_out(cat: Catalog) -> Catalog:
    """``cat`` with the scales of :data:`SCALES` added by rule ``scale-out-v1`` (module docstring).

    Figures already in ``cat`` (measured or derived by another rule) are kept; only missing ones are added.

    Examples
    --------
    >>> from fairshare.sim.catalog import load_catalog
    >>> cat = load_catalog(("default", "scale-out"))
    >>> cat.scales
    (1, 2, 4, 8, 16, 32, 64, 128)
    >>> t8 = cat.alone_throughput("ResNet-50 (batch size 64)", 8, "K80")
    >>> 8 / 16 * t8 < cat.alone_throughput("ResNet-50 (batch size 64)", 16, "K80") <= 2 * t8
    True
    >>> cat.provenance("ResNet-50 (batch size 64)", 16, "K80").name
    'derived:scale-out-v1'
    """
    scales = tuple(sorted(set(cat.scales) | set(SCALES)))
    M, G, S = len(cat.models), len(cat.gpu_types), len(scales)
    old = [scales.index(s) for s in cat.scales]
    A = np.zeros((M, S, G))
    A_src = np.full((M, S, G), -1, np.int64)
    A[:, old, :], A_src[:, old, :] = cat.alone, cat.alone_source
    P = np.zeros((S, G, M, M, 2))
    P_src = np.full((S, G, M, M), -1, np.int64)
    P[old], P_src[old] = cat.pair, cat.pair_source
    k = len(cat.sources)
    s1 = scales.index(1) if 1 in scales else -1
    for si, s in enumerate(scales):
        if s not in SCALES or s1 < 0:
            continue
        free = A_src[:, si, :] < 0                        # cells with no figure at s, and no base found yet
        for bi in range(si - 1, -1, -1):                 # b: the largest scale below s with a figure (not ours)
            b = scales[bi]
            if b < BASE_MIN_SCALE or not free.any():
                break
            given = (A_src[:, bi, :] >= 0) & (A_src[:, bi, :] != k)
            todo = free & given & (A[:, bi, :] > 0) & (A[:, s1, :] > 0)
            free &= ~given
            if not todo.any():
                continue
            gain = _gain(np.where(todo, A[:, s1, :], 1.0), np.where(todo, A[:, bi, :], 1.0), b)
            A[:, si, :] = np.where(todo, A[:, bi, :] * gain ** math.log2(s / b), A[:, si, :])
            A_src[:, si, :] = np.where(todo, k, A_src[:, si, :])
    sources = (*cat.sources, Source(name=f"derived:{RULE}", derived=True, description=DESCRIPTION))
    return Catalog(gpu_types=cat.gpu_types, models=cat.models, scales=scales, alone=A, pair=P, sources=sources,
                   alone_source=A_src, pair_source=P_src)


@dataclass(frozen=True, slots=True)
class ScaleOutCheck:
    """One check of the rule: a measured figure at the largest scale against the rule applied below it.

    Attributes
    ----------
    model, gpu_type : str
    doublings : int
        How far the rule extrapolates: 1 (scale 8 from scales 1, 2, 4) or 2 (scale 8 from scales 1, 2).
    measured, predicted : float
        Iterations/s at scale 8.
    """

    model: str
    gpu_type: str
    doublings: int
    measured: float
    predicted: float

    @property
    def error(self) -> float:
        """``predicted / measured - 1`` (positive: the rule is optimistic)."""
        return self.predicted / self.measured - 1.0


def calibration(cat: Catalog) -> list[ScaleOutCheck]:
    """The rule's leave-one-out checks on every workload and type measured at scales 1, 2, 4 and 8.

    For each such cell the rule is applied to the scales below 8 as if 4 (then 2) were the largest figure:
    ``T^(8) = T_4 * d(1..4)`` (one doubling) and ``T^(8) = T_2 * d(1..2)^2`` (two doublings), ``d`` as in
    the rule (clipped to [1, 2]). Only measured figures are used.

    Examples
    --------
    >>> from fairshare.sim.catalog import load_catalog
    >>> rows = calibration(load_catalog())
    >>> len({(r.model, r.gpu_type) for r in rows}), sorted({r.doublings for r in rows})
    (56, [1, 2])
    """
    need = (1, 2, 4, 8)
    if any(s not in cat.scales for s in need):
        return []
    i1, i2, i4, i8 = (cat.scale_index(s) for s in need)
    measured = np.array([not s.derived for s in cat.sources] + [False])      # index -1 -> False
    rows: list[ScaleOutCheck] = []
    for m, model in enumerate(cat.models):
        for g, gpu in enumerate(cat.gpu_types):
            t = cat.alone[m, [i1, i2, i4, i8], g]
            if not ((t > 0).all() and measured[cat.alone_source[m, [i1, i2, i4, i8], g]].all()):
                continue
            one = float(t[2] * _gain(t[0], t[2], 4))
            two = float(t[1] * _gain(t[0], t[1], 2) ** 2)
            rows += [ScaleOutCheck(model, gpu, 1, float(t[3]), one), ScaleOutCheck(model, gpu, 2, float(t[3]), two)]
    return rows


def summary_table(rows: Sequence[ScaleOutCheck]) -> str:
    """The calibration as a Markdown table: per extrapolation distance, the error's median, mean and tails."""
    lines = ["| predicted | checks | median abs. error | mean error | p90 abs. error | max abs. error | optimistic |",
             "|:---|---:|---:|---:|---:|---:|---:|"]
    for n, what in ((1, "8 GPUs from 1, 2, 4 (one doubling)"), (2, "8 GPUs from 1, 2 (two doublings)")):
        e = np.array([r.error for r in rows if r.doublings == n])
        if not len(e):
            continue
        a = np.abs(e)
        lines.append(f"| {what} | {len(e)} | {np.median(a):.0%} | {e.mean():+.0%} | {np.quantile(a, 0.9):.0%} | "
                     f"{a.max():.0%} | {(e > 0).mean():.0%} |")
    return "\n".join(lines) + "\n"
