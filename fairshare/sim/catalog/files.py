"""Catalog files: the format ``fairshare-catalog/1``, reading and validating a file, merging parts, the cache.

A catalog file (``docs/catalog.md``) is a JSON object with ``format``, ``name``, ``kind`` (``measured`` or
``derived``), ``source.description`` (and optionally ``sha256``, ``license``), ``gpu_types``, ``models``, rows
``alone = [{"model", "scale", <gpu>: iterations/s}]`` and optionally ``pairs = [{"a", "b", "scale", <gpu>:
[T[a|b], T[b|a]]}]``. Shipped files live in :data:`DATA_DIR` (``fairshare/data``, identical to ``models/``):
``gavel-simulation`` (Gavel's measured K80/P100/V100 throughputs used by its simulations), ``gavel-physical``
(Gavel's physical-cluster file), ``h200`` (six workloads measured for fairshare on one H200) and
``modern-derived`` (T4, A10, L4, A100, H100, H200 and the V100 variants for every workload, derived by the
rule ``modern-v1`` of :mod:`~fairshare.sim.catalog.modern`).

:func:`load_catalog` merges parts in order: GPU types and models are appended as first seen. An entry given
by two parts is an error, except that a measured entry replaces a derived one (whichever part comes first),
so a file of your own measurements can be laid over the ``modern`` catalog. Loaded catalogs are immutable,
so loads are cached by (files, GPU types, derivations).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from fairshare._io import read_input
from fairshare._validate import clip, is_real
from fairshare.documents import MAX_JSON_BYTES, read_json
from fairshare.errors import InvalidInputError
from fairshare.problem import MAX_GPUS, MAX_VALUE
from fairshare.sim.catalog._catalog import Catalog, Source
from fairshare.sim.catalog.derive import DERIVATIONS

__all__ = ["CATALOGS", "CATALOG_FILES", "DATA_DIR", "FILE_KEYS", "FORMAT", "ROW_KEYS", "CatalogFileInfo",
           "inspect_file", "load_catalog"]

FILE_KEYS = ("format", "name", "kind", "source", "units", "notes", "derivation", "gpu_types", "models",
             "model_info", "alone", "pairs")
"""The keys a catalog file may have; any other is refused (docs/catalog.md)."""

ROW_KEYS = ("model", "a", "b", "scale")
"""Keys of the rows; no GPU type may be named like one."""

DATA_DIR = Path(__file__).resolve().parents[2] / "data"
"""Directory of the packaged data files (``fairshare/data``)."""

CATALOG_FILES: dict[str, str] = {
    "gavel-simulation": "catalog_gavel_simulation.json",
    "gavel-physical": "catalog_gavel_physical.json",
    "h200": "catalog_h200.json",
    "modern-derived": "catalog_modern_derived.json",
}
"""Shipped catalog files, by part name (files in :data:`DATA_DIR`)."""

CATALOGS: dict[str, tuple[str, ...]] = {
    "default": ("gavel-simulation", "h200"),
    "physical": ("gavel-physical", "h200"),
    "gavel": ("gavel-simulation",),
    "gavel-physical": ("gavel-physical",),
    "h200": ("h200",),
    "modern": ("gavel-simulation", "h200", "modern-derived"),
}
"""Named catalogs: the parts (keys of :data:`CATALOG_FILES`) each one merges, in this order. ``"default"``
holds measured data only; ``"modern"`` adds the derived modern GPU types (labelled derived)."""

FORMAT = "fairshare-catalog/1"
"""The ``format`` value of a catalog file."""

CatalogName = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
"""What :func:`load_catalog` accepts: a catalog or part name, a file path, or a sequence of them."""
_AloneKey = tuple[str, int, str]                  # (model, scale, gpu)
_PairKey = tuple[int, str, str, str]              # (scale, gpu, model a, model b)


@dataclass(frozen=True, slots=True)
class _Part:
    """One validated catalog file."""

    source: Source
    gpu_types: list[str]
    models: list[str]
    alone: dict[_AloneKey, float]
    pairs: dict[_PairKey, tuple[float, float]]


def load_catalog(name: CatalogName = "default", *, gpu_types: Sequence[str] | None = None,
                 derive: Sequence[str] = ()) -> Catalog:
    """Load a catalog shipped with fairshare, or from catalog files in the documented format.

    Parameters
    ----------
    name : str, path, or sequence of them
        A named catalog of :data:`CATALOGS` (``"default"`` = Gavel's simulation throughputs for K80/P100/V100
        plus the H200 measurements), a part of :data:`CATALOG_FILES`, or the path of a catalog file
        (``docs/catalog.md``); a sequence merges several (an entry present in two parts is an error). A name
        of :data:`~fairshare.sim.catalog.DERIVATIONS` in the sequence (``("modern", "scale-out")``) is applied
        to the merged parts, as ``derive`` is; alone, it applies to ``"default"``.
    gpu_types : sequence of str, optional
        Keep only these GPU types, in this order; models with no data left are dropped.
    derive : sequence of str
        Opt-in derived models from :data:`~fairshare.sim.catalog.DERIVATIONS` (default: none, measured data
        only). Derived entries are marked in :attr:`Catalog.sources` (``derived=True``).

    Returns
    -------
    Catalog
        Cached and immutable: the same arguments give the same object.

    Raises
    ------
    InvalidInputError
        Unknown catalog, file or derivation name, a malformed file, or an unknown GPU type.

    Examples
    --------
    >>> load_catalog().gpu_types
    ('K80', 'P100', 'V100', 'H200')
    >>> len(load_catalog(gpu_types=["H200"]).models)
    6
    >>> load_catalog(("default", "scale-out")).scales
    (1, 2, 4, 8, 16, 32, 64, 128)
    """
    names = [name] if isinstance(name, (str, os.PathLike)) else list(name)
    named_derivations = tuple(n for n in names if isinstance(n, str) and n in DERIVATIONS)
    if named_derivations:
        rest = [n for n in names if not (isinstance(n, str) and n in DERIVATIONS)]
        parts = _resolve(rest or ["default"])
    else:
        parts = _resolve(name)
    derive_t = (derive,) if isinstance(derive, str) else tuple(derive)
    derive_t += tuple(d for d in named_derivations if d not in derive_t)
    for d in derive_t:
        if d not in DERIVATIONS:
            raise InvalidInputError("derive", d, f"unknown derivation (known: {', '.join(DERIVATIONS)})")
    gpus = None if gpu_types is None else tuple(gpu_types)
    if isinstance(gpu_types, str):
        raise InvalidInputError("gpu_types", gpu_types, "must be a sequence of GPU type names")
    return _load_cached(parts, gpus, derive_t)


def _resolve(name: CatalogName) -> tuple[str, ...]:
    """Return the absolute paths of the files that ``name`` stands for, in merge order."""
    if isinstance(name, (str, os.PathLike)):
        items: list[str | os.PathLike[str]] = [name]
    else:
        items = list(name)
        if not items:
            raise InvalidInputError("name", name, "no catalog given")
    out: list[str] = []
    for item in items:
        if isinstance(item, str) and item in CATALOGS:
            out += [str(DATA_DIR / CATALOG_FILES[p]) for p in CATALOGS[item]]
        elif isinstance(item, str) and item in CATALOG_FILES:
            out.append(str(DATA_DIR / CATALOG_FILES[item]))
        elif isinstance(item, (str, os.PathLike)) and Path(item).is_file():
            out.append(str(Path(item).resolve()))
        else:
            raise InvalidInputError("name", item, "neither a known catalog "
                                    f"({', '.join([*CATALOGS, *CATALOG_FILES])}), a derivation "
                                    f"({', '.join(DERIVATIONS)}) nor an existing file")
    return tuple(out)


@lru_cache(maxsize=32)
def _load_cached(paths: tuple[str, ...], gpu_types: tuple[str, ...] | None, derive: tuple[str, ...]) -> Catalog:
    """Read and merge ``paths``, apply the derivations, then keep ``gpu_types`` (the cache of loads)."""
    sources: list[Source] = []
    gpus: list[str] = []
    models: list[str] = []
    alone: dict[_AloneKey, tuple[float, int]] = {}
    pairs: dict[_PairKey, tuple[float, float, int]] = {}
    for path in paths:
        part = _read_file(path)
        k = len(sources)
        sources.append(part.source)
        gpus += [g for g in part.gpu_types if g not in gpus]
        models += [m for m in part.models if m not in models]
        for key, v in part.alone.items():
            if key in alone and not _replaces(sources, k, alone[key][1], f"{path}: alone", key):
                continue
            alone[key] = (v, k)
        for pkey, (x, y) in part.pairs.items():
            s, g, a, b = pkey
            old = pairs.get(pkey) or pairs.get((s, g, b, a))
            if old is not None:
                if not _replaces(sources, k, old[2], f"{path}: pairs", pkey):
                    continue
                pairs.pop((s, g, b, a), None)
            pairs[pkey] = (x, y, k)
    cat = _build(tuple(gpus), tuple(models), alone, pairs, tuple(sources))
    for d in derive:
        cat = DERIVATIONS[d](cat)
    return cat if gpu_types is None else cat.select_gpu_types(gpu_types)


def _replaces(sources: list[Source], new: int, old: int, where: str, key: object) -> bool:
    """Whether the entry of part ``new`` replaces the one of part ``old``: measured beats derived, else error."""
    if sources[new].derived == sources[old].derived:
        raise InvalidInputError(where, key, f"entry already given by the earlier catalog part {sources[old].name!r}")
    return not sources[new].derived


@dataclass(frozen=True, slots=True)
class CatalogFileInfo:
    """What one catalog file holds (:func:`inspect_file`).

    Attributes
    ----------
    path : str
    source : Source
        Its name, kind (``derived``) and description.
    gpu_types, models : tuple of str
    scales : tuple of int
        Scales with alone data.
    alone_entries, pair_entries : int
        Number of (model, scale, GPU type) alone figures and of (pair, scale, GPU type) pair figures.
    """

    path: str
    source: Source
    gpu_types: tuple[str, ...]
    models: tuple[str, ...]
    scales: tuple[int, ...]
    alone_entries: int
    pair_entries: int


def inspect_file(path: str | os.PathLike[str]) -> CatalogFileInfo:
    """Read and validate one catalog file on its own (the checks of :func:`load_catalog`).

    Raises
    ------
    InvalidInputError
        Naming the file and the field, as :func:`load_catalog` does.

    Examples
    --------
    >>> info = inspect_file(DATA_DIR / CATALOG_FILES["h200"])
    >>> info.source.name, info.source.derived, info.gpu_types, info.alone_entries, info.pair_entries
    ('h200', False, ('H200',), 6, 21)
    """
    p = Path(path)
    if not p.is_file():
        raise InvalidInputError("catalog file", str(path), "no such file" if not p.exists() else "not a file")
    part = _read_file(str(p))
    return CatalogFileInfo(str(p), part.source, tuple(part.gpu_types), tuple(part.models),
                           tuple(sorted({k[1] for k in part.alone})), len(part.alone), len(part.pairs))


def _build(gpus: tuple[str, ...], models: tuple[str, ...], alone: Mapping[_AloneKey, tuple[float, int]],
           pairs: Mapping[_PairKey, tuple[float, float, int]], sources: tuple[Source, ...]) -> Catalog:
    """Build the :class:`Catalog` of merged entries (value, source index); pairs fill both orders."""
    scales = tuple(sorted({k[1] for k in alone} | {k[0] for k in pairs})) or (1,)
    mi = {m: i for i, m in enumerate(models)}
    gi = {g: i for i, g in enumerate(gpus)}
    si = {s: i for i, s in enumerate(scales)}
    M, S, G = len(models), len(scales), len(gpus)
    A = np.zeros((M, S, G))
    A_src = np.full((M, S, G), -1, np.int64)
    for (m, s, g), (v, k) in alone.items():
        A[mi[m], si[s], gi[g]] = v
        A_src[mi[m], si[s], gi[g]] = k
    P = np.zeros((S, G, M, M, 2))
    P_src = np.full((S, G, M, M), -1, np.int64)
    for (s, g, a, b), (x, y, k) in pairs.items():
        i, j, q, w = si[s], gi[g], mi[a], mi[b]
        P[i, j, w, q] = (y, x)
        P[i, j, q, w] = (x, y)                   # a self-pair keeps its measured order (process a, b)
        P_src[i, j, q, w] = P_src[i, j, w, q] = k
    return Catalog(gpu_types=gpus, models=models, scales=scales, alone=A, pair=P, sources=sources,
                   alone_source=A_src, pair_source=P_src)


def _read_file(path: str) -> _Part:
    """Parse and validate one catalog file (format :data:`FORMAT`, see docs/catalog.md)."""
    where = Path(path).name
    raw = read_input("catalog file", path, MAX_JSON_BYTES, allow_empty=True)
    try:
        doc = read_json(raw, what="document")
    except InvalidInputError as exc:
        raise InvalidInputError("catalog file", path, f"cannot be read as JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InvalidInputError(f"{where}: format", doc.get("format") if isinstance(doc, dict) else None,
                                f"expected {FORMAT!r}")
    for key in ("name", "kind", "source", "gpu_types", "models", "alone"):
        if key not in doc:
            raise InvalidInputError(f"{where}: {key}", None, "missing")
    for key in doc:
        if key not in FILE_KEYS:  # a misspelt `pairs` would otherwise drop every pair figure without a word
            raise InvalidInputError(f"{where}: {key}", clip(doc[key]), f"unknown key (known: {', '.join(FILE_KEYS)})")
    kind = doc["kind"]
    if kind not in ("measured", "derived"):
        raise InvalidInputError(f"{where}: kind", kind, "must be 'measured' or 'derived'")
    meta = doc["source"]
    if not isinstance(meta, dict) or not isinstance(meta.get("description"), str):
        raise InvalidInputError(f"{where}: source.description", meta, "missing (say where the numbers come "
                                "from, or for derived data the model that computed them)")
    src = Source(name=str(doc["name"]), derived=kind == "derived", description=meta["description"],
                 sha256=str(meta.get("sha256", "")), license=str(meta.get("license", "")))
    gpus, models = doc["gpu_types"], doc["models"]
    for key, names in (("gpu_types", gpus), ("models", models)):
        if not (isinstance(names, list) and names and all(isinstance(x, str) and x for x in names)
                and len(set(names)) == len(names)):
            raise InvalidInputError(f"{where}: {key}", names, "must be a non-empty list of distinct names")
    mset, gset = set(models), set(gpus)
    for g in gpus:
        if g in ROW_KEYS:
            raise InvalidInputError(f"{where}: gpu_types", g, f"a GPU type may not be named like a row key "
                                    f"({', '.join(ROW_KEYS)}): its figures could not be told apart")
    for key in ("alone", "pairs"):
        if not isinstance(doc.get(key, []), list):
            raise InvalidInputError(f"{where}: {key}", type(doc[key]).__name__, "must be a list of row objects")
    alone: dict[_AloneKey, float] = {}
    for r, row in enumerate(doc["alone"]):
        field = f"{where}: alone[{r}]"
        (m,), s = _row_key(row, field, ("model",), mset)
        for g, v in row.items():
            if g in ("model", "scale"):
                continue
            if g not in gset:
                raise InvalidInputError(f"{field}.{g}", v, "not a GPU type of this file")
            if not (is_real(v) and 0 <= v <= MAX_VALUE):
                raise InvalidInputError(f"{field}.{g}", clip(v), f"must be a finite number from 0 to {MAX_VALUE:g}")
            if (m, s, g) in alone:
                raise InvalidInputError(field, (m, s, g), "duplicate entry")
            alone[(m, s, g)] = float(v)
    pairs: dict[_PairKey, tuple[float, float]] = {}
    for r, row in enumerate(doc.get("pairs", [])):
        field = f"{where}: pairs[{r}]"
        (a, b), s = _row_key(row, field, ("a", "b"), mset)
        for g, v in row.items():
            if g in ("a", "b", "scale"):
                continue
            if g not in gset:
                raise InvalidInputError(f"{field}.{g}", v, "not a GPU type of this file")
            if not (isinstance(v, list) and len(v) == 2 and all(is_real(x) and 0 <= x <= MAX_VALUE for x in v)):
                raise InvalidInputError(f"{field}.{g}", clip(v), f"must be two finite numbers from 0 to {MAX_VALUE:g}")
            for model in (a, b):
                if (model, s, g) not in alone:
                    raise InvalidInputError(f"{field}.{g}", clip(v), f"no alone figure of {model!r} at scale {s} on "
                                            f"{g} in this file: a pair's figures are read against the jobs' alone ones")
            if (s, g, a, b) in pairs or (s, g, b, a) in pairs:
                raise InvalidInputError(field, (a, b, s, g), "duplicate pair")
            pairs[(s, g, a, b)] = (float(v[0]), float(v[1]))
    return _Part(src, gpus, models, alone, pairs)


def _row_key(row: object, where: str, names: tuple[str, ...], known: set[str]) -> tuple[tuple[str, ...], int]:
    """Return the model names (``names`` keys) and the scale of one row, checked."""
    if not isinstance(row, dict):
        raise InvalidInputError(where, row, "must be an object")
    out = []
    for key in names:
        v = row.get(key)
        if v not in known:
            raise InvalidInputError(f"{where}.{key}", v, "not a model listed in `models`")
        out.append(v)
    s = row.get("scale")
    if not (isinstance(s, int) and not isinstance(s, bool) and 1 <= s <= MAX_GPUS):
        raise InvalidInputError(f"{where}.scale", clip(s), f"must be an integer from 1 to {MAX_GPUS} (GPUs of a gang)")
    return tuple(out), int(s)
