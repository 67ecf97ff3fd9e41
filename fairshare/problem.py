"""The round problem: cluster, jobs, co-location candidates and fairness knobs of one scheduling round.

A :class:`RoundProblem` is the validated, array form of the round document of
``shared/spec/round-problem.md`` section 6. Build one from a document with :meth:`RoundProblem.from_dict`
/ :meth:`RoundProblem.from_json`, or directly from arrays (the constructor validates them too; the
simulator uses that path to avoid dictionaries). Every array is float64/int64 and read-only.

Conventions
-----------
* ``throughput[j, g] == 0`` means job ``j`` cannot run on type ``g``; so does ``scale[j] > capacity[g]``
  (see :attr:`RoundProblem.runnable`).
* Co-location candidate ``p`` lets jobs ``pair_jobs[p, 0]`` and ``pair_jobs[p, 1]`` share ``scale`` GPUs
  of type ``pair_gpu[p]``, running at ``pair_throughput[p, 0]`` and ``pair_throughput[p, 1]``.
* ``weight`` holds the weights as given; the normalised weights (mean 1 over the round's jobs) are
  :attr:`RoundProblem.normalized_weight`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fairshare.errors import InvalidInputError

__all__ = ["RoundProblem"]

_MAX_COUNT = 2**53  # GPU counts and gang sizes beyond this are not meaningful (and not exact in float64)
_TOP_KEYS = {"gpus", "jobs", "colocation", "epsilon", "fairness_weight"}
_JOB_KEYS = {"id", "scale", "weight", "deficit", "throughput"}
_PAIR_KEYS = {"jobs", "gpu", "throughput"}


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_int(v: object) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())


@dataclass(frozen=True, slots=True, eq=False)
class RoundProblem:
    """One scheduling round (spec section 1), validated.

    Parameters
    ----------
    gpu_types : tuple of str
        Names of the GPU types, in column order of ``throughput``.
    capacity : array of int, shape (G,)
        Whole GPUs of each type (``C_g >= 0``, at least one GPU in all).
    job_ids : tuple of str
        Unique job identifiers, in row order.
    scale : array of int, shape (N,)
        Gang size ``s_j >= 1``.
    throughput : array of float, shape (N, G)
        Alone throughput ``T[j, g]`` on ``s_j`` GPUs of type ``g``; 0 = cannot run.
    weight : array of float, shape (N,), optional
        Fairness weights ``w_j > 0`` (default 1).
    deficit : array of float, shape (N,), optional
        Carried deficits ``D_j >= 0`` (default 0).
    pair_jobs : array of int, shape (P, 2), optional
        Job indices of co-location candidates.
    pair_gpu : array of int, shape (P,), optional
        GPU type index of each candidate.
    pair_throughput : array of float, shape (P, 2), optional
        Co-located throughputs ``T[j|k, g]``, ``T[k|j, g]``.
    epsilon : float
        Fairness slack in [0, 1).
    fairness_weight : float
        ``lambda > 0``, price of one unit of weighted shortfall.

    Raises
    ------
    InvalidInputError
        If any field is invalid (spec section 6); the message names the field and the value.

    Examples
    --------
    >>> p = RoundProblem.from_dict({"gpus": {"V100": 1},
    ...                             "jobs": [{"id": "a", "scale": 1, "throughput": {"V100": 2.0}}]})
    >>> p.num_jobs, p.gpu_types
    (1, ('V100',))
    """

    gpu_types: tuple[str, ...]
    capacity: np.ndarray
    job_ids: tuple[str, ...]
    scale: np.ndarray
    throughput: np.ndarray
    weight: np.ndarray | None = None
    deficit: np.ndarray | None = None
    pair_jobs: np.ndarray | None = None
    pair_gpu: np.ndarray | None = None
    pair_throughput: np.ndarray | None = None
    epsilon: float = 0.0
    fairness_weight: float = 100.0
    _job_index: dict[str, int] = field(default=None, repr=False, compare=False)  # type: ignore[assignment]

    # ------------------------------------------------------------------ validation of the array form
    def __post_init__(self) -> None:
        set_ = object.__setattr__
        gpu_types = tuple(str(g) for g in self.gpu_types)
        job_ids = tuple(str(j) for j in self.job_ids)
        set_(self, "gpu_types", gpu_types)
        set_(self, "job_ids", job_ids)
        G, N = len(gpu_types), len(job_ids)
        if len(set(gpu_types)) != G:
            dup = next(g for g in gpu_types if gpu_types.count(g) > 1)
            raise InvalidInputError("gpus", dup, "duplicate GPU type")

        cap = np.asarray(self.capacity)
        if cap.shape != (G,):
            raise InvalidInputError("gpus", cap.tolist(), f"expected {G} capacities")
        capf = cap.astype(np.float64)
        bad = ~(np.isfinite(capf) & (capf >= 0) & (np.floor(capf) == capf))
        if bad.any():
            g = int(np.argmax(bad))
            raise InvalidInputError(f"gpus.{gpu_types[g]}", cap[g].item(), "must be a non-negative integer")
        if G == 0 or capf.sum() <= 0:
            raise InvalidInputError("gpus", dict(zip(gpu_types, cap.tolist())), "the cluster has no GPU")
        set_(self, "capacity", _readonly(capf.astype(np.int64)))

        index: dict[str, int] = {}
        for i, jid in enumerate(job_ids):
            if jid in index:
                raise InvalidInputError(f"jobs[{i}].id", jid, "duplicate job id")
            index[jid] = i
        set_(self, "_job_index", index)

        scale = np.asarray(self.scale)
        if scale.shape != (N,):
            raise InvalidInputError("scale", scale.tolist(), f"expected {N} values")
        scalef = scale.astype(np.float64)
        bad = ~(np.isfinite(scalef) & (scalef >= 1) & (np.floor(scalef) == scalef))
        if bad.any():
            j = int(np.argmax(bad))
            raise InvalidInputError(f"jobs[{j}].scale", scale[j].item(), "must be a positive integer")
        set_(self, "scale", _readonly(scalef.astype(np.int64)))

        weight = np.ones(N) if self.weight is None else np.asarray(self.weight, dtype=np.float64)
        if weight.shape != (N,):
            raise InvalidInputError("weight", weight.tolist(), f"expected {N} values")
        bad = ~(np.isfinite(weight) & (weight > 0))
        if bad.any():
            j = int(np.argmax(bad))
            raise InvalidInputError(f"jobs[{j}].weight", weight[j].item(), "must be finite and > 0")
        set_(self, "weight", _readonly(weight))

        deficit = np.zeros(N) if self.deficit is None else np.asarray(self.deficit, dtype=np.float64)
        if deficit.shape != (N,):
            raise InvalidInputError("deficit", deficit.tolist(), f"expected {N} values")
        bad = ~(np.isfinite(deficit) & (deficit >= 0))
        if bad.any():
            j = int(np.argmax(bad))
            raise InvalidInputError(f"jobs[{j}].deficit", deficit[j].item(), "must be finite and >= 0")
        set_(self, "deficit", _readonly(deficit))

        T = np.asarray(self.throughput, dtype=np.float64).reshape(N, G) if N else np.zeros((0, G))
        bad = ~(np.isfinite(T) & (T >= 0))
        if bad.any():
            j, g = (int(v) for v in np.argwhere(bad)[0])
            raise InvalidInputError(f"jobs[{j}].throughput.{gpu_types[g]}", T[j, g].item(),
                                    "must be finite and >= 0")
        set_(self, "throughput", _readonly(T))
        runnable = (T > 0) & (self.scale[:, None] <= self.capacity[None, :])
        nowhere = ~runnable.any(axis=1)
        if nowhere.any():
            j = int(np.argmax(nowhere))
            raise InvalidInputError(f"jobs[{j}]", job_ids[j],
                                    "the job can run nowhere (throughput 0 or missing on every type, or "
                                    "fewer GPUs than its scale)")

        eps = self.epsilon
        if not (_is_number(eps) and 0 <= eps < 1):
            raise InvalidInputError("epsilon", eps, "must be in [0, 1)")
        set_(self, "epsilon", float(eps))
        lam = self.fairness_weight
        if not (_is_number(lam) and math.isfinite(lam) and lam > 0):
            raise InvalidInputError("fairness_weight", lam, "must be finite and > 0")
        set_(self, "fairness_weight", float(lam))

        self._validate_pairs(runnable)

    def _validate_pairs(self, runnable: np.ndarray) -> None:
        set_ = object.__setattr__
        N, G = len(self.job_ids), len(self.gpu_types)
        pj = np.zeros((0, 2), np.int64) if self.pair_jobs is None else np.asarray(self.pair_jobs)
        P = len(pj)
        pj = pj.reshape(P, 2)
        pg = np.zeros(0, np.int64) if self.pair_gpu is None else np.asarray(self.pair_gpu).reshape(-1)
        pt = np.zeros((0, 2)) if self.pair_throughput is None else np.asarray(self.pair_throughput, np.float64)
        pt = pt.reshape(-1, 2) if pt.size else np.zeros((len(pt), 2))
        if pg.shape != (P,) or pt.shape != (P, 2):
            raise InvalidInputError("colocation", (pj.shape, pg.shape, pt.shape), "inconsistent array shapes")
        if P:
            bad = (pj < 0) | (pj >= N)
            if bad.any():
                p = int(np.argwhere(bad)[0][0])
                raise InvalidInputError(f"colocation[{p}].jobs", pj[p].tolist(), "unknown job")
            bad = (pg < 0) | (pg >= G)
            if bad.any():
                p = int(np.argmax(bad))
                raise InvalidInputError(f"colocation[{p}].gpu", pg[p].item(), "unknown GPU type")
            a, b = pj[:, 0], pj[:, 1]
            names = self.job_ids
            bad = a == b
            if bad.any():
                p = int(np.argmax(bad))
                raise InvalidInputError(f"colocation[{p}].jobs", [names[a[p]], names[b[p]]],
                                        "a job cannot be paired with itself")
            bad = self.scale[a] != self.scale[b]
            if bad.any():
                p = int(np.argmax(bad))
                raise InvalidInputError(f"colocation[{p}].jobs", [names[a[p]], names[b[p]]],
                                        f"jobs of different scales ({self.scale[a[p]]} and {self.scale[b[p]]}) "
                                        "cannot share GPUs")
            bad = ~(runnable[a, pg] & runnable[b, pg])
            if bad.any():
                p = int(np.argmax(bad))
                raise InvalidInputError(f"colocation[{p}].gpu", self.gpu_types[pg[p]],
                                        f"jobs {names[a[p]]!r} and {names[b[p]]!r} must both be able to run "
                                        "alone on this type")
            bad = ~(np.isfinite(pt) & (pt >= 0)).all(axis=1)
            if bad.any():
                p = int(np.argmax(bad))
                raise InvalidInputError(f"colocation[{p}].throughput", pt[p].tolist(),
                                        "must be two finite non-negative numbers")
            lo, hi = np.minimum(a, b), np.maximum(a, b)
            key = (lo * N + hi) * G + pg
            order = np.argsort(key, kind="stable")
            dup = np.flatnonzero(key[order][1:] == key[order][:-1])
            if dup.size:
                p = int(order[dup[0] + 1])
                raise InvalidInputError(f"colocation[{p}]", [names[a[p]], names[b[p]], self.gpu_types[pg[p]]],
                                        "the same pair is listed twice for this GPU type")
        set_(self, "pair_jobs", _readonly(pj.astype(np.int64)))
        set_(self, "pair_gpu", _readonly(pg.astype(np.int64)))
        set_(self, "pair_throughput", _readonly(pt))

    # ------------------------------------------------------------------ derived views
    @property
    def num_jobs(self) -> int:
        """Number of active jobs ``N``."""
        return len(self.job_ids)

    @property
    def num_pairs(self) -> int:
        """Number of co-location candidates ``P`` (pair x type entries)."""
        return len(self.pair_gpu)  # type: ignore[arg-type]

    @property
    def total_gpus(self) -> int:
        """``C = sum_g C_g``."""
        return int(self.capacity.sum())

    @property
    def runnable(self) -> np.ndarray:
        """Boolean (N, G): job ``j`` can run alone on type ``g``."""
        return (self.throughput > 0) & (self.scale[:, None] <= self.capacity[None, :])

    @property
    def normalized_weight(self) -> np.ndarray:
        """Weights normalised to mean 1 over the round's jobs."""
        w = self.weight
        return w / w.mean() if len(w) else w  # type: ignore[union-attr]

    @property
    def need(self) -> np.ndarray:
        """``need_j = (1 - epsilon) + D_j``: progress a job must get to have no shortfall."""
        return (1.0 - self.epsilon) + self.deficit  # type: ignore[operator]

    def job_index(self, job_id: str) -> int:
        """Row of ``job_id``; raises ``KeyError`` if unknown."""
        return self._job_index[job_id]

    def replace(self, **changes: Any) -> RoundProblem:
        """A copy with some fields replaced (validated again)."""
        fields = {f: getattr(self, f) for f in (
            "gpu_types", "capacity", "job_ids", "scale", "throughput", "weight", "deficit", "pair_jobs",
            "pair_gpu", "pair_throughput", "epsilon", "fairness_weight")}
        fields.update(changes)
        return RoundProblem(**fields)

    def take_jobs(self, rows: Sequence[int] | np.ndarray) -> RoundProblem:
        """The sub-round of the jobs in ``rows`` (in that order), with the pairs among them."""
        rows = np.asarray(rows, dtype=np.int64)
        new = np.full(self.num_jobs, -1, np.int64)
        new[rows] = np.arange(len(rows))
        pj = new[self.pair_jobs] if self.num_pairs else self.pair_jobs
        keep = (pj >= 0).all(axis=1) if self.num_pairs else np.zeros(0, bool)
        return self.replace(job_ids=tuple(self.job_ids[i] for i in rows), scale=self.scale[rows],
                            throughput=self.throughput[rows], weight=self.weight[rows],  # type: ignore[index]
                            deficit=self.deficit[rows], pair_jobs=pj[keep],  # type: ignore[index]
                            pair_gpu=self.pair_gpu[keep], pair_throughput=self.pair_throughput[keep])  # type: ignore[index]

    # ------------------------------------------------------------------ documents
    @classmethod
    def from_json(cls, text: str | bytes) -> RoundProblem:
        """Parse and validate a round document given as JSON text (spec section 6)."""
        try:
            doc = json.loads(text, object_pairs_hook=_no_duplicate_keys)
        except json.JSONDecodeError as exc:
            raise InvalidInputError("document", _clip(text), f"not valid JSON ({exc})") from None
        return cls.from_dict(doc)

    @classmethod
    def from_dict(cls, doc: Any) -> RoundProblem:
        """Validate a round document (already parsed) and build the problem.

        Raises
        ------
        InvalidInputError
            For every invalid input listed in spec section 6, naming the field and the value.
        """
        if not isinstance(doc, Mapping):
            raise InvalidInputError("document", _clip(doc), "must be a JSON object")
        _no_unknown(doc, _TOP_KEYS, "")
        for key in ("gpus", "jobs"):
            if key not in doc:
                raise InvalidInputError(key, None, "missing")
        gpus = doc["gpus"]
        if not isinstance(gpus, Mapping):
            raise InvalidInputError("gpus", _clip(gpus), "must be an object of GPU type -> number of GPUs")
        for g, c in gpus.items():
            if not (_is_int(c) and c >= 0):
                raise InvalidInputError(f"gpus.{g}", c, "must be a non-negative integer")
            if c > _MAX_COUNT:
                raise InvalidInputError(f"gpus.{g}", c, f"more GPUs than fairshare supports ({_MAX_COUNT})")
        gpu_types = tuple(str(g) for g in gpus)
        gidx = {g: i for i, g in enumerate(gpu_types)}
        capacity = np.array([int(gpus[g]) for g in gpu_types], dtype=np.int64)
        if capacity.sum() <= 0:
            raise InvalidInputError("gpus", dict(gpus), "the cluster has no GPU")

        jobs = doc["jobs"]
        if not isinstance(jobs, list):
            raise InvalidInputError("jobs", _clip(jobs), "must be a list of job objects")
        N, G = len(jobs), len(gpu_types)
        ids: list[str] = []
        seen: set[str] = set()
        scale = np.empty(N, np.int64)
        weight = np.ones(N)
        deficit = np.zeros(N)
        T = np.zeros((N, G))
        for i, job in enumerate(jobs):
            where = f"jobs[{i}]"
            if not isinstance(job, Mapping):
                raise InvalidInputError(where, _clip(job), "must be an object")
            _no_unknown(job, _JOB_KEYS, where + ".")
            jid = job.get("id")
            if jid is None:
                raise InvalidInputError(f"{where}.id", None, "missing")
            if not isinstance(jid, str) or not jid:
                raise InvalidInputError(f"{where}.id", jid, "must be a non-empty string")
            if jid in seen:
                raise InvalidInputError(f"{where}.id", jid, "duplicate job id")
            seen.add(jid)
            ids.append(jid)
            s = job.get("scale", None)
            if not (_is_int(s) and s >= 1):
                raise InvalidInputError(f"{where}.scale", s, "must be a positive integer")
            if s > _MAX_COUNT:
                raise InvalidInputError(where, jid, f"the job can run nowhere (scale {s} exceeds every GPU count)")
            scale[i] = int(s)
            w = job.get("weight", 1.0)
            if not (_is_number(w) and math.isfinite(w) and w > 0):
                raise InvalidInputError(f"{where}.weight", w, "must be finite and > 0")
            weight[i] = w
            d = job.get("deficit", 0.0)
            if not (_is_number(d) and math.isfinite(d) and d >= 0):
                raise InvalidInputError(f"{where}.deficit", d, "must be finite and >= 0")
            deficit[i] = d
            tp = job.get("throughput")
            if not isinstance(tp, Mapping):
                raise InvalidInputError(f"{where}.throughput", _clip(tp), "must be an object of GPU type -> "
                                        "throughput")
            for g, v in tp.items():
                if g not in gidx:
                    raise InvalidInputError(f"{where}.throughput.{g}", v, f"GPU type {g!r} is not in `gpus`")
                if not (_is_number(v) and math.isfinite(v) and v >= 0):
                    raise InvalidInputError(f"{where}.throughput.{g}", v, "must be finite and >= 0")
                T[i, gidx[g]] = v
            if not any(T[i, gidx[g]] > 0 and scale[i] <= capacity[gidx[g]] for g in tp):
                raise InvalidInputError(where, jid, "the job can run nowhere (throughput 0 or missing on every "
                                        "type, or fewer GPUs than its scale)")

        coloc = doc.get("colocation", [])
        if not isinstance(coloc, list):
            raise InvalidInputError("colocation", _clip(coloc), "must be a list")
        P = len(coloc)
        jidx = {jid: i for i, jid in enumerate(ids)}
        pj = np.empty((P, 2), np.int64)
        pg = np.empty(P, np.int64)
        pt = np.empty((P, 2))
        for p, entry in enumerate(coloc):
            where = f"colocation[{p}]"
            if not isinstance(entry, Mapping):
                raise InvalidInputError(where, _clip(entry), "must be an object")
            _no_unknown(entry, _PAIR_KEYS, where + ".")
            for key in _PAIR_KEYS:
                if key not in entry:
                    raise InvalidInputError(f"{where}.{key}", None, "missing")
            pair = entry["jobs"]
            if not (isinstance(pair, list) and len(pair) == 2):
                raise InvalidInputError(f"{where}.jobs", _clip(pair), "must be a list of two job ids")
            for k, jid in enumerate(pair):
                if not isinstance(jid, str) or jid not in jidx:
                    raise InvalidInputError(f"{where}.jobs", pair, f"unknown job {jid!r}")
                pj[p, k] = jidx[jid]
            g = entry["gpu"]
            if not isinstance(g, str) or g not in gidx:
                raise InvalidInputError(f"{where}.gpu", g, "GPU type is not in `gpus`")
            pg[p] = gidx[g]
            tp = entry["throughput"]
            if not (isinstance(tp, list) and len(tp) == 2
                    and all(_is_number(v) and math.isfinite(v) and v >= 0 for v in tp)):
                raise InvalidInputError(f"{where}.throughput", _clip(tp),
                                        "must be two finite non-negative numbers")
            pt[p] = tp

        return cls(gpu_types=gpu_types, capacity=capacity, job_ids=tuple(ids), scale=scale, throughput=T,
                   weight=weight, deficit=deficit, pair_jobs=pj, pair_gpu=pg, pair_throughput=pt,
                   epsilon=doc.get("epsilon", 0.0), fairness_weight=doc.get("fairness_weight", 100.0))

    def to_dict(self) -> dict[str, Any]:
        """The round document of this problem (spec section 6); ``from_dict(p.to_dict())`` round-trips."""
        G = self.gpu_types
        jobs = []
        for i, jid in enumerate(self.job_ids):
            jobs.append({"id": jid, "scale": int(self.scale[i]), "weight": float(self.weight[i]),  # type: ignore[index]
                         "deficit": float(self.deficit[i]),  # type: ignore[index]
                         "throughput": {G[g]: float(self.throughput[i, g]) for g in range(len(G))
                                        if self.throughput[i, g] > 0}})
        coloc = [{"jobs": [self.job_ids[a], self.job_ids[b]], "gpu": G[g], "throughput": [float(x), float(y)]}
                 for (a, b), g, (x, y) in zip(self.pair_jobs.tolist(), self.pair_gpu.tolist(),  # type: ignore[union-attr]
                                              self.pair_throughput.tolist())]  # type: ignore[union-attr]
        return {"gpus": {g: int(c) for g, c in zip(G, self.capacity.tolist())}, "jobs": jobs,
                "colocation": coloc, "epsilon": self.epsilon, "fairness_weight": self.fairness_weight}

    def to_json(self, **kwargs: Any) -> str:
        """JSON text of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), **kwargs)


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise InvalidInputError(key, value, "duplicate key in a JSON object (nothing is silently dropped)")
        out[key] = value
    return out


def _no_unknown(obj: Mapping[str, Any], allowed: set[str], prefix: str) -> None:
    for key in obj:
        if key not in allowed:
            raise InvalidInputError(f"{prefix}{key}", _clip(obj[key]),
                                    f"unknown key (allowed: {', '.join(sorted(allowed))})")


def _clip(value: object, limit: int = 80) -> object:
    text = repr(value)
    return value if len(text) <= limit else text[: limit - 3] + "..."
