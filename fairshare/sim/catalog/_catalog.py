"""The :class:`Catalog` (throughputs per workload, scale and GPU type) and the :class:`Source` of its entries.

For ``M`` models, ``S`` scales and ``G`` GPU types: ``alone[m, s, g]`` = iterations/s of one job alone (the
sum over its ``scales[s]`` GPUs), ``pair[s, g, a, b] = (T[a|b], T[b|a])`` = iterations/s of two co-located
jobs, with ``pair[s, g, b, a]`` the same pair reversed; 0 = cannot run / not co-locatable / no data. Each
entry's :class:`Source` (measured file or derivation) is indexed by ``alone_source`` / ``pair_source``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fairshare._validate import check_array, is_int, readonly
from fairshare.errors import InvalidInputError
from fairshare.sim.catalog.colocation import Candidates, candidates

__all__ = ["Catalog", "Source"]


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
    >>> from fairshare.sim.catalog import load_catalog
    >>> cat = load_catalog()
    >>> R50, TR64 = "ResNet-50 (batch size 64)", "Transformer (batch size 64)"
    >>> cat.model_index("ResNet-18 (batch size 16)"), round(cat.alone_throughput(R50, 1, "V100"), 3)
    (0, 4.395)
    >>> [round(x, 3) for x in cat.pair_throughput(R50, TR64, "V100")]
    [2.55, 1.774]
    >>> cat.supports("ResNet-50 (batch size 128)", 2, "K80"), cat.supports("cyclegan", 1, "V100")
    (False, False)
    >>> cat.provenance("resnet18_cifar10", 1, "H200").name
    'h200'
    >>> cat.runnable_models(8, ["V100"])[:2]
    ('ResNet-18 (batch size 16)', 'ResNet-18 (batch size 32)')
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
    _model_index: dict[str, int] = field(init=False, repr=False, compare=False)
    _gpu_index: dict[str, int] = field(init=False, repr=False, compare=False)
    _scale_lut: np.ndarray = field(init=False, repr=False, compare=False)   # scale -> index, -1 = none
    _pair_memo: dict[str, Any] = field(init=False, repr=False, compare=False)  # see colocation.candidates

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
            check_array(arr, arr >= 0, label, "throughputs must be finite and >= 0")
        a_src = np.asarray(self.alone_source, dtype=np.int64)
        p_src = np.asarray(self.pair_source, dtype=np.int64)
        if a_src.shape != (M, S, G) or p_src.shape != (S, G, M, M):
            raise InvalidInputError("alone_source/pair_source", (a_src.shape, p_src.shape), "wrong shape")
        n_src = len(self.sources)
        for label, idx in (("alone_source", a_src), ("pair_source", p_src)):
            if idx.size and (idx.min() < -1 or idx.max() >= n_src):
                raise InvalidInputError(label, int(idx.max()), f"source indices must be in [-1, {n_src})")
        set_(self, "alone", readonly(alone))
        set_(self, "pair", readonly(pair))
        set_(self, "alone_source", readonly(a_src))
        set_(self, "pair_source", readonly(p_src))
        set_(self, "_model_index", {m: i for i, m in enumerate(models)})
        set_(self, "_gpu_index", {g: i for i, g in enumerate(gpus)})
        lut = np.full((max(scales) + 1) if scales else 1, -1, np.int64)
        lut[list(scales)] = np.arange(S)
        set_(self, "_scale_lut", readonly(lut))
        set_(self, "_pair_memo", {})

    def __repr__(self) -> str:
        return (f"Catalog(gpu_types={self.gpu_types}, models=<{len(self.models)} models>, scales={self.scales}, "
                f"sources={tuple(s.name for s in self.sources)})")

    # ------------------------------------------------------------------ names and lookups
    def model_index(self, name: str) -> int:
        """Index of model ``name`` along the model axis; raises :class:`InvalidInputError` if unknown."""
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
        """Whether a job of ``model`` on ``scale`` GPUs of type ``gpu`` can run (non-zero alone throughput)."""
        return self.alone_throughput(model, scale, gpu) > 0

    def alone_throughput(self, model: str, scale: int, gpu: str) -> float:
        """Alone iterations/s of one job (0 = cannot run / no data)."""
        m, g, s = self.model_index(model), self.gpu_index(gpu), self.scale_index(scale)
        return float(self.alone[m, s, g]) if s >= 0 else 0.0

    def pair_throughput(self, model_a: str, model_b: str, gpu: str, scale: int = 1) -> tuple[float, float]:
        """Co-located iterations/s ``(T[a|b], T[b|a])`` of two jobs sharing ``scale`` GPUs of type ``gpu``."""
        a, b, g = self.model_index(model_a), self.model_index(model_b), self.gpu_index(gpu)
        s = self.scale_index(scale)
        if s < 0:
            return (0.0, 0.0)
        x, y = self.pair[s, g, a, b]
        return (float(x), float(y))

    def provenance(self, model: str, scale: int, gpu: str, partner: str | None = None) -> Source | None:
        """Return the :class:`Source` of an alone entry (``partner=None``) or of a pair entry; None if none."""
        m, g, s = self.model_index(model), self.gpu_index(gpu), self.scale_index(scale)
        if s < 0:
            return None
        k = self.alone_source[m, s, g] if partner is None else self.pair_source[s, g, m, self.model_index(partner)]
        return self.sources[k] if k >= 0 else None

    def runnable_models(self, scale: int = 1, gpu_types: Sequence[str] | None = None) -> tuple[str, ...]:
        """Models that can run on ``scale`` GPUs of at least one of ``gpu_types`` (default: all types)."""
        s = self.scale_index(scale)
        if s < 0:
            return ()
        g = self._gpu_indices(self.gpu_types if gpu_types is None else gpu_types)
        keep = np.flatnonzero((self.alone[:, s][:, g] > 0).any(axis=1))
        return tuple(self.models[i] for i in keep)

    def select_gpu_types(self, gpu_types: Sequence[str]) -> Catalog:
        """Return the catalog restricted to ``gpu_types`` (in that order), dropping models with no data left."""
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
        >>> from fairshare.sim.catalog import load_catalog
        >>> load_catalog().throughput_matrix(["ResNet-50 (batch size 64)"], [2], ["K80", "V100"]).round(2)
        array([[1.26, 7.92]])
        """
        m, s = self._job_indices(models, scales)
        g = self._gpu_indices(gpu_types)
        out = self.alone[m[:, None], np.maximum(s, 0)[:, None], g[None, :]]
        out[s < 0] = 0.0
        return out

    def colocation_candidates(self, models: Sequence[str] | np.ndarray, scales: Sequence[int] | np.ndarray,
                              gpu_types: Sequence[str], *, max_per_job: int | None = None) -> Candidates:
        """Co-location candidates among jobs: which pairs may share GPUs of which type, at what throughputs.

        A candidate is a pair of jobs ``a < b`` of the same scale and a GPU type on which both can run alone
        and whose pair data is non-zero for both. With ``max_per_job=k`` every job appears in at most ``k``
        candidates, taken greedily in decreasing order of ``T[a|b]/T[a] + T[b|a]/T[b]`` while both jobs have
        room (ties: job type, then GPU type order); jobs of one (model, scale) differ by at most one
        candidate. The result is maximal, deterministic, and the same for any job order up to relabelling
        identical jobs (the construction: :mod:`fairshare.sim.catalog.colocation`).

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
        pair_jobs, pair_gpu, pair_throughput : arrays of shape (P, 2) int64, (P,) int64, (P, 2) float64
            Job indices ``a < b``, index into ``gpu_types``, and iterations/s of job ``a`` and of job ``b``
            while co-located; rows sorted by (a, b, gpu).

        Examples
        --------
        >>> from fairshare.sim.catalog import load_catalog
        >>> jobs, gpu, tput = load_catalog().colocation_candidates(
        ...     ["ResNet-50 (batch size 64)", "Transformer (batch size 64)"], [1, 1], ["V100"])
        >>> jobs.tolist(), gpu.tolist(), tput.round(3).tolist()
        ([[0, 1]], [0], [[2.55, 1.774]])
        """
        if max_per_job is not None and not (is_int(max_per_job) and max_per_job >= 0):
            raise InvalidInputError("max_per_job", max_per_job, "must be a non-negative integer or None")
        m, s = self._job_indices(models, scales)
        g = self._gpu_indices(gpu_types)
        return candidates(self.alone, self.pair, m, s, g, None if max_per_job is None else int(max_per_job),
                          memo=self._pair_memo)

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
        """Model and scale index of each job (scale index -1: no data at that scale)."""
        if isinstance(models, np.ndarray) and models.dtype.kind in "iu":
            m = models.astype(np.int64).reshape(-1)
            check_array(m, (m >= 0) & (m < len(self.models)), "models",
                        f"model index out of [0, {len(self.models)})")
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
        ok = np.isfinite(scf) & (scf >= 1) & (np.floor(scf) == scf) & (sc.dtype.kind != "b")
        check_array(sc, ok, "scales", "must be a positive integer")
        si = scf.astype(np.int64)
        lut = self._scale_lut
        s = np.where(si < len(lut), lut[np.minimum(si, len(lut) - 1)], -1)
        return m, s


def _check_scale(scale: int, field_: str) -> int:
    if not (is_int(scale) and scale >= 1):
        raise InvalidInputError(field_, scale, "must be a positive integer")
    return int(scale)


def _unknown(what: str, known: Sequence[str]) -> str:
    shown = ", ".join(repr(k) for k in known[:8]) + (", ..." if len(known) > 8 else "")
    return f"unknown {what} (known: {shown})"
