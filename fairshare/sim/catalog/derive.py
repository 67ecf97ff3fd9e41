"""Opt-in derived models: throughputs computed by a stated model where nothing was measured.

Nothing is derived unless asked for (``load_catalog(derive=("gavel-on-h200",))``); derived entries get a
:class:`~fairshare.sim.catalog.Source` with ``derived=True`` whose description states the model.

``"gavel-on-h200"``: Gavel's job types on the H200. A Gavel type ``X`` of family ``f`` in {ResNet-18,
ResNet-50, CycleGAN} behaves on the H200 like the H200 workload ``h(f)`` nearest to f's reference type
``ref(f)`` (as the H200 README names them)::

    T_H200(X, s)   = T_V100(X, s) * T_H200(h(f), 1) / T_V100(ref(f), 1)      for every scale s with V100 data
    T_H200(X | Y)  = T_H200(X) * T_H200(h(X) | h(Y)) / T_H200(h(X))            (scale 1 only)

A co-located job keeps the fraction of its alone throughput that its nearest workload kept next to the
partner's nearest workload (``h(X) == h(Y)``: the mean of the two processes' fractions). Families without
a nearest H200 workload (Transformer, LM, Recommendation, A3C) get no H200 data.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from fairshare.errors import InvalidInputError
from fairshare.sim.catalog._catalog import Catalog, Source
from fairshare.sim.catalog.scaleout import derive_scale_out

__all__ = ["DERIVATIONS"]

_GAVEL_ON_H200 = {  # Gavel family -> (its type nearest to the H200 workload, the H200 workload); H200 README
    "ResNet-18": ("ResNet-18 (batch size 128)", "resnet18_cifar10"),
    "ResNet-50": ("ResNet-50 (batch size 64)", "resnet50_imagenet"),
    "CycleGAN": ("CycleGAN", "cyclegan"),
}
_GAVEL_ON_H200_MODEL = (
    "Gavel job types on the H200, derived (not measured). A Gavel type X of family f in {ResNet-18, "
    "ResNet-50, CycleGAN} is assumed to behave on the H200 like the H200 workload h(f) that the H200 README "
    "names as nearest to f's reference type ref(f) (ResNet-18 bs128 -> resnet18_cifar10, ResNet-50 bs64 -> "
    "resnet50_imagenet, CycleGAN -> cyclegan). Alone: T_H200(X, s) = T_V100(X, s) * T_H200(h(f), 1) / "
    "T_V100(ref(f), 1), for every scale s with V100 data. Pairs (scale 1 only): a job of X co-located with "
    "a job of Y (a derived Gavel type or an H200 workload) keeps the fraction of its alone throughput that "
    "h(X) kept next to h(Y) in the H200 measurement: T_H200(X|Y) = T_H200(X) * T_H200(h(X)|h(Y)) / "
    "T_H200(h(X)) (for h(X) == h(Y) the mean of the two processes' fractions is used). Families without a "
    "nearest H200 workload (Transformer, LM, Recommendation, A3C) get no H200 data. Caveats: the H200 "
    "numbers use bf16 and synthetic data, Gavel's fp32 and real data, so the ratios mix precision, input "
    "pipeline and hardware.")
"""The description of the ``gavel-on-h200`` source (stored in the catalog's :class:`Source`)."""


def _family(model: str) -> str:
    """Return the Gavel family of a job type: its name without the batch size.

    >>> _family("ResNet-50 (batch size 64)"), _family("CycleGAN")
    ('ResNet-50', 'CycleGAN')
    """
    return re.sub(r" \(batch size \d+\)$", "", model)


def _derive_gavel_on_h200(cat: Catalog) -> Catalog:
    """Add the derived H200 entries of ``"gavel-on-h200"`` (see the module docstring) to ``cat``.

    Measured entries are never overwritten. Raises :class:`InvalidInputError` (field ``derive``) if ``cat``
    lacks V100 or H200 data or one of the reference models.
    """
    needed = ["V100", "H200"]
    for gpu in needed:
        if gpu not in cat.gpu_types:
            raise InvalidInputError("derive", "gavel-on-h200", f"needs {gpu} data in the catalog")
    for ref, h in _GAVEL_ON_H200.values():
        for name in (ref, h):
            if name not in cat.models:
                raise InvalidInputError("derive", "gavel-on-h200", f"needs model {name!r} in the catalog")
    v, hg = cat.gpu_index("V100"), cat.gpu_index("H200")
    s1 = cat.scale_index(1)
    A, A_src = cat.alone.copy(), cat.alone_source.copy()
    P, P_src = cat.pair.copy(), cat.pair_source.copy()
    k = len(cat.sources)
    sources = (*cat.sources, Source(name="derived:gavel-on-h200", derived=True, description=_GAVEL_ON_H200_MODEL))
    nearest: dict[int, int] = {}                         # model index -> index of its H200 workload
    for i, model in enumerate(cat.models):
        fam = _family(model)
        if fam not in _GAVEL_ON_H200 or model in (h for _, h in _GAVEL_ON_H200.values()):
            continue
        ref, h = _GAVEL_ON_H200[fam]
        r, hi = cat.model_index(ref), cat.model_index(h)
        ratio = cat.alone[hi, s1, hg] / cat.alone[r, s1, v]
        have = (cat.alone[i, :, v] > 0) & (A_src[i, :, hg] < 0)
        A[i, have, hg] = cat.alone[i, have, v] * ratio
        A_src[i, have, hg] = k
        if have[s1]:
            nearest[i] = hi
    h200_native = {cat.model_index(h): cat.model_index(h) for _, h in _GAVEL_ON_H200.values()}
    h200_native.update({i: i for i in range(len(cat.models)) if cat.alone_source[i, s1, hg] >= 0})
    everyone = {**h200_native, **nearest}
    for x, hx in everyone.items():
        for y, hy in everyone.items():
            if (x not in nearest and y not in nearest) or P_src[s1, hg, x, y] >= 0:
                continue
            mx, my = cat.pair[s1, hg, hx, hy]
            fx = mx / cat.alone[hx, s1, hg]
            if hx == hy:
                fx = (mx + my) / 2 / cat.alone[hx, s1, hg]
            P[s1, hg, x, y, 0] = A[x, s1, hg] * fx
            P[s1, hg, y, x, 1] = A[x, s1, hg] * fx
            P_src[s1, hg, x, y] = k
    return Catalog(gpu_types=cat.gpu_types, models=cat.models, scales=cat.scales, alone=A, pair=P,
                   sources=sources, alone_source=A_src, pair_source=P_src)


DERIVATIONS: dict[str, Callable[[Catalog], Catalog]] = {"gavel-on-h200": _derive_gavel_on_h200,
                                                        "scale-out": derive_scale_out}
"""Opt-in derived models, by name: each takes a catalog and returns it with derived entries added
(``"scale-out"``: gangs of 16 to 128 GPUs, :mod:`~fairshare.sim.catalog.scaleout`)."""
