"""The round problem: cluster, jobs, co-location candidates and fairness knobs of one scheduling round.

A :class:`RoundProblem` is the validated, array form of the round document of
``shared/spec/round-problem.md`` section 6. Build one from a document with :meth:`RoundProblem.from_dict`
/ :meth:`RoundProblem.from_json` (the conversion lives in :mod:`fairshare.documents`), or directly from
arrays (the simulator does, to avoid dictionaries). The constructor is the one place the values are
checked. Every array is float64/int64 and read-only.

Conventions
-----------
* ``throughput[j, g] == 0`` means job ``j`` cannot run on type ``g``; so does ``scale[j] > capacity[g]``
  (see :attr:`RoundProblem.runnable`).
* ``scale[j]`` is a gang of whole GPUs, or a share ``0 < s < 1`` of one GPU (spec section 8); such a job counts
  its share class in the capacity row (:attr:`RoundProblem.capacity_scale`) and needs a type with a GPU.
* Co-location candidate ``p`` lets jobs ``pair_jobs[p, 0]`` and ``pair_jobs[p, 1]`` share ``scale`` GPUs
  of type ``pair_gpu[p]``, running at ``pair_throughput[p, 0]`` and ``pair_throughput[p, 1]``.
* ``weight`` holds the weights as given; the normalised weights (mean 1 over the round's jobs) are
  :attr:`RoundProblem.normalized_weight`.

Supported ranges
----------------
Beyond the rules of the spec, values that HiGHS cannot solve accurately are rejected rather than
silently answered wrong (HiGHS treats bounds of 1e20 as infinite and fails on matrix entries of 1e15 or
more): at most :data:`MAX_GPUS` GPUs of one type and as many per gang; throughputs, deficits and
``fairness_weight`` at most :data:`MAX_VALUE`; the largest weight at most :data:`MAX_WEIGHT_RATIO` times
the smallest.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from fairshare._validate import check_array, check_shape, is_number, is_real, readonly
from fairshare.cluster import MAX_GPUS, Cluster, Node
from fairshare.errors import InvalidInputError
from fairshare.packing import share_classes
from fairshare.running import Running

__all__ = ["MAX_GPUS", "MAX_VALUE", "MAX_WEIGHT_RATIO", "RoundProblem", "check_weight_ratio"]

#: Largest throughput (alone or co-located), deficit and ``fairness_weight``.
MAX_VALUE = 1e12
#: Largest ratio between the largest and the smallest weight of a round.
MAX_WEIGHT_RATIO = 1e12


def check_weight_ratio(w: np.ndarray) -> None:
    """Refuse the weights ``w`` (finite, > 0) of a round's jobs, in order, if they span more than the ratio allowed.

    Raises :class:`~fairshare.errors.InvalidInputError` naming the largest as ``jobs[i].weight`` when it is more
    than :data:`MAX_WEIGHT_RATIO` times the smallest.
    """
    if len(w) and float(w.max()) > MAX_WEIGHT_RATIO * float(w.min()):
        lo, hi = int(np.argmin(w)), int(np.argmax(w))
        raise InvalidInputError(f"jobs[{hi}].weight", w[hi].item(), f"more than {_sci(MAX_WEIGHT_RATIO)} times "
                                f"the smallest weight ({w[lo].item()!r} of jobs[{lo}])")


def _sci(x: float) -> str:
    return f"{x:.0e}".replace("e+", "e")


_TOO_LARGE = f"larger than fairshare supports (at most {_sci(MAX_VALUE)}; HiGHS loses accuracy beyond)"


@dataclass(frozen=True, slots=True, eq=False, init=False)
class RoundProblem:
    """One scheduling round (spec section 1), validated.

    Parameters
    ----------
    gpu_types : tuple of str
        Names of the GPU types, in column order of ``throughput``.
    capacity : array of int, shape (G,)
        Whole GPUs of each type (``0 <= C_g <= MAX_GPUS``, at least one GPU in all).
    job_ids : tuple of str
        Unique job identifiers, in row order.
    scale : array of int or float, shape (N,)
        Gang size ``1 <= s_j <= MAX_GPUS`` (whole GPUs), or a fraction ``0 < s_j < 1``: a share of ONE GPU
        (spec section 8; see :attr:`capacity_scale`). Stored as int64 when every entry is whole, else float64.
    throughput : array of float, shape (N, G)
        Alone throughput ``0 <= T[j, g] <= MAX_VALUE`` on ``s_j`` GPUs of type ``g``; 0 = cannot run.
    weight : array of float, shape (N,), optional
        Fairness weights ``w_j > 0`` (default 1), within a ratio of ``MAX_WEIGHT_RATIO`` of each other.
    deficit : array of float, shape (N,), optional
        Carried deficits ``0 <= D_j <= MAX_VALUE`` (default 0).
    priority : array of float, shape (N,), optional
        Priorities ``0 <= pi_j <= MAX_VALUE`` on the efficiency term (default 1: every job's work counts the
        same): ``E = sum_j pi_j s_j tau_j / Tmax_j``. Not normalised; choose the scale against ``lambda``.
    shortfall_price : array of float, shape (N,), optional
        Price ``0 < f_j <= MAX_VALUE`` of one unit of the job's shortfall (spec section 10; default 1): the
        objective is ``E - lambda * sum_j w_j f_j sigma_j``. Not normalised; a rule in the engine or policy
        chooses it (e.g. in finish-time units).
    running : Running, optional
        Where the jobs run now and what moving each costs (spec section 11, :class:`fairshare.running.Running`):
        a column that moves a running job gives it only the part of the round its restart leaves. Default:
        none (nothing runs; every column as in section 3).
    pair_jobs : array of int, shape (P, 2), optional
        Job indices of co-location candidates (default: none).
    pair_gpu : array of int, shape (P,), optional
        GPU type index of each candidate.
    pair_throughput : array of float, shape (P, 2), optional
        Co-located throughputs ``T[j|k, g]``, ``T[k|j, g]`` (each at most ``MAX_VALUE``).
    epsilon : float
        Fairness slack in [0, 1).
    fairness_weight : float
        ``0 < lambda <= MAX_VALUE``, price of one unit of weighted shortfall.
    nodes : sequence of Node or of node objects, optional
        The cluster's nodes (``{"id", "gpu", "gpus"}``, :func:`fairshare.cluster.parse_nodes`), for the
        node-level binding of the placements (spec section 9). The nodes of each type must hold exactly
        ``capacity`` GPUs of it. Default: none (placements stay at the type level).

    Raises
    ------
    InvalidInputError
        If any field is invalid (spec section 6) or out of the supported range (module docstring); the
        message names the field as the round document does (``jobs[3].weight``) and shows the value.

    Examples
    --------
    >>> p = RoundProblem.from_dict({"gpus": {"V100": 1},
    ...                             "jobs": [{"id": "a", "scale": 1, "throughput": {"V100": 2.0}}]})
    >>> p.num_jobs, p.gpu_types
    (1, ('V100',))
    >>> q = RoundProblem(gpu_types=("V100",), capacity=np.array([1]), job_ids=("a",), scale=np.array([1]),
    ...                  throughput=np.array([[2.0]]))
    >>> q.weight.tolist(), q.deficit.tolist(), q.pair_jobs.shape
    ([1.0], [0.0], (0, 2))
    """

    gpu_types: tuple[str, ...]
    capacity: np.ndarray
    job_ids: tuple[str, ...]
    scale: np.ndarray
    throughput: np.ndarray
    weight: np.ndarray
    deficit: np.ndarray
    pair_jobs: np.ndarray
    pair_gpu: np.ndarray
    pair_throughput: np.ndarray
    epsilon: float
    fairness_weight: float
    priority: np.ndarray
    nodes: tuple[Node, ...]
    shortfall_price: np.ndarray
    running: Running | None
    _job_index: dict[str, int] | None = field(init=False, repr=False, compare=False)  # built when first read
    # ``(space, keys)`` from a caller that numbers its jobs across rounds (the simulator: ledger rows), so that
    # a warm start matches two rounds' jobs by integers instead of by ids; ``None`` otherwise.
    _job_keys: tuple[object, np.ndarray] | None = field(init=False, repr=False, compare=False)
    _cluster: Cluster = field(init=False, repr=False, compare=False)

    def __init__(self, gpu_types: Sequence[str], capacity: np.ndarray, job_ids: Sequence[str],
                 scale: np.ndarray, throughput: np.ndarray, weight: np.ndarray | None = None,
                 deficit: np.ndarray | None = None, pair_jobs: np.ndarray | None = None,
                 pair_gpu: np.ndarray | None = None, pair_throughput: np.ndarray | None = None,
                 epsilon: float = 0.0, fairness_weight: float = 100.0,
                 priority: np.ndarray | None = None, nodes: Sequence[Node | Mapping[str, Any]] | None = None,
                 shortfall_price: np.ndarray | None = None, running: Running | None = None) -> None:
        set_ = object.__setattr__
        # ---- GPU types and capacities (the nodes are checked against them last, as before)
        types = tuple(str(g) for g in gpu_types)
        G = len(types)
        cluster = Cluster(types, capacity).require_gpu("gpus")
        cap_int = cluster.capacity_array()  # G * MAX_GPUS cannot overflow int64
        set_(self, "gpu_types", types)
        set_(self, "capacity", readonly(cap_int))

        # ---- jobs: ids, scales, weights, deficits, throughputs
        ids = tuple(map(str, job_ids))
        N = len(ids)
        index = dict(zip(ids, range(N)))
        if len(index) < N:  # name the first repeat, as a scan would
            seen: set[str] = set()
            for i, jid in enumerate(ids):
                if jid in seen:
                    raise InvalidInputError(f"jobs[{i}].id", jid, "duplicate job id")
                seen.add(jid)
        set_(self, "job_ids", ids)
        set_(self, "_job_index", index)
        set_(self, "_job_keys", None)

        raw = np.asarray(scale)
        check_shape(raw, (N,), "scale")
        if raw.dtype.kind == "b":  # True is not a gang of one GPU
            raw = raw.astype(object)
        s = _as_float(raw)
        part = (s > 0) & (s < 1)
        check_array(raw, ((s >= 1) & (np.floor(s) == s)) | part, _job_field("scale"),
                    "must be a positive integer (whole GPUs) or a fraction 0 < s < 1 (a share of one GPU)")
        check_array(raw, s <= MAX_GPUS, _job_field("scale"), f"larger than any GPU count fairshare supports "
                    f"(at most {MAX_GPUS:,} = 2**31)")
        # All-integer rounds keep integer scales (their arrays and documents are as before); a round with a
        # fractional request holds float scales.
        set_(self, "scale", readonly(s if part.any() else s.astype(np.int64)))

        w = np.ones(N) if weight is None else np.asarray(weight, dtype=np.float64)
        check_shape(w, (N,), "weight")
        check_array(w, w > 0, _job_field("weight"), "must be finite and > 0")
        check_weight_ratio(w)
        set_(self, "weight", readonly(w))

        d = np.zeros(N) if deficit is None else np.asarray(deficit, dtype=np.float64)
        check_shape(d, (N,), "deficit")
        check_array(d, d >= 0, _job_field("deficit"), "must be finite and >= 0")
        check_array(d, d <= MAX_VALUE, _job_field("deficit"), _TOO_LARGE)
        set_(self, "deficit", readonly(d))

        pi = np.ones(N) if priority is None else np.asarray(priority, dtype=np.float64)
        check_shape(pi, (N,), "priority")
        check_array(pi, pi >= 0, _job_field("priority"), "must be finite and >= 0")
        check_array(pi, pi <= MAX_VALUE, _job_field("priority"), _TOO_LARGE)
        set_(self, "priority", readonly(pi))
        set_(self, "shortfall_price", _checked_price(shortfall_price, N))

        T = np.asarray(throughput, dtype=np.float64)
        T = T.reshape(N, G) if T.size == N * G else T
        check_shape(T, (N, G), "throughput")
        check_array(T, T >= 0, lambda i: f"jobs[{i[0]}].throughput.{types[i[1]]}", "must be finite and >= 0")
        check_array(T, T <= MAX_VALUE, lambda i: f"jobs[{i[0]}].throughput.{types[i[1]]}", _TOO_LARGE)
        set_(self, "throughput", readonly(T))
        runnable = self.runnable
        nowhere = ~runnable.any(axis=1)
        if nowhere.any():
            j = int(np.argmax(nowhere))
            raise InvalidInputError(f"jobs[{j}]", ids[j], "the job can run nowhere (throughput 0 or missing on "
                                    "every type, or fewer GPUs than its scale)")

        # ---- knobs
        if not (is_number(epsilon) and 0 <= epsilon < 1):
            raise InvalidInputError("epsilon", epsilon, "must be in [0, 1)")
        set_(self, "epsilon", float(epsilon))
        if not (is_real(fairness_weight) and fairness_weight > 0):
            raise InvalidInputError("fairness_weight", fairness_weight, "must be finite and > 0")
        if fairness_weight > MAX_VALUE:
            raise InvalidInputError("fairness_weight", fairness_weight, _TOO_LARGE)
        set_(self, "fairness_weight", float(fairness_weight))

        self._set_pairs(pair_jobs, pair_gpu, pair_throughput, runnable)
        cluster = cluster.with_nodes(nodes)
        set_(self, "nodes", cluster.nodes)
        set_(self, "_cluster", cluster)
        if running is not None:
            running = Running.checked(N, G, running.gpu, running.partner, running.restart_seconds,
                                      running.round_seconds, ids)
            if not running.is_running.any():
                running = None  # nothing runs: the round is the same as without
        set_(self, "running", running)

    @classmethod
    def from_trusted_arrays(cls, gpu_types: tuple[str, ...], capacity: np.ndarray, job_ids: tuple[str, ...],
                           scale: np.ndarray, throughput: np.ndarray, weight: np.ndarray, deficit: np.ndarray,
                           pair_jobs: np.ndarray, pair_gpu: np.ndarray, pair_throughput: np.ndarray,
                           epsilon: float, fairness_weight: float,
                           job_keys: tuple[object, np.ndarray] | None = None,
                           shortfall_price: np.ndarray | None = None,
                           running: Running | None = None) -> RoundProblem:
        """The round the constructor would build from these arguments, for a caller that guarantees them valid.

        For a caller such as the simulator, whose rounds come from a trace, catalog and cluster checked before the first
        round, deficits from the deficit rule and candidates valid by construction: the per-entry checks of
        the constructor were a tenth of a long queue's round. The checks that depend on which jobs share the
        round still run (the weights' ratio, the deficits' range), with the constructor's errors; so does the
        duplicate-id check, which building the id map does anyway; so do the checks of ``shortfall_price``
        and ``running`` when given. No nodes, priorities 1. ``job_keys``:
        ``(space, keys)``, distinct integer keys of the jobs that identify them in every round built with the
        same ``space`` object (a warm start then matches rounds by keys); with them, the ids are the caller's
        guarantee to be distinct too, and the id map is built only if read.
        """
        set_ = object.__setattr__
        self = object.__new__(cls)
        N = len(job_ids)
        ids = tuple(job_ids)  # str ids (the caller's guarantee; the constructor converts with str)
        # With keys, the caller guarantees distinct ids too (the simulator's come from a checked trace): the
        # id map is built when first read, which a simulated round never does.
        index = None if job_keys is not None else dict(zip(ids, range(N)))
        w = np.asarray(weight, dtype=np.float64)
        d = np.asarray(deficit, dtype=np.float64)
        if (index is not None and len(index) < N) or (N and not (0 < float(w.min()) and np.isfinite(w.max())
                                         and float(w.max()) <= MAX_WEIGHT_RATIO * float(w.min())
                                         and 0 <= float(d.min()) and float(d.max()) <= MAX_VALUE)):
            return cls(gpu_types=gpu_types, capacity=capacity, job_ids=job_ids, scale=scale, throughput=throughput,
                       weight=weight, deficit=deficit, pair_jobs=pair_jobs, pair_gpu=pair_gpu,
                       pair_throughput=pair_throughput, epsilon=epsilon, fairness_weight=fairness_weight,
                       shortfall_price=shortfall_price, running=running)
        s = np.asarray(scale).astype(np.float64)
        part = (s > 0) & (s < 1)
        cluster = Cluster(tuple(gpu_types), capacity)  # a few types: cheap, and the round reads as one value
        set_(self, "gpu_types", cluster.gpu_types)
        set_(self, "capacity", readonly(cluster.capacity_array()))
        set_(self, "job_ids", ids)
        set_(self, "_job_index", index)
        set_(self, "_job_keys", job_keys)
        set_(self, "scale", readonly(s if part.any() else s.astype(np.int64)))
        set_(self, "weight", readonly(w))
        set_(self, "deficit", readonly(d))
        set_(self, "priority", readonly(np.ones(N)))
        set_(self, "throughput", readonly(np.asarray(throughput, dtype=np.float64).reshape(N, len(gpu_types))))
        set_(self, "epsilon", float(epsilon))
        set_(self, "fairness_weight", float(fairness_weight))
        set_(self, "pair_jobs", readonly(np.asarray(pair_jobs).reshape(-1, 2).astype(np.int64)))
        set_(self, "pair_gpu", readonly(np.asarray(pair_gpu).reshape(-1).astype(np.int64)))
        set_(self, "pair_throughput", readonly(np.asarray(pair_throughput, np.float64).reshape(-1, 2)))
        set_(self, "nodes", ())
        set_(self, "_cluster", cluster)
        set_(self, "shortfall_price", _checked_price(shortfall_price, N))
        if running is not None:
            running = Running.checked(N, len(gpu_types), running.gpu, running.partner, running.restart_seconds,
                                      running.round_seconds, ids)
            if not running.is_running.any():
                running = None
        set_(self, "running", running)
        return self

    def _set_pairs(self, pair_jobs: np.ndarray | None, pair_gpu: np.ndarray | None,
                   pair_throughput: np.ndarray | None, runnable: np.ndarray) -> None:
        """Check and store the co-location candidates."""
        N, G = self.num_jobs, len(self.gpu_types)
        pj = np.zeros((0, 2), np.int64) if pair_jobs is None else np.asarray(pair_jobs)
        P = len(pj)
        pj = pj.reshape(P, 2)
        pg = np.zeros(0, np.int64) if pair_gpu is None else np.asarray(pair_gpu).reshape(-1)
        pt = np.zeros((0, 2)) if pair_throughput is None else np.asarray(pair_throughput, np.float64)
        pt = pt.reshape(P, 2) if pt.size == 2 * P else pt
        if pg.shape != (P,) or pt.shape != (P, 2):
            raise InvalidInputError("colocation", (pj.shape, pg.shape, pt.shape), "inconsistent array shapes")
        if P:
            names, types = self.job_ids, self.gpu_types
            # Whole-array bounds first (a long queue's candidates are thousands of rows): the row-by-row masks
            # that name the first bad row are computed only when something is out of range.
            p = None if 0 <= pj.min() and pj.max() < N else _first(((pj < 0) | (pj >= N)).any(axis=1))
            if p is not None:
                raise InvalidInputError(f"colocation[{p}].jobs", pj[p].tolist(), "unknown job")
            p = None if 0 <= pg.min() and pg.max() < G else _first((pg < 0) | (pg >= G))
            if p is not None:
                raise InvalidInputError(f"colocation[{p}].gpu", pg[p].item(), "unknown GPU type")
            a, b = pj[:, 0], pj[:, 1]
            p = _first(a == b)
            if p is not None:
                raise InvalidInputError(f"colocation[{p}].jobs", [names[a[p]], names[b[p]]],
                                        "a job cannot be paired with itself")
            p = _first(self.scale[a] != self.scale[b])
            if p is not None:
                raise InvalidInputError(f"colocation[{p}].jobs", [names[a[p]], names[b[p]]],
                                        f"jobs of different scales ({self.scale[a[p]]} and {self.scale[b[p]]}) "
                                        "cannot share GPUs")
            p = _first(~(runnable[a, pg] & runnable[b, pg]))
            if p is not None:
                raise InvalidInputError(f"colocation[{p}].gpu", types[pg[p]], f"jobs {names[a[p]]!r} and "
                                        f"{names[b[p]]!r} must both be able to run alone on this type")
            in_range = bool(pt.min() >= 0 and pt.max() <= MAX_VALUE)  # False for NaN and inf too
            p = None if in_range else _first(~(np.isfinite(pt) & (pt >= 0)).all(axis=1))
            if p is not None:
                raise InvalidInputError(f"colocation[{p}].throughput", pt[p].tolist(),
                                        "must be two finite non-negative numbers")
            p = None if in_range else _first((pt > MAX_VALUE).any(axis=1))
            if p is not None:
                raise InvalidInputError(f"colocation[{p}].throughput", pt[p].tolist(), _TOO_LARGE)
            lo, hi = np.minimum(a, b), np.maximum(a, b)
            key = (lo * N + hi) * G + pg
            order = np.argsort(key, kind="stable")
            dup = np.flatnonzero(key[order][1:] == key[order][:-1])
            if dup.size:
                p = int(order[dup[0] + 1])
                raise InvalidInputError(f"colocation[{p}]", [names[a[p]], names[b[p]], types[pg[p]]],
                                        "the same pair is listed twice for this GPU type")
        set_ = object.__setattr__
        set_(self, "pair_jobs", readonly(pj.astype(np.int64)))
        set_(self, "pair_gpu", readonly(pg.astype(np.int64)))
        set_(self, "pair_throughput", readonly(pt))

    # ------------------------------------------------------------------ derived views
    @property
    def num_jobs(self) -> int:
        """Number of active jobs ``N``."""
        return len(self.job_ids)

    @property
    def num_pairs(self) -> int:
        """Number of co-location candidates ``P`` (pair x type entries)."""
        return len(self.pair_gpu)

    @property
    def cluster(self) -> Cluster:
        """The round's cluster: :attr:`gpu_types`, :attr:`capacity` and :attr:`nodes` as one value."""
        return self._cluster

    @property
    def total_gpus(self) -> int:
        """``C = sum_g C_g``."""
        return int(self.capacity.sum())

    @property
    def runnable(self) -> np.ndarray:
        """Boolean (N, G): job ``j`` can run alone on type ``g``."""
        return (self.throughput > 0) & (self.scale[:, None] <= self.capacity[None, :])

    @property
    def fractional(self) -> np.ndarray:
        """Boolean (N,): the job asks for part of one GPU (``0 < s_j < 1``, spec section 8)."""
        return np.asarray(self.scale < 1)

    @property
    def has_fractional(self) -> bool:
        """Some job of the round asks for part of one GPU."""
        return bool(self.scale.dtype.kind == "f" and (self.scale < 1).any())

    @property
    def capacity_scale(self) -> np.ndarray:
        """What each job counts in the capacity row of its type: ``s_j`` for a gang, its share class for a part.

        A fractional request is rounded up to the next share class ``1/2^k`` (``k = 0..4``;
        :func:`fairshare.packing.share_classes`), so that any placement within capacity packs onto real GPUs
        with no GPU over 1. An all-integer round returns ``scale`` itself (integer dtype).
        """
        if not self.has_fractional:
            return self.scale
        return readonly(share_classes(self.scale))

    @property
    def normalized_weight(self) -> np.ndarray:
        """Weights normalised to mean 1 over the round's jobs (right even when their sum overflows).

        Examples
        --------
        >>> p = RoundProblem(gpu_types=("A",), capacity=np.array([1]), job_ids=("a", "b"),
        ...                  scale=np.array([1, 1]), throughput=np.ones((2, 1)), weight=np.array([3e307, 1e308]))
        >>> p.normalized_weight.round(6).tolist()
        [0.461538, 1.538462]
        """
        w = self.weight
        if not len(w):
            return w
        top = float(w.max())
        if top * len(w) < np.finfo(np.float64).max:  # the sum cannot overflow
            return w / w.mean()
        w = w / top
        return w / w.mean()

    @property
    def need(self) -> np.ndarray:
        """``need_j = (1 - epsilon) + D_j``: progress a job must get to have no shortfall."""
        return (1.0 - self.epsilon) + self.deficit

    @property
    def job_keys(self) -> tuple[object, np.ndarray] | None:
        """``(space, keys)`` given to :meth:`from_trusted_arrays` (the jobs' keys across rounds), else ``None``."""
        return self._job_keys

    def _index(self) -> dict[str, int]:
        index = self._job_index
        if index is None:
            index = dict(zip(self.job_ids, range(len(self.job_ids))))
            object.__setattr__(self, "_job_index", index)
        return index

    def job_index(self, job_id: str) -> int:
        """Row of ``job_id``; raises ``KeyError`` if unknown."""
        return self._index()[job_id]

    @property
    def job_positions(self) -> Mapping[str, int]:
        """Row of every job id, as a read-only mapping (the one :meth:`job_index` reads)."""
        return MappingProxyType(self._index())

    def replace(self, **changes: Any) -> RoundProblem:
        """A copy with some fields replaced (validated again)."""
        args = {f.name: getattr(self, f.name) for f in fields(self) if f.init}
        args.update(changes)
        return RoundProblem(**args)

    def with_priority(self, priority: np.ndarray) -> RoundProblem:
        """A copy with the per-job ``priority`` replaced; only the new priorities are validated.

        The same result as ``replace(priority=priority)``, without checking again the fields that did not
        change (a policy that sets priorities every round saves a whole validation per round).

        Raises
        ------
        InvalidInputError
            If ``priority`` is not one finite value >= 0 per job.
        """
        return self.with_prices(priority=priority)

    def with_prices(self, *, priority: np.ndarray | None = None,
                    shortfall_price: np.ndarray | None = None) -> RoundProblem:
        """A copy with per-job ``priority`` and/or ``shortfall_price`` replaced; only those are validated.

        The same result as ``replace(priority=..., shortfall_price=...)`` without checking again the fields
        that did not change (rules set them every round). ``None`` keeps a field as it is.

        Raises
        ------
        InvalidInputError
            If ``priority`` is not one finite value >= 0 per job, or ``shortfall_price`` not one finite value
            > 0 per job.
        """
        new = object.__new__(RoundProblem)
        for f in fields(self):
            object.__setattr__(new, f.name, getattr(self, f.name))
        if priority is not None:
            pi = np.asarray(priority, dtype=np.float64)
            check_shape(pi, (self.num_jobs,), "priority")
            check_array(pi, pi >= 0, _job_field("priority"), "must be finite and >= 0")
            check_array(pi, pi <= MAX_VALUE, _job_field("priority"), _TOO_LARGE)
            object.__setattr__(new, "priority", readonly(pi.copy()))
        if shortfall_price is not None:
            object.__setattr__(new, "shortfall_price",
                               _checked_price(np.array(shortfall_price, dtype=np.float64), self.num_jobs))
        return new

    def take_jobs(self, rows: Sequence[int] | np.ndarray) -> RoundProblem:
        """The sub-round of the jobs in ``rows`` (in that order), with the pairs among them."""
        rows = np.asarray(rows, dtype=np.int64)
        new = np.full(self.num_jobs, -1, np.int64)
        new[rows] = np.arange(len(rows))
        pj = new[self.pair_jobs] if self.num_pairs else self.pair_jobs
        keep = (pj >= 0).all(axis=1) if self.num_pairs else np.zeros(0, bool)
        return self.replace(job_ids=tuple(self.job_ids[i] for i in rows), scale=self.scale[rows],
                            throughput=self.throughput[rows], weight=self.weight[rows],
                            deficit=self.deficit[rows], priority=self.priority[rows], pair_jobs=pj[keep],
                            pair_gpu=self.pair_gpu[keep],
                            pair_throughput=self.pair_throughput[keep],
                            shortfall_price=self.shortfall_price[rows],
                            running=None if self.running is None else self.running.take(rows))

    # ------------------------------------------------------------------ documents (fairshare.documents)
    @classmethod
    def from_json(cls, text: str | bytes) -> RoundProblem:
        """Parse and validate a round document given as JSON text (spec section 6).

        The text is read by :func:`fairshare.documents.read_json` (UTF-8, size and nesting limits).
        """
        from fairshare.documents import round_problem_from_json

        return round_problem_from_json(text)

    @classmethod
    def from_dict(cls, doc: Any) -> RoundProblem:
        """Validate a round document (already parsed) and build the problem.

        Numbers may be Python or numpy ints and floats.

        Raises
        ------
        InvalidInputError
            For every invalid input listed in spec section 6, naming the field and the value.
        """
        from fairshare.documents import round_problem_from_dict

        return round_problem_from_dict(doc)

    def to_dict(self) -> dict[str, Any]:
        """The round document of this problem (spec section 6); ``from_dict(p.to_dict())`` round-trips."""
        from fairshare.documents import round_problem_to_dict

        return round_problem_to_dict(self)

    def to_json(self, **kwargs: Any) -> str:
        """JSON text of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), **kwargs)


def _job_field(name: str) -> Callable[[tuple[int, ...]], str]:
    """Field namer for :func:`check_array` on a per-job array: ``jobs[3].weight``."""
    return lambda i: f"jobs[{i[0]}].{name}"


def _checked_price(price: np.ndarray | None, n: int) -> np.ndarray:
    """The per-job shortfall prices (default 1), checked: finite, > 0 and at most :data:`MAX_VALUE`."""
    f = np.ones(n) if price is None else np.asarray(price, dtype=np.float64)
    check_shape(f, (n,), "shortfall_price")
    check_array(f, f > 0, _job_field("shortfall_price"), "must be finite and > 0")
    check_array(f, f <= MAX_VALUE, _job_field("shortfall_price"), _TOO_LARGE)
    return readonly(f)


def _as_float(values: np.ndarray) -> np.ndarray:
    """``values`` as float64; entries that are not numbers (bools included) become NaN (rejected by checks)."""
    if values.dtype.kind in "iuf":
        return values.astype(np.float64)
    return np.array([float(v) if is_number(v) else np.nan for v in values.reshape(-1).tolist()],
                    dtype=np.float64).reshape(values.shape)


def _first(bad: npt.ArrayLike) -> int | None:
    """Index of the first true entry of a 1-d mask, or None."""
    bad = np.asarray(bad)
    return int(np.argmax(bad)) if bad.any() else None
