"""The result of one round: :class:`Allocation` and the parts it is made of.

:class:`Status`, :class:`Placement` and :class:`SharedGpu` say what to run; :class:`RoundValues`,
:class:`SolveReport` and :class:`JobResults` group the numbers.

The JSON form is the round output of spec section 6 (``to_dict``/``from_dict`` round-trip).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from fairshare._compat import StrEnum
from fairshare._validate import clip
from fairshare.cluster import Binding
from fairshare.errors import InvalidInputError
from fairshare.packing import pack_shares

if TYPE_CHECKING:  # pragma: no cover
    from fairshare.formulation import RoundModel


__all__ = ["SHARE_TOLERANCE", "Allocation", "JobResults", "Placement", "RoundValues", "SharedGpu", "SolveReport",
           "Status", "clean_shares"]

SHARE_TOLERANCE = 1e-9
"""Column values at or below this are not placements (solver noise); see :func:`clean_shares`."""

_REQUIRED_KEYS = ("status", "objective", "efficiency", "utilization", "shortfall", "placements", "jobs")


class Status(StrEnum):
    """How a round was solved.

    ``OPTIMAL``: HiGHS proved optimality (``exact`` within the MIP gap, ``lp`` exactly).
    ``TIME_LIMIT``: ``exact`` reached its time limit; the placement is the best known then, HiGHS's incumbent
    or fast's placement (see ``mip_gap`` and ``message``).
    ``NO_SOLUTION``: ``exact`` on the pyomo backend stopped with no incumbent; ``placements`` is empty and
    nothing should run. (On the default backend a time-limited ``exact`` always has fast's placement.)
    ``HEURISTIC``: ``fast``: a feasible integer placement, optimality not claimed (see ``mip_gap``, the
    certified gap to the LP bound).
    """

    OPTIMAL = "optimal"
    TIME_LIMIT = "time_limit"
    NO_SOLUTION = "no_solution"
    HEURISTIC = "heuristic"


@dataclass(frozen=True, slots=True)
class Placement:
    """Jobs that run together on ``gpus`` GPUs of type ``gpu`` for ``share`` of the round.

    ``gpus`` is an int for a gang (or a co-located pair) of whole GPUs; for a job that asks for part of one GPU
    it is the fraction it asked for (``0 < gpus < 1``), and :attr:`Allocation.shared_gpus` says which GPU it
    shares with which jobs.
    """

    jobs: tuple[str, ...]
    gpu: str
    gpus: int | float
    share: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        """The placement's entry of the round output document."""
        return {"jobs": list(self.jobs), "gpu": self.gpu, "gpus": self.gpus, "share": self.share}


@dataclass(frozen=True, slots=True)
class SharedGpu:
    """One GPU that hosts jobs which asked for part of a GPU (spec section 8), as packed by the round.

    Attributes
    ----------
    gpu : str
        The GPU type.
    index : int
        The GPU's number among the GPUs of its type that host fractional jobs (0, 1, ...); gangs of whole
        GPUs use the type's other GPUs. A node-level binding maps it to a real GPU.
    jobs : tuple of str
        The jobs sharing it, largest share class first.
    shares : tuple of float
        Each job's request as given (its share of the GPU); their sum is at most 1, and so is the sum of their
        share classes (what the capacity row counted).
    """

    gpu: str
    index: int
    jobs: tuple[str, ...]
    shares: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        """The entry of ``shared_gpus`` in the round output document."""
        return {"gpu": self.gpu, "index": self.index, "jobs": list(self.jobs), "shares": list(self.shares)}


@dataclass(frozen=True, slots=True, eq=False)
class RoundValues:
    """What a round's placement is worth (spec section 3), computed from the placement alone.

    Every solve mode and policy reports these in the same units: they are
    :meth:`~fairshare.formulation.RoundModel.evaluate` of the placement, whatever found it.

    Attributes
    ----------
    objective : float
        ``E_pi - lambda * S_f``, the value the round optimises; nan when the status is ``no_solution``.
    efficiency : float
        ``E = sum_j s_j tau_j / Tmax_j``, best-GPU equivalents of work (plain: comparable across priorities).
    utilization : float
        ``E / C``.
    shortfall : float
        Weighted total shortfall ``S = sum_j w_j sigma_j`` (plain: comparable across shortfall prices).
    obj_null : float
        Objective of the empty placement (nan when unknown).
    prioritized_efficiency : float
        ``E_pi = sum_j pi_j s_j tau_j / Tmax_j``, the efficiency the round optimised (``efficiency`` when every
        priority is 1; nan when unknown).
    priced_shortfall : float
        ``S_f = sum_j w_j f_j sigma_j`` with the shortfall prices ``f_j`` (spec section 10), so that
        ``objective = prioritized_efficiency - fairness_weight * priced_shortfall``; ``shortfall`` when every
        price is 1 (nan when unknown).
    rounding_loss : array (G,) or None
        Rounds with fractional requests: per GPU type, the capacity given away by rounding requests up to
        their share class, ``sum (class_j - s_j)`` over the placed fractional jobs (weighted by the time share
        in ``lp`` mode). ``None`` for an all-integer round.
    """

    objective: float
    efficiency: float
    utilization: float
    shortfall: float
    obj_null: float
    prioritized_efficiency: float = float("nan")
    priced_shortfall: float = float("nan")
    rounding_loss: np.ndarray | None = None

    @property
    def value_gain(self) -> float:
        """``objective - obj_null``: the improvement over running nothing."""
        return self.objective - self.obj_null


@dataclass(frozen=True, slots=True)
class SolveReport:
    """How a round's placement was found: by which mode or policy, how well proven, in how much time.

    Attributes
    ----------
    mode : str or None
        The solve mode, ``exact``, ``lp`` or ``fast``; ``None`` for a policy that does not use one.
    policy : str or None
        The policy that produced the allocation (``None`` for a plain :func:`~fairshare.allocate` call).
    mip_gap : float or None
        ``exact``: HiGHS's relative gap, measured on the achievable improvement ``objective - obj_null``
        (an upper bound on the value loss). ``fast``: the same quantity certified by the LP bound.
        ``lp``: 0. ``None`` for an empty round.
    bound : float or None
        Proven upper bound on the section 3 MILP objective (``exact``/``fast``), or the LP optimum (``lp``).
    relaxation : str or None
        ``lp`` mode: which relaxation was solved (``"section3"`` or ``"tightened"``).
    build_seconds, solve_seconds : float
        Model building (validation excluded) and solving (including rounding and polish) wall times.
    message : str
        The solver's own status text.
    """

    mode: str | None
    policy: str | None = None
    mip_gap: float | None = None
    bound: float | None = None
    relaxation: str | None = None
    build_seconds: float = 0.0
    solve_seconds: float = 0.0
    message: str = ""


@dataclass(frozen=True, slots=True, eq=False)
class JobResults:
    """Per-job results of a round: arrays (N,) in the order of :attr:`Allocation.job_ids`.

    Attributes
    ----------
    fair_throughput : array (N,)
        ``Tfair_j``, the throughput of the job's fair share (the unit of progress).
    throughput : array (N,)
        ``tau_j``, what the placement gives the job.
    progress : array (N,)
        ``rho_j = tau_j / Tfair_j``.
    job_shortfall : array (N,)
        ``sigma_j = max(0, need_j - rho_j)``.
    next_deficit : array (N,)
        The deficit the job carries into the next round if the round runs as planned.
    job_gpu : int array (N,)
        Integer modes: the type index the job runs on, -1 if not placed (``lp``: the type of its largest
        share).
    job_partner : int array (N,)
        Integer modes: the row of the job it shares GPUs with, -1 if alone or not placed.
    rounded_share : array (N,) or None
        Rounds with fractional requests: the job's share class (the capacity it counts), nan for gangs of
        whole GPUs. ``None`` for an all-integer round.
    moved : bool array (N,) or None
        Rounds with running jobs (spec section 11): the running jobs the placement moves to another type or
        partner (each pays its restart). ``None`` when no job of the round runs.
    """

    fair_throughput: np.ndarray
    throughput: np.ndarray
    progress: np.ndarray
    job_shortfall: np.ndarray
    next_deficit: np.ndarray
    job_gpu: np.ndarray
    job_partner: np.ndarray
    rounded_share: np.ndarray | None = None
    moved: np.ndarray | None = None

    @property
    def placed(self) -> np.ndarray:
        """Boolean (N,): the job runs (integer modes) or gets some share (``lp``)."""
        return self.throughput > 0


@dataclass(frozen=True, slots=True, eq=False)
class Allocation:
    """The answer for one round (spec section 3 "Report with every solution" and section 6).

    At the top is what a scheduler acts on: whether to run the plan (``status``), what to start
    (``placements``, ``shared_gpus``, and ``binding`` when the round names its nodes) and the names that index
    every array (``job_ids``, ``gpu_types``). The rest is in three groups. ``values`` is what the placement is
    worth; it depends on the placement alone (the same placement has the same values whichever mode or policy
    found it), which is why it is apart from ``report``, how the placement was found (mode, gap, bound, times).
    ``jobs`` holds the per-job arrays. :meth:`to_dict` writes one flat document (spec section 6).

    Attributes
    ----------
    status : Status
    job_ids : tuple of str
        The round's jobs; the rows of every per-job array.
    gpu_types : tuple of str
        The round's GPU types; the indices of :attr:`JobResults.job_gpu` and :attr:`RoundValues.rounding_loss`.
    placements : tuple of Placement
    values : RoundValues
        Objective, efficiency, utilisation, shortfall and the rest of the round's numbers.
    report : SolveReport
        Mode, policy, gap, bound, times and the solver's message.
    jobs : JobResults
        Per job: fair throughput, throughput, progress, shortfall, next deficit, type and partner.
    shared_gpus : tuple of SharedGpu
        Rounds with jobs that ask for part of one GPU, integer placements: for every GPU that hosts such jobs,
        which jobs share it (the packing of :func:`fairshare.packing.pack_shares`, per type). Empty otherwise
        (and always in ``lp`` mode, whose shares are time fractions).
    binding : Binding or None
        Rounds that name their nodes: every placement bound to node ids and GPU indices, with the counts of
        split gangs and moved jobs (:func:`fairshare.binding.bind`). ``None`` without nodes and in ``lp`` mode.
    """

    status: Status
    job_ids: tuple[str, ...]
    gpu_types: tuple[str, ...]
    placements: tuple[Placement, ...]
    values: RoundValues
    report: SolveReport
    jobs: JobResults
    shared_gpus: tuple[SharedGpu, ...] = ()
    binding: Binding | None = None

    @classmethod
    def from_columns(cls, model: RoundModel, x: np.ndarray | None, *, status: Status, mode: str | None,
                     policy: str | None = None, mip_gap: float | None = None, bound: float | None = None,
                     relaxation: str | None = None, build_seconds: float = 0.0, solve_seconds: float = 0.0,
                     message: str = "") -> Allocation:
        """The allocation given by column values ``x`` of ``model`` (``None``: no solution, nothing placed).

        ``x`` is cleaned once, by :func:`clean_shares` (solver noise such as ``-1e-12`` or ``1 + 1e-10``
        clipped, shares of at most :data:`SHARE_TOLERANCE` dropped); the placements and every number (E, E/C,
        shortfall, per-job throughput, progress, next deficit) come from that one cleaned ``x``, the numbers
        by :meth:`~fairshare.formulation.RoundModel.evaluate`, so every solve mode and every policy reports
        them in the same units and no job has progress without a placement. Integer modes
        (``mode != "lp"``) report placements with share 1.
        """
        p, c = model.problem, model.columns
        xv = clean_shares(np.zeros(c.num) if x is None else x)
        ev = model.evaluate(xv)
        on = np.flatnonzero(xv)
        integral = mode != "lp"
        ja, jb, g, size = c.job_a[on].tolist(), c.job_b[on].tolist(), c.gpu[on].tolist(), c.size[on].tolist()
        shares = [1.0] * len(on) if integral else xv[on].tolist()
        ids, names = p.job_ids, p.gpu_types
        if p.has_fractional:  # a placement's GPUs are the request as given, not the rounded share
            size = [s if s < 1 else int(s) for s in p.scale[c.job_a[on]].tolist()]
        placements = tuple(
            Placement((ids[a],) if b < 0 else (ids[a], ids[b]), names[gg], ss if ss < 1 else int(ss), float(sh))
            for a, b, gg, ss, sh in zip(ja, jb, g, size, shares))
        job_gpu, partner = _job_arrays(p.num_jobs, [((a,) if b < 0 else (a, b), gg, float(sh))
                                                    for a, b, gg, sh in zip(ja, jb, g, xv[on].tolist())],
                                       integral)
        if mode == "exact" and mip_gap is None:
            mip_gap = 0.0
        shared, loss, rounded = _fractional_report(model, xv, integral)
        return cls(
            status=status, job_ids=ids, gpu_types=names, placements=placements,
            values=RoundValues(
                objective=float("nan") if x is None else ev.objective, efficiency=ev.efficiency,
                utilization=ev.efficiency / p.total_gpus, shortfall=ev.shortfall, obj_null=model.obj_null,
                prioritized_efficiency=ev.prioritized_efficiency, priced_shortfall=ev.priced_shortfall,
                rounding_loss=loss),
            report=SolveReport(mode=mode, policy=policy, mip_gap=mip_gap, bound=bound, relaxation=relaxation,
                               build_seconds=build_seconds, solve_seconds=solve_seconds, message=message),
            jobs=JobResults(
                fair_throughput=np.asarray(model.fair.fair_throughput), throughput=ev.throughput,
                progress=ev.progress, job_shortfall=ev.job_shortfall, next_deficit=ev.next_deficit, job_gpu=job_gpu,
                job_partner=partner, rounded_share=rounded,
                moved=None if p.running is None else p.running.moved(job_gpu, partner)),
            shared_gpus=shared)

    def to_dict(self) -> dict[str, Any]:
        """The round output document of spec section 6: flat, the groups' numbers at the top and per job."""
        v, r, jr = self.values, self.report, self.jobs
        jobs = {
            jid: {"fair_throughput": float(jr.fair_throughput[i]), "throughput": float(jr.throughput[i]),
                  "progress": float(jr.progress[i]), "shortfall": float(jr.job_shortfall[i]),
                  "next_deficit": float(jr.next_deficit[i])}
            for i, jid in enumerate(self.job_ids)
        }
        out: dict[str, Any] = {
            "status": str(self.status), "mode": r.mode, "objective": _num(v.objective),
            "efficiency": v.efficiency, "prioritized_efficiency": _num(v.prioritized_efficiency),
            "utilization": v.utilization, "shortfall": v.shortfall,
            "priced_shortfall": _num(v.priced_shortfall), "mip_gap": _num(r.mip_gap),
            "bound": _num(r.bound), "obj_null": v.obj_null,
        }
        if r.policy is not None:
            out["policy"] = r.policy
        if jr.rounded_share is not None:  # rounds with fractional requests only
            for i, jid in enumerate(self.job_ids):
                if np.isfinite(jr.rounded_share[i]):
                    jobs[jid]["rounded_share"] = float(jr.rounded_share[i])
        if r.relaxation is not None:
            out["relaxation"] = r.relaxation
        out.update({"build_seconds": r.build_seconds, "solve_seconds": r.solve_seconds,
                    "message": r.message, "gpu_types": list(self.gpu_types),
                    "placements": [p.to_dict() for p in self.placements], "jobs": jobs})
        if v.rounding_loss is not None:  # rounds with fractional requests only (all-integer output unchanged)
            out["shared_gpus"] = [s.to_dict() for s in self.shared_gpus]
            out["rounding_loss"] = {"total": float(v.rounding_loss.sum()),
                                    "by_type": dict(zip(self.gpu_types, v.rounding_loss.tolist()))}
        if self.binding is not None:  # rounds that name their nodes only
            out["binding"] = self.binding.to_dict()
        if jr.moved is not None:  # rounds with running jobs only
            out["moved"] = [jid for jid, m in zip(self.job_ids, jr.moved.tolist()) if m]
        return out

    def to_json(self, **kwargs: Any) -> str:
        """:meth:`to_dict` as strict JSON text (indented by 2 unless ``indent`` is given).

        Never writes ``NaN`` or ``Infinity`` (unknown numbers are ``null``); a non-finite number elsewhere is a
        bug and raises ``ValueError`` instead of producing text other programs cannot read.
        """
        kwargs.setdefault("indent", 2)
        kwargs.setdefault("allow_nan", False)
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Allocation:
        """Rebuild an allocation from :meth:`to_dict` output (for records and the stateful engine).

        Raises
        ------
        InvalidInputError
            If ``doc`` is not such a document: the error names the missing or malformed key.

        Examples
        --------
        >>> Allocation.from_dict({})
        Traceback (most recent call last):
        ...
        fairshare.errors.InvalidInputError: `allocation.status` = None: missing
        """
        if not isinstance(doc, Mapping):
            raise InvalidInputError("allocation", clip(doc), "must be an allocation document (a JSON object)")
        for key in _REQUIRED_KEYS:
            if key not in doc:
                raise InvalidInputError(f"allocation.{key}", None, "missing")
        try:
            return cls._from_dict(doc)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            if isinstance(exc, InvalidInputError):
                raise
            raise InvalidInputError("allocation", clip(doc), f"malformed allocation document "
                                    f"({type(exc).__name__}: {clip(str(exc), 120)})") from None

    @classmethod
    def _from_dict(cls, doc: Mapping[str, Any]) -> Allocation:
        if doc["status"] not in tuple(Status):
            raise InvalidInputError("allocation.status", clip(doc["status"]),
                                    f"must be one of {', '.join(Status)}")
        if not isinstance(doc["jobs"], Mapping):
            raise InvalidInputError("allocation.jobs", clip(doc["jobs"]), "must be an object of job id -> results")
        if not isinstance(doc["placements"], list):
            raise InvalidInputError("allocation.placements", clip(doc["placements"]), "must be a list")
        ids = tuple(doc["jobs"])
        gpu_types = tuple(doc.get("gpu_types", sorted({p["gpu"] for p in doc["placements"]})))
        gidx = {g: i for i, g in enumerate(gpu_types)}
        jidx = {j: i for i, j in enumerate(ids)}
        col = {k: np.array([doc["jobs"][j][k] for j in ids], dtype=np.float64)
               for k in ("fair_throughput", "throughput", "progress", "shortfall", "next_deficit")}
        members = [(tuple(jidx[j] for j in p["jobs"]), gidx[p["gpu"]], float(p["share"]))
                   for p in doc["placements"]]
        job_gpu, partner = _job_arrays(len(ids), members, None)
        shared, loss, rounded = _fractional_from_dict(doc, ids, gpu_types)
        return cls(
            status=Status(doc["status"]), job_ids=ids, gpu_types=gpu_types,
            placements=tuple(Placement(tuple(p["jobs"]), p["gpu"], _gpus(p["gpus"]), float(p["share"]))
                             for p in doc["placements"]),
            values=RoundValues(
                objective=_float(doc["objective"]), efficiency=doc["efficiency"], utilization=doc["utilization"],
                shortfall=doc["shortfall"], obj_null=doc.get("obj_null", float("nan")),
                prioritized_efficiency=_float(doc.get("prioritized_efficiency")),
                priced_shortfall=_float(doc.get("priced_shortfall")), rounding_loss=loss),
            report=SolveReport(
                mode=doc.get("mode"), policy=doc.get("policy"), mip_gap=doc.get("mip_gap"), bound=doc.get("bound"),
                relaxation=doc.get("relaxation"), build_seconds=doc.get("build_seconds", 0.0),
                solve_seconds=doc.get("solve_seconds", 0.0), message=doc.get("message", "")),
            jobs=JobResults(
                fair_throughput=col["fair_throughput"], throughput=col["throughput"], progress=col["progress"],
                job_shortfall=col["shortfall"], next_deficit=col["next_deficit"], job_gpu=job_gpu,
                job_partner=partner, rounded_share=rounded,
                moved=None if doc.get("moved") is None else np.array([j in set(doc["moved"]) for j in ids], bool)),
            shared_gpus=shared,
            binding=Binding.from_dict(doc["binding"], "allocation.binding") if "binding" in doc else None)


def clean_shares(x: np.ndarray | Sequence[float]) -> np.ndarray:
    """Column values as reported: clipped to [0, 1], shares of at most :data:`SHARE_TOLERANCE` set to 0.

    Solvers return values such as ``-1e-12`` or ``1 + 1e-10`` for 0 and 1 (HiGHS's tolerances); NaN becomes 0.

    Examples
    --------
    >>> clean_shares([-1e-9, 5e-10, 0.25, 1.0000001, float("nan")]).tolist()
    [0.0, 0.0, 0.25, 1.0, 0.0]
    """
    xv = np.asarray(x, dtype=np.float64)
    return np.where(xv > SHARE_TOLERANCE, np.minimum(xv, 1.0), 0.0)


def _job_arrays(n: int, members: list[tuple[tuple[int, ...], int, float]],
                integral: bool | None) -> tuple[np.ndarray, np.ndarray]:
    """Per job: the type index of its largest share (-1: not placed) and its partner's row (-1: none).

    ``members`` lists ``(job rows, type index, share)`` per placement. Partners are recorded for integer
    placements (``integral``), or, when ``integral`` is None, for placements with share 1.
    """
    job_gpu = np.full(n, -1, np.int64)
    partner = np.full(n, -1, np.int64)
    best = np.zeros(n)
    for jobs, g, share in members:
        for j in jobs:
            if share > best[j]:
                best[j], job_gpu[j] = share, g
        if len(jobs) == 2 and (integral if integral is not None else share >= 1.0):
            partner[jobs[0]], partner[jobs[1]] = jobs[1], jobs[0]
    return job_gpu, partner


def _fractional_report(model: RoundModel, x: np.ndarray,
                       integral: bool) -> tuple[tuple[SharedGpu, ...], np.ndarray | None, np.ndarray | None]:
    """``(shared_gpus, rounding_loss, rounded_share)`` of column values ``x``; ``((), None, None)`` if all-integer."""
    p, c = model.problem, model.columns
    if not p.has_fractional:
        return (), None, None
    frac = p.fractional
    rounded = np.where(frac, p.capacity_scale, np.nan)
    alone = np.arange(c.num) < c.num_alone
    cols = np.flatnonzero(alone & (x > 0) & frac[c.job_a])
    G = len(p.gpu_types)
    gave = (c.size[cols] - p.scale[c.job_a[cols]]) * x[cols]
    loss = np.bincount(c.gpu[cols], weights=gave, minlength=G) if cols.size else np.zeros(G)
    shared: list[SharedGpu] = []
    if integral and cols.size:
        whole = np.flatnonzero((x > 0) & ~(alone & frac[c.job_a]))
        busy = np.bincount(c.gpu[whole], weights=c.size[whole], minlength=G) if whole.size else np.zeros(G)
        for g in range(G):
            mine = cols[c.gpu[cols] == g]
            if not mine.size:
                continue
            order = mine[np.argsort(-c.size[mine], kind="stable")]  # largest share class first
            where = pack_shares(c.size[order], int(p.capacity[g] - round(busy[g])))
            for k in range(max(where) + 1):
                on = [int(col) for col, w in zip(order.tolist(), where) if w == k]
                shared.append(SharedGpu(p.gpu_types[g], k, tuple(p.job_ids[c.job_a[i]] for i in on),
                                        tuple(float(p.scale[c.job_a[i]]) for i in on)))
    for a in (loss, rounded):
        a.setflags(write=False)
    return tuple(shared), loss, rounded


def _fractional_from_dict(doc: Mapping[str, Any], ids: tuple[str, ...], gpu_types: tuple[str, ...]
                          ) -> tuple[tuple[SharedGpu, ...], np.ndarray | None, np.ndarray | None]:
    """``(shared_gpus, rounding_loss, rounded_share)`` of an allocation document (absent for all-integer rounds)."""
    if "rounding_loss" not in doc:
        return (), None, None
    by_type = doc["rounding_loss"]["by_type"]
    shared = tuple(SharedGpu(str(s["gpu"]), int(s["index"]), tuple(s["jobs"]), tuple(float(v) for v in s["shares"]))
                   for s in doc.get("shared_gpus", []))
    rounded = np.array([float(doc["jobs"][j].get("rounded_share", np.nan)) for j in ids])
    return shared, np.array([float(by_type.get(g, 0.0)) for g in gpu_types]), rounded


def _gpus(v: Any) -> int | float:
    """A placement's ``gpus`` from a document: an int for whole GPUs, the fraction for part of one GPU."""
    f = float(v)
    return f if 0 < f < 1 else int(v)


def _num(v: float | None) -> float | None:
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return None
    return float(v)


def _float(v: float | None) -> float:
    return float("nan") if v is None else float(v)
