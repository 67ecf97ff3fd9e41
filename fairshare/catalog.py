"""The workload catalog: measured alone and co-located throughputs per GPU type, with provenance.

A :class:`Catalog` holds, for ``M`` workloads (models), ``S`` scales (gang sizes) and ``G`` GPU types:

* ``alone[m, s, g]``: iterations/s of a job of model ``m`` on ``scales[s]`` GPUs of type ``g`` (the sum over
  its GPUs); 0 = cannot run there / no data.
* ``pair[s, g, a, b] = (T[a|b], T[b|a])``: iterations/s of a job of model ``a`` and of one of model ``b``
  when the two share ``scales[s]`` GPUs of type ``g``; ``pair[s, g, b, a]`` is the same pair reversed.
  Zero (either side) = not co-locatable. Only scale 1 has non-zero pair data in the shipped files.
* ``alone_source`` / ``pair_source``: index into ``sources`` of the file or derivation each entry comes from,
  -1 where no source has the entry. Each :class:`Source` says whether it is measured or derived.

Shipped catalog files (``fairshare/data/catalog_*.json``, identical to ``models/``; format in
``docs/catalog.md``): ``gavel-simulation`` (Gavel's measured K80/P100/V100 throughputs used by its
simulations), ``gavel-physical`` (Gavel's physical-cluster file) and ``h200`` (six workloads measured for
fairshare on one H200). Named catalogs (:data:`CATALOGS`) combine them; ``"default"`` is
``gavel-simulation + h200``. H200 workloads are models of their own: nothing maps Gavel's workloads onto the
H200 unless a derivation is asked for explicitly (``derive=("gavel-on-h200",)``, see :data:`DERIVATIONS`).

Co-location candidates (:meth:`Catalog.colocation_candidates`) follow the simulator spec: jobs of the same
scale, on a type where both can run alone, with non-zero pair data for both; optionally at most ``k``
candidates per job, chosen greedily by the combined normalised throughput
``score = T[a|b]/T[a] + T[b|a]/T[b]`` (alone throughputs on the same type).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from fairshare.errors import InvalidInputError

__all__ = ["CATALOGS", "CATALOG_FILES", "DATA_DIR", "DERIVATIONS", "Catalog", "Source", "load_catalog"]

DATA_DIR = Path(__file__).resolve().parent / "data"
"""Directory of the packaged data files."""

CATALOG_FILES: dict[str, str] = {
    "gavel-simulation": "catalog_gavel_simulation.json",
    "gavel-physical": "catalog_gavel_physical.json",
    "h200": "catalog_h200.json",
}
"""Shipped catalog files, by part name (files in :data:`DATA_DIR`)."""

CATALOGS: dict[str, tuple[str, ...]] = {
    "default": ("gavel-simulation", "h200"),
    "physical": ("gavel-physical", "h200"),
    "gavel": ("gavel-simulation",),
    "gavel-physical": ("gavel-physical",),
    "h200": ("h200",),
}
"""Named catalogs: the parts (keys of :data:`CATALOG_FILES`) each one merges, in this order."""

_FORMAT = "fairshare-catalog/1"


@dataclass(frozen=True, slots=True)
class Source:
    """Where catalog entries come from.

    Attributes
    ----------
    name : str
        Short name, e.g. ``"gavel-simulation"`` or ``"derived:gavel-on-h200"``.
    derived : bool
        False for measured data, True for numbers computed by a stated model.
    description : str
        The origin (measured) or the model that computed the numbers (derived).
    sha256 : str
        Hash of the original source file (measured), ``""`` otherwise.
    license : str
        License of the source data.
    """

    name: str
    derived: bool
    description: str
    sha256: str = ""
    license: str = ""


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, slots=True, eq=False)
class Catalog:
    """Alone and co-located throughputs of workloads on GPU types (read-only arrays, tuple labels).

    Parameters
    ----------
    gpu_types : tuple of str
        GPU type names (axis ``g``).
    models : tuple of str
        Workload names (axis ``m``), e.g. ``"ResNet-50 (batch size 64)"`` or ``"gpt2_small_lm"``.
    scales : tuple of int
        Gang sizes with data (axis ``s``), increasing, e.g. ``(1, 2, 4, 8)``.
    alone : array of float, shape (M, S, G)
        Alone iterations/s; 0 = cannot run / no data.
    pair : array of float, shape (S, G, M, M, 2)
        Co-located iterations/s ``(T[a|b], T[b|a])``; 0 = not co-locatable.
    sources : tuple of Source
        Provenance of the entries.
    alone_source : array of int, shape (M, S, G)
        Index into ``sources`` per alone entry, -1 = no entry.
    pair_source : array of int, shape (S, G, M, M)
        Index into ``sources`` per pair entry, -1 = no entry.

    Examples
    --------
    >>> cat = load_catalog()
    >>> round(cat.alone_throughput("ResNet-50 (batch size 64)", 1, "V100"), 3)
    4.395
    >>> cat.throughput_matrix(["gpt2_small_lm"], [1], ["V100", "H200"]).round(2)
    array([[ 0.  , 16.81]])
    """

    gpu_types: tuple[str, ...]
    models: tuple[str, ...]
    scales: tuple[int, ...]
    alone: np.ndarray
    pair: np.ndarray
    sources: tuple[Source, ...]
    alone_source: np.ndarray
    pair_source: np.ndarray
    _model_index: dict[str, int] = field(default=None, repr=False, compare=False)  # type: ignore[assignment]
    _gpu_index: dict[str, int] = field(default=None, repr=False, compare=False)  # type: ignore[assignment]
    _scale_lut: np.ndarray = field(default=None, repr=False, compare=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        gpus = tuple(str(g) for g in self.gpu_types)
        models = tuple(str(m) for m in self.models)
        scales = tuple(int(s) for s in self.scales)
        set_(self, "gpu_types", gpus)
        set_(self, "models", models)
        set_(self, "scales", scales)
        set_(self, "sources", tuple(self.sources))
        for label, names in (("gpu_types", gpus), ("models", models)):
            if len(set(names)) != len(names):
                dup = next(n for n in names if names.count(n) > 1)
                raise InvalidInputError(label, dup, "duplicate name")
        if any(s < 1 for s in scales) or list(scales) != sorted(set(scales)):
            raise InvalidInputError("scales", scales, "must be increasing positive integers")
        M, S, G = len(models), len(scales), len(gpus)
        alone = np.asarray(self.alone, dtype=np.float64)
        pair = np.asarray(self.pair, dtype=np.float64)
        if alone.shape != (M, S, G):
            raise InvalidInputError("alone", alone.shape, f"expected shape {(M, S, G)}")
        if pair.shape != (S, G, M, M, 2):
            raise InvalidInputError("pair", pair.shape, f"expected shape {(S, G, M, M, 2)}")
        for label, arr in (("alone", alone), ("pair", pair)):
            bad = ~(np.isfinite(arr) & (arr >= 0))
            if bad.any():
                raise InvalidInputError(label, arr[bad][0].item(), "throughputs must be finite and >= 0")
        a_src = np.asarray(self.alone_source, dtype=np.int64)
        p_src = np.asarray(self.pair_source, dtype=np.int64)
        if a_src.shape != (M, S, G) or p_src.shape != (S, G, M, M):
            raise InvalidInputError("alone_source/pair_source", (a_src.shape, p_src.shape), "wrong shape")
        n_src = len(self.sources)
        for label, arr in (("alone_source", a_src), ("pair_source", p_src)):
            if arr.size and (arr.min() < -1 or arr.max() >= n_src):
                raise InvalidInputError(label, int(arr.max()), f"source indices must be in [-1, {n_src})")
        set_(self, "alone", _readonly(alone))
        set_(self, "pair", _readonly(pair))
        set_(self, "alone_source", _readonly(a_src))
        set_(self, "pair_source", _readonly(p_src))
        set_(self, "_model_index", {m: i for i, m in enumerate(models)})
        set_(self, "_gpu_index", {g: i for i, g in enumerate(gpus)})
        lut = np.full((max(scales) + 1) if scales else 1, -1, np.int64)
        lut[list(scales)] = np.arange(S)
        set_(self, "_scale_lut", _readonly(lut))

    def __repr__(self) -> str:
        return (f"Catalog(gpu_types={self.gpu_types}, models=<{len(self.models)} models>, scales={self.scales}, "
                f"sources={tuple(s.name for s in self.sources)})")

    # ------------------------------------------------------------------ names and lookups
    def model_index(self, name: str) -> int:
        """Index of model ``name`` along the model axis.

        Raises
        ------
        InvalidInputError
            If the catalog has no such model.

        Examples
        --------
        >>> load_catalog().model_index("ResNet-18 (batch size 16)")
        0
        """
        try:
            return self._model_index[name]
        except (KeyError, TypeError):
            raise InvalidInputError("model", name, _unknown("model", self.models)) from None

    def gpu_index(self, name: str) -> int:
        """Index of GPU type ``name``; raises :class:`InvalidInputError` if unknown."""
        try:
            return self._gpu_index[name]
        except (KeyError, TypeError):
            raise InvalidInputError("gpu_type", name, _unknown("GPU type", self.gpu_types)) from None

    def scale_index(self, scale: int) -> int:
        """Index of ``scale`` along the scale axis, -1 if the catalog has no data for that scale."""
        s = _check_scale(scale, "scale")
        return int(self._scale_lut[s]) if s < len(self._scale_lut) else -1

    def supports(self, model: str, scale: int, gpu: str) -> bool:
        """Whether a job of ``model`` on ``scale`` GPUs of type ``gpu`` can run (non-zero alone throughput).

        Examples
        --------
        >>> cat = load_catalog()
        >>> cat.supports("ResNet-50 (batch size 128)", 2, "K80"), cat.supports("cyclegan", 1, "V100")
        (False, False)
        """
        return self.alone_throughput(model, scale, gpu) > 0

    def alone_throughput(self, model: str, scale: int, gpu: str) -> float:
        """Alone iterations/s of one job (0 = cannot run / no data)."""
        m, g, s = self.model_index(model), self.gpu_index(gpu), self.scale_index(scale)
        return float(self.alone[m, s, g]) if s >= 0 else 0.0

    def pair_throughput(self, model_a: str, model_b: str, gpu: str, scale: int = 1) -> tuple[float, float]:
        """Co-located iterations/s ``(T[a|b], T[b|a])`` of two jobs sharing ``scale`` GPUs of type ``gpu``.

        Examples
        --------
        >>> cat = load_catalog()
        >>> [round(x, 3) for x in cat.pair_throughput("ResNet-50 (batch size 64)",
        ...                                            "Transformer (batch size 64)", "V100")]
        [2.55, 1.774]
        """
        a, b, g, s = self.model_index(model_a), self.model_index(model_b), self.gpu_index(gpu), \
            self.scale_index(scale)
        if s < 0:
            return (0.0, 0.0)
        x, y = self.pair[s, g, a, b]
        return (float(x), float(y))

    def provenance(self, model: str, scale: int, gpu: str, partner: str | None = None) -> Source | None:
        """The :class:`Source` of an alone entry (``partner=None``) or of a pair entry; None if no entry.

        Examples
        --------
        >>> load_catalog().provenance("resnet18_cifar10", 1, "H200").name
        'h200'
        """
        m, g, s = self.model_index(model), self.gpu_index(gpu), self.scale_index(scale)
        if s < 0:
            return None
        k = self.alone_source[m, s, g] if partner is None else self.pair_source[s, g, m, self.model_index(partner)]
        return self.sources[k] if k >= 0 else None

    def runnable_models(self, scale: int = 1, gpu_types: Sequence[str] | None = None) -> tuple[str, ...]:
        """Models that can run on ``scale`` GPUs of at least one of ``gpu_types`` (default: all types).

        Examples
        --------
        >>> load_catalog().runnable_models(8, ["V100"])[:2]
        ('ResNet-18 (batch size 16)', 'ResNet-18 (batch size 32)')
        """
        s = self.scale_index(scale)
        if s < 0:
            return ()
        g = self._gpu_indices(self.gpu_types if gpu_types is None else gpu_types)
        ok = (self.alone[:, s][:, g] > 0).any(axis=1)
        return tuple(m for m, keep in zip(self.models, ok.tolist()) if keep)

    def select_gpu_types(self, gpu_types: Sequence[str]) -> Catalog:
        """The catalog restricted to ``gpu_types`` (in that order); models with no data left are dropped."""
        g = self._gpu_indices(gpu_types)
        keep = np.flatnonzero((self.alone_source[:, :, g] >= 0).any(axis=(1, 2)))
        p_src = self.pair_source[:, g][:, :, keep][:, :, :, keep]
        return Catalog(gpu_types=tuple(self.gpu_types[i] for i in g), models=tuple(self.models[i] for i in keep),
                       scales=self.scales, alone=self.alone[keep][:, :, g],
                       pair=self.pair[:, g][:, :, keep][:, :, :, keep], sources=self.sources,
                       alone_source=self.alone_source[keep][:, :, g], pair_source=p_src)

    # ------------------------------------------------------------------ per-round queries (vectorised)
    def throughput_matrix(self, models: Sequence[str] | np.ndarray, scales: Sequence[int] | np.ndarray,
                          gpu_types: Sequence[str]) -> np.ndarray:
        """Alone iterations/s of each job on each GPU type.

        Parameters
        ----------
        models : sequence of str, or array of int
            Model of each job (names, or indices along the model axis).
        scales : sequence of int
            Scale of each job (GPUs). A scale without catalog data gives 0 everywhere.
        gpu_types : sequence of str
            Columns of the result.

        Returns
        -------
        array of float, shape (N, G)
            0 = the job cannot run on that type (or there is no data).

        Examples
        --------
        >>> load_catalog().throughput_matrix(["ResNet-50 (batch size 64)"], [2], ["K80", "V100"]).round(2)
        array([[1.26, 7.92]])
        """
        m, s = self._job_indices(models, scales)
        g = self._gpu_indices(gpu_types)
        out = self.alone[m[:, None], np.maximum(s, 0)[:, None], g[None, :]]
        out[s < 0] = 0.0
        return out

    def colocation_candidates(self, models: Sequence[str] | np.ndarray, scales: Sequence[int] | np.ndarray,
                              gpu_types: Sequence[str], *, max_per_job: int | None = None
                              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Co-location candidates among jobs: which pairs may share GPUs of which type, at what throughputs.

        A candidate is a pair of jobs ``a < b`` of the same scale and a GPU type on which both can run alone
        and whose pair data is non-zero for both. With ``max_per_job=k`` every job appears in at most ``k``
        candidates: candidates are taken greedily in decreasing order of the combined normalised throughput
        ``T[a|b]/T[a] + T[b|a]/T[b]`` while both jobs have room (ties: job type, then GPU type order), so the
        result is maximal (a candidate left out has a job with ``k`` candidates). Jobs of the same
        (model, scale) are interchangeable, so the greedy runs on job types and each type's candidates are
        dealt round-robin over its jobs in index order: two jobs of one type differ by at most one
        candidate. The result is deterministic, and the same for any job order up to relabelling identical
        jobs. Cost: numpy over jobs plus a Python loop over type-level entries (a few ms for 2,000 jobs).

        Parameters
        ----------
        models, scales : sequences of length N
            The jobs (as for :meth:`throughput_matrix`).
        gpu_types : sequence of str
            GPU types of the cluster; ``pair_gpu`` indexes this sequence.
        max_per_job : int, optional
            Cap on candidates per job (``None``: all candidates, O(N^2)).

        Returns
        -------
        pair_jobs : array of int64, shape (P, 2)
            Job indices, ``pair_jobs[:, 0] < pair_jobs[:, 1]``.
        pair_gpu : array of int64, shape (P,)
            Index into ``gpu_types``.
        pair_throughput : array of float64, shape (P, 2)
            Iterations/s of job ``a`` and of job ``b`` while co-located.

        Rows are sorted by (a, b, gpu).

        Examples
        --------
        >>> cat = load_catalog()
        >>> jobs, gpu, tput = cat.colocation_candidates(
        ...     ["ResNet-50 (batch size 64)", "Transformer (batch size 64)"], [1, 1], ["V100"])
        >>> jobs.tolist(), gpu.tolist(), tput.round(3).tolist()
        ([[0, 1]], [0], [[2.55, 1.774]])
        """
        if max_per_job is not None and not (_is_int(max_per_job) and max_per_job >= 0):
            raise InvalidInputError("max_per_job", max_per_job, "must be a non-negative integer or None")
        m, s = self._job_indices(models, scales)
        g = self._gpu_indices(gpu_types)
        jobs = np.flatnonzero(s >= 0)
        key = s[jobs] * len(self.models) + m[jobs]
        types, tjob = np.unique(key, return_inverse=True)
        tm, ts = types % len(self.models), types // len(self.models)
        # type-level data, shape (G, T, T): validity, pair throughputs, score
        iso = self.alone[tm[None, :], ts[None, :], g[:, None]]                              # (G, T)
        ptp = self.pair[ts[None, :, None], g[:, None, None], tm[None, :, None], tm[None, None, :]]  # (G,T,T,2)
        valid = ((ts[:, None] == ts[None, :])[None] & (ptp[..., 0] > 0) & (ptp[..., 1] > 0)
                 & (iso[:, :, None] > 0) & (iso[:, None, :] > 0))
        if max_per_job is None:
            return _all_pairs(jobs, tjob, valid, ptp)
        with np.errstate(divide="ignore", invalid="ignore"):
            score = ptp[..., 0] / iso[:, :, None] + ptp[..., 1] / iso[:, None, :]
        return _capped_pairs(jobs, tjob, valid, ptp, score, int(max_per_job))

    # ------------------------------------------------------------------ helpers
    def _gpu_indices(self, gpu_types: Sequence[str]) -> np.ndarray:
        if isinstance(gpu_types, str):
            raise InvalidInputError("gpu_types", gpu_types, "must be a sequence of GPU type names")
        idx = np.array([self.gpu_index(name) for name in gpu_types], dtype=np.int64)
        if len(np.unique(idx)) != len(idx):
            raise InvalidInputError("gpu_types", tuple(gpu_types), "duplicate GPU type")
        return idx

    def _job_indices(self, models: Sequence[str] | np.ndarray,
                     scales: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(models, np.ndarray) and models.dtype.kind in "iu":
            m = models.astype(np.int64).reshape(-1)
            bad = (m < 0) | (m >= len(self.models))
            if bad.any():
                i = int(np.argmax(bad))
                raise InvalidInputError(f"models[{i}]", int(m[i]), f"model index out of [0, {len(self.models)})")
        else:
            if isinstance(models, str):
                raise InvalidInputError("models", models, "must be a sequence of model names")
            index = self._model_index
            try:
                m = np.array([index[name] for name in models], dtype=np.int64)
            except (KeyError, TypeError):
                i, name = next((i, n) for i, n in enumerate(models) if not isinstance(n, str) or n not in index)
                raise InvalidInputError(f"models[{i}]", name, _unknown("model", self.models)) from None
        sc = np.asarray(scales)
        if sc.shape != m.shape:
            raise InvalidInputError("scales", sc.shape, f"expected {len(m)} scales, one per model")
        scf = sc.astype(np.float64) if sc.dtype.kind in "iufb" else np.full(sc.shape, np.nan)
        bad = ~(np.isfinite(scf) & (scf >= 1) & (np.floor(scf) == scf)) | (sc.dtype.kind == "b")
        if np.any(bad):
            i = int(np.argmax(bad))
            raise InvalidInputError(f"scales[{i}]", sc.reshape(-1)[i].item(), "must be a positive integer")
        si = scf.astype(np.int64)
        lut = self._scale_lut
        s = np.where(si < len(lut), lut[np.minimum(si, len(lut) - 1)], -1)
        return m, s


# ---------------------------------------------------------------------- candidate construction
def _all_pairs(jobs: np.ndarray, tjob: np.ndarray, valid: np.ndarray,
               ptp: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every valid (a < b, gpu) candidate, sorted by (a, b, gpu)."""
    keep = valid.any(axis=(0, 2))[tjob]
    jobs, tjob = jobs[keep], tjob[keep]
    n = len(jobs)
    vt = np.moveaxis(valid, 0, -1)                                  # (T, T, G)
    mask = vt[tjob[:, None], tjob[None, :]]                         # (n, n, G)
    mask &= np.triu(np.ones((n, n), bool), 1)[:, :, None]
    i, j, k = np.nonzero(mask)
    tput = ptp[k, tjob[i], tjob[j]]
    return (np.stack([jobs[i], jobs[j]], axis=1).astype(np.int64).reshape(-1, 2), k.astype(np.int64),
            np.ascontiguousarray(tput, dtype=np.float64).reshape(-1, 2))


def _capped_pairs(jobs: np.ndarray, tjob: np.ndarray, valid: np.ndarray, ptp: np.ndarray, score: np.ndarray,
                  cap: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Greedy type-level b-matching (see :meth:`Catalog.colocation_candidates`), expanded round-robin.

    State per job type ``t`` (``n`` jobs): ``used`` candidate endpoints handed out so far, always dealt
    round-robin over the type's jobs (rank order), so the job of rank ``r`` holds ``used // n + (r < used % n)``
    and the next endpoint goes to rank ``used % n``; the cap holds while ``used <= cap * n``.

    * A cross-type entry ``(t, u, g)`` adds ``E = min(room_t, room_u, n_t n_u)`` candidates. Its endpoints on
      ``t`` are the next ``E`` of t's round-robin, grouped by job; those on ``u`` are the next ``E`` of u's
      round-robin in order. A job of ``t`` gets at most ``ceil(E / n_t) <= n_u`` consecutive ``u`` endpoints,
      which are distinct jobs, so no pair repeats.
    * A self entry ``(t, t, g)`` adds ``E = min(room_t // 2, n (n - 1) / 2)`` candidates: ``E // n`` full
      circulant classes (all pairs at ring distance ``d``: +2 for every job) and one partial layer of
      ``L = E % n`` pairs ``(x, x + L)`` for ``x`` in the next ``L`` ranks of the round-robin, which deals the
      next ``2 L`` endpoints (if every distance below ``n / 2`` is taken by full classes, one class is
      replaced by the ``n / 2`` diameters, +1 for every job, and the partial layer gets ``L + n / 2``
      pairs). Distances are distinct, so no pair repeats; the result is maximal (a candidate left out has a
      job at the cap).
    """
    T = valid.shape[1]
    n = np.bincount(tjob, minlength=T)
    order = jobs[np.lexsort((jobs, tjob))]                          # jobs grouped by type, index order
    start = np.concatenate([[0], np.cumsum(n)[:-1]])
    gg, tt, uu = np.nonzero(valid & np.triu(np.ones((T, T), bool))[None] & ((n[:, None] > 1)
                                                                            | ~np.eye(T, dtype=bool))[None])
    rank = np.lexsort((gg, uu, tt, -score[gg, tt, uu]))
    cross: list[tuple[int, int, int, int, int, int]] = []           # (g, t, u, E, used_t, used_u)
    selfs: list[tuple[int, int, int, int]] = []                     # (g, t, E, used_t)
    room = (cap * n).tolist()
    nl = n.tolist()
    used_l = [0] * T
    for k, t, u in zip(gg[rank].tolist(), tt[rank].tolist(), uu[rank].tolist()):
        if t == u:
            nt = nl[t]
            e = min(room[t] // 2, nt * (nt - 1) // 2)
            if e > 0:
                selfs.append((k, t, e, used_l[t]))
                used_l[t] += 2 * e
                room[t] -= 2 * e
        else:
            e = min(room[t], room[u], nl[t] * nl[u])
            if e > 0:
                cross.append((k, t, u, e, used_l[t], used_l[u]))
                used_l[t] += e
                used_l[u] += e
                room[t] -= e
                room[u] -= e
    parts_a, parts_b, parts_g, parts_ta, parts_tb = [], [], [], [], []
    if cross:
        ck, ct, cu, ce, cpa, cpb = (np.array(c, dtype=np.int64) for c in zip(*cross))
        na, nb = n[ct], n[cu]
        blk = np.repeat(np.arange(len(ce)), ce)
        j = np.arange(blk.size) - np.repeat(np.cumsum(ce) - ce, ce)
        base, extra = (ce // na)[blk], (ce % na)[blk]
        head = extra * (base + 1)
        v = np.where(j < head, j // (base + 1), extra + (j - head) // np.maximum(base, 1))
        ra = (cpa[blk] % na[blk] + v) % na[blk]
        rb = (cpb[blk] % nb[blk] + j) % nb[blk]
        parts_a.append(order[start[ct][blk] + ra])
        parts_b.append(order[start[cu][blk] + rb])
        parts_g.append(ck[blk])
        tp = ptp[ck, ct, cu][blk]
        parts_ta.append(tp[:, 0])
        parts_tb.append(tp[:, 1])
    for k, t, e, used0 in selfs:
        nt = int(n[t])
        c, rest = divmod(e, nt)
        half = bool(rest) and 2 * rest != nt and c == (nt - 1) // 2    # every distance < n/2 is needed:
        if half:                                                    # take the n/2 "diameters" whole and
            c, rest = c - 1, rest + nt // 2                         # a longer partial layer
        far = min(rest, nt - rest) if rest else 0                   # ring distance of the partial layer
        dist = np.array([d for d in range(1, (nt - 1) // 2 + 1) if d != far][:c], dtype=np.int64)
        r = [np.tile(np.arange(nt), c)]                             # full classes: cycles (r, r + d)
        d = [np.repeat(dist, nt)]
        if half:
            r.append(np.arange(nt // 2))
            d.append(np.full(nt // 2, nt // 2))
        r.append((used0 + np.arange(rest)) % nt)                    # partial layer: (x, x + rest) for x in
        d.append(np.full(rest, rest))                               # the round-robin run from used0
        r, d = np.concatenate(r), np.concatenate(d)
        members = order[start[t]:start[t] + nt]
        a, b = members[r], members[(r + d) % nt]
        parts_a.append(np.minimum(a, b))                           # self-pair: the lower index gets T[a|b]
        parts_b.append(np.maximum(a, b))
        parts_g.append(np.full(r.size, k, np.int64))
        parts_ta.append(np.full(r.size, ptp[k, t, t, 0]))
        parts_tb.append(np.full(r.size, ptp[k, t, t, 1]))
    if not parts_a:
        return np.zeros((0, 2), np.int64), np.zeros(0, np.int64), np.zeros((0, 2))
    a, b, k = np.concatenate(parts_a), np.concatenate(parts_b), np.concatenate(parts_g)
    ta, tb = np.concatenate(parts_ta), np.concatenate(parts_tb)
    swap = a > b
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    ta, tb = np.where(swap, tb, ta), np.where(swap, ta, tb)
    srt = np.lexsort((k, b, a))
    return (np.stack([a[srt], b[srt]], axis=1).astype(np.int64), k[srt].astype(np.int64),
            np.stack([ta[srt], tb[srt]], axis=1).astype(np.float64))


# ---------------------------------------------------------------------- loading
def load_catalog(name: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] = "default", *,
                 gpu_types: Sequence[str] | None = None, derive: Sequence[str] = ()) -> Catalog:
    """Load a catalog shipped with fairshare, or from catalog files in the documented format.

    Parameters
    ----------
    name : str, path, or sequence of them
        A named catalog of :data:`CATALOGS` (``"default"`` = Gavel's simulation throughputs for K80/P100/V100
        plus the H200 measurements), a part of :data:`CATALOG_FILES`, or the path of a catalog file
        (``docs/catalog.md``); a sequence merges several (an entry present in two parts is an error).
    gpu_types : sequence of str, optional
        Keep only these GPU types, in this order; models with no data left are dropped.
    derive : sequence of str
        Opt-in derived models from :data:`DERIVATIONS` (default: none, measured data only). Derived entries
        are marked in :attr:`Catalog.sources` (``derived=True``).

    Returns
    -------
    Catalog

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
    """
    parts = _resolve(name)
    derive_t = (derive,) if isinstance(derive, str) else tuple(derive)
    for d in derive_t:
        if d not in DERIVATIONS:
            raise InvalidInputError("derive", d, f"unknown derivation (known: {', '.join(DERIVATIONS)})")
    gpus = None if gpu_types is None else tuple(gpu_types)
    if isinstance(gpu_types, str):
        raise InvalidInputError("gpu_types", gpu_types, "must be a sequence of GPU type names")
    return _load_cached(parts, gpus, derive_t)


def _resolve(name: Any) -> tuple[str, ...]:
    if isinstance(name, (str, os.PathLike)):
        items = [name]
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
                                    f"({', '.join([*CATALOGS, *CATALOG_FILES])}) nor an existing file")
    return tuple(out)


_Entries = tuple[dict[tuple[str, int, str], float], dict[tuple[int, str, str, str], tuple[float, float]]]


@lru_cache(maxsize=32)
def _load_cached(paths: tuple[str, ...], gpu_types: tuple[str, ...] | None, derive: tuple[str, ...]) -> Catalog:
    sources: list[Source] = []
    gpus: list[str] = []
    models: list[str] = []
    alone: dict[tuple[str, int, str], tuple[float, int]] = {}
    pairs: dict[tuple[int, str, str, str], tuple[float, float, int]] = {}
    for path in paths:
        src, f_gpus, f_models, f_alone, f_pairs = _read_file(path)
        k = len(sources)
        sources.append(src)
        gpus += [g for g in f_gpus if g not in gpus]
        models += [m for m in f_models if m not in models]
        for key, v in f_alone.items():
            if key in alone:
                raise InvalidInputError(f"{path}: alone", key, "entry already given by an earlier catalog part")
            alone[key] = (v, k)
        for key, (x, y) in f_pairs.items():
            if key in pairs:
                raise InvalidInputError(f"{path}: pairs", key, "entry already given by an earlier catalog part")
            pairs[key] = (x, y, k)
    cat = _build(tuple(gpus), tuple(models), alone, pairs, tuple(sources))
    for d in derive:
        cat = DERIVATIONS[d](cat)
    return cat if gpu_types is None else cat.select_gpu_types(gpu_types)


def _build(gpus: tuple[str, ...], models: tuple[str, ...], alone: Mapping[tuple[str, int, str], tuple[float, int]],
           pairs: Mapping[tuple[int, str, str, str], tuple[float, float, int]],
           sources: tuple[Source, ...]) -> Catalog:
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


def _read_file(path: str) -> tuple[Source, list[str], list[str], dict[tuple[str, int, str], float],
                                   dict[tuple[int, str, str, str], tuple[float, float]]]:
    """Parse and validate one catalog file (format ``fairshare-catalog/1``, see docs/catalog.md)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidInputError("catalog file", path, f"cannot be read as JSON ({exc})") from None
    where = Path(path).name
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
        raise InvalidInputError(f"{where}: format", doc.get("format") if isinstance(doc, dict) else None,
                                f"expected {_FORMAT!r}")
    for key in ("name", "kind", "source", "gpu_types", "models", "alone"):
        if key not in doc:
            raise InvalidInputError(f"{where}: {key}", None, "missing")
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
    alone: dict[tuple[str, int, str], float] = {}
    for r, row in enumerate(doc["alone"]):
        field_ = f"{where}: alone[{r}]"
        m, s = _row_key(row, field_, ("model",), mset)
        for g, v in row.items():
            if g in ("model", "scale"):
                continue
            if g not in gset:
                raise InvalidInputError(f"{field_}.{g}", v, "not a GPU type of this file")
            if not (_is_number(v) and np.isfinite(v) and v >= 0):
                raise InvalidInputError(f"{field_}.{g}", v, "must be a finite number >= 0")
            if (m[0], s, g) in alone:
                raise InvalidInputError(field_, (m[0], s, g), "duplicate entry")
            alone[(m[0], s, g)] = float(v)
    pairs: dict[tuple[int, str, str, str], tuple[float, float]] = {}
    for r, row in enumerate(doc.get("pairs", [])):
        field_ = f"{where}: pairs[{r}]"
        (a, b), s = _row_key(row, field_, ("a", "b"), mset)
        for g, v in row.items():
            if g in ("a", "b", "scale"):
                continue
            if g not in gset:
                raise InvalidInputError(f"{field_}.{g}", v, "not a GPU type of this file")
            if not (isinstance(v, list) and len(v) == 2 and all(_is_number(x) and np.isfinite(x) and x >= 0
                                                                for x in v)):
                raise InvalidInputError(f"{field_}.{g}", v, "must be two finite numbers >= 0")
            if (s, g, a, b) in pairs or (s, g, b, a) in pairs:
                raise InvalidInputError(field_, (a, b, s, g), "duplicate pair")
            pairs[(s, g, a, b)] = (float(v[0]), float(v[1]))
    return src, gpus, models, alone, pairs


def _row_key(row: Any, where: str, names: tuple[str, ...], known: set[str]) -> tuple[tuple[str, ...], int]:
    if not isinstance(row, dict):
        raise InvalidInputError(where, row, "must be an object")
    out = []
    for key in names:
        v = row.get(key)
        if v not in known:
            raise InvalidInputError(f"{where}.{key}", v, "not a model listed in `models`")
        out.append(v)
    s = row.get("scale")
    if not (_is_int(s) and s >= 1):
        raise InvalidInputError(f"{where}.scale", s, "must be a positive integer")
    return tuple(out), int(s)


# ---------------------------------------------------------------------- derived models (opt-in)
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


def _family(model: str) -> str:
    return re.sub(r" \(batch size \d+\)$", "", model)


def _derive_gavel_on_h200(cat: Catalog) -> Catalog:
    """Derivation ``"gavel-on-h200"``: see :data:`_GAVEL_ON_H200_MODEL` (and docs/catalog.md)."""
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


DERIVATIONS: dict[str, Callable[[Catalog], Catalog]] = {"gavel-on-h200": _derive_gavel_on_h200}
"""Opt-in derived models, by name: each takes a catalog and returns it with derived entries added."""


# ---------------------------------------------------------------------- small helpers
def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_int(v: object) -> bool:
    return (isinstance(v, (int, np.integer)) and not isinstance(v, bool)) or (
        isinstance(v, float) and v.is_integer())


def _check_scale(scale: object, field_: str) -> int:
    if not (_is_int(scale) and scale >= 1):  # type: ignore[operator]
        raise InvalidInputError(field_, scale, "must be a positive integer")
    return int(scale)  # type: ignore[call-overload]


def _unknown(what: str, known: Sequence[str]) -> str:
    shown = ", ".join(repr(k) for k in known[:8]) + (", ..." if len(known) > 8 else "")
    return f"unknown {what} (known: {shown})"
