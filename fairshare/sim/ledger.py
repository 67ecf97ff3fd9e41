"""The per-job arrays of a simulation run (:class:`_Ledger`) and the co-location candidates of its rounds."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fairshare._validate import readonly
from fairshare.errors import InvalidInputError
from fairshare.formulation import RoundModel
from fairshare.policies.base import RoundState
from fairshare.problem import RoundProblem
from fairshare.running import Running
from fairshare.sim.catalog import Catalog
from fairshare.sim.config import SimConfig
from fairshare.sim.execute import RoundOutcome, _JobState
from fairshare.sim.idle_starts import _LateStarts
from fairshare.sim.records import JobRecord
from fairshare.sim.traces import Trace

__all__: list[str] = []


@dataclass(frozen=True, slots=True)
class _Ledger:
    """Per-job arrays of a run, in trace order.

    The trace's columns are read-only; what each job has got so far is updated in place by :meth:`book`, once
    per round.
    """

    ids: tuple[str, ...]
    models: tuple[str, ...]
    tenant: tuple[str, ...]
    arrival: np.ndarray
    scale: np.ndarray
    work: np.ndarray
    weight: np.ndarray
    throughput: np.ndarray  # (N, G) alone iterations/s on each GPU type of the cluster
    done: np.ndarray
    finish: np.ndarray
    deficit: np.ndarray
    attained: np.ndarray  # GPU-seconds run (scale x seconds)
    received: np.ndarray  # (N, G) seconds run on each type
    fair_time: np.ndarray  # integral of Tfair_j over the job's active time
    active_time: np.ndarray
    prev_key: np.ndarray  # (N, 2), see _JobState
    first_start: np.ndarray  # when the job was first given GPUs, s (nan: not yet)
    censored: np.ndarray  # marked censored in the trace
    ideal: np.ndarray  # iterations / fastest alone throughput on the cluster, s
    metadata: tuple[dict[str, str], ...]
    id_array: np.ndarray  # ids as an object array, to take the active jobs' ids in one step
    restart_left: np.ndarray  # seconds of a restart a job still owes if it keeps its placement (see _JobState)
    # The rounds' problems name their jobs by ledger row in this key space (the warm start matches rounds by it)
    key_space: object = field(default_factory=object, compare=False, repr=False)

    @classmethod
    def of(cls, trace: Trace, cat: Catalog, gpus: dict[str, int]) -> _Ledger:
        """A fresh ledger; raises if a job can run on no GPU type of the cluster, saying why."""
        gpu_types = tuple(gpus)
        cap = np.array([gpus[g] for g in gpu_types], dtype=np.int64)
        ids, models = tuple(trace.id), tuple(trace.model)
        n = len(ids)
        scale = readonly(np.asarray(trace.scale, dtype=np.float64 if np.asarray(trace.scale).dtype.kind == "f"
                                    else np.int64))
        # A job holding part of one GPU runs at that share of its model's throughput on one whole GPU
        # (derived: time-slicing a GPU divides its throughput; the catalog has no per-share measurements).
        whole = np.maximum(np.ceil(scale), 1).astype(np.int64)
        tput = cat.throughput_matrix(models, whole, gpu_types) if n else np.zeros((0, len(gpu_types)))
        if scale.dtype.kind == "f":
            tput = tput * np.minimum(scale, 1.0)[:, None]
        runnable = (tput > 0) & (scale[:, None] <= cap[None, :])
        nowhere = np.flatnonzero(~runnable.any(axis=1))
        if nowhere.size:
            j = int(nowhere[0])
            raise InvalidInputError(f"trace[{j}]", f"{ids[j]} ({models[j]}, scale {scale[j]})",
                                    _why_nowhere(cat, models[j], int(whole[j]), gpus, tput[j]))
        fastest = np.where(runnable, tput, 0.0).max(axis=1) if n else np.zeros(0)
        work = readonly(np.asarray(trace.iterations, dtype=np.float64))
        return cls(ids, models, tuple(trace.tenant), readonly(np.asarray(trace.arrival, dtype=np.float64)), scale,
                   work, readonly(np.asarray(trace.weight, dtype=np.float64)), readonly(tput), np.zeros(n),
                   np.full(n, np.nan), np.zeros(n), np.zeros(n), np.zeros((n, len(gpu_types))), np.zeros(n),
                   np.zeros(n), np.full((n, 2), -2, np.int64), np.full(n, np.nan),
                   readonly(np.asarray(trace.censored, dtype=bool)),
                   readonly(work / np.where(fastest > 0, fastest, 1.0)), tuple(trace.metadata),
                   readonly(np.array(ids, dtype=object)), np.zeros(n))

    def watched(self, ids: tuple[str, ...] | None) -> np.ndarray | None:
        """Mask of the jobs named by ``stop_when_finished`` (None if it is None)."""
        if ids is None:
            return None
        index = {jid: i for i, jid in enumerate(self.ids)}
        mask = np.zeros(len(self.ids), dtype=bool)
        for jid in ids:
            if jid not in index:
                raise InvalidInputError("stop_when_finished", jid, "is not a job id of the trace")
            mask[index[jid]] = True
        return mask

    def jobs(self, act: np.ndarray, start: float, length: float) -> _JobState:
        """The executor's view of the active jobs ``act`` of the plan that runs ``length`` s from ``start``."""
        return _JobState(start, act, self.scale[act], self.work[act], self.done[act], self.prev_key[act],
                         self.deficit[act], length, self.restart_left[act])

    def admit(self, i: int, t: float, cfg: SimConfig) -> None:
        """Job ``i`` joins the plans at ``t``: a job that has waited since its arrival without a plan is owed it.

        A newcomer's deficit is ``(1 - epsilon) * (t - arrival) / round_length``: the fair progress of the time it
        waited for its first plan (spec round-problem.md section 4; a job that arrives to a full cluster is owed
        from its arrival). Jobs booked already (they started between rounds) keep what was booked.
        """
        if cfg.carry_deficits and cfg.wait_is_owed and self.active_time[i] == 0 and t > self.arrival[i]:
            self.deficit[i] = (1.0 - cfg.epsilon) * (t - float(self.arrival[i])) / cfg.round_length

    def problem(self, act: np.ndarray, gpus: dict[str, int], pairs: tuple[np.ndarray, np.ndarray, np.ndarray],
                cfg: SimConfig, length: float, running_jobs: bool = True) -> RoundProblem:
        """The round problem of the active jobs ``act`` for a plan of ``length`` seconds.

        Deficits are stated in units of the plan (``D R / length``, spec round-problem.md section 11). With a
        ``restart_overhead`` and ``running_jobs`` (a policy that plans with them), jobs that ran in the previous
        plan carry their placement and that cost
        (:class:`~fairshare.running.Running`), so that moving one must be worth its restart; a partner that left
        the round is no partner to stay with (any placement moves the job, as the executor charges it).
        """
        pj, pg, pt = pairs
        deficit = self.deficit[act] if length == cfg.round_length else self.deficit[act] * (cfg.round_length / length)
        running = None
        if running_jobs and cfg.restart_overhead > 0:
            key = self.prev_key[act]
            gpu = np.where(key[:, 0] >= 0, key[:, 0], -1)
            if (gpu >= 0).any():
                pos = np.searchsorted(act, np.maximum(key[:, 1], 0))
                pos = np.minimum(pos, len(act) - 1)
                partner = np.where(key[:, 1] < 0, -1, np.where(act[pos] == key[:, 1], pos, -2))
                partner = np.where(gpu >= 0, partner, -1)
                # a pair counts only if both ran in it (a member with no throughput there did not run): else the
                # job is beside a partner that is not running, and any placement moves it
                mate = np.maximum(partner, 0)
                mutual = (partner >= 0) & (partner[mate] == np.arange(len(act))) & (gpu[mate] == gpu)
                partner = np.where((partner >= 0) & ~mutual, -2, partner)
                running = Running(gpu, partner, np.full(len(act), cfg.restart_overhead), length)
        return RoundProblem.from_trusted_arrays(
            gpu_types=tuple(gpus), capacity=np.array(list(gpus.values()), dtype=np.int64),
            job_ids=tuple(self.id_array[act].tolist()), scale=self.scale[act], throughput=self.throughput[act],
            weight=self.weight[act], deficit=deficit, pair_jobs=pj, pair_gpu=pg, pair_throughput=pt,
            epsilon=cfg.epsilon, fairness_weight=cfg.fairness_weight, job_keys=(self.key_space, act),
            running=running)

    def round_state(self, model: RoundModel, act: np.ndarray, start: float, length: float) -> RoundState:
        """What the policy sees of a plan of ``length`` seconds from ``start``."""
        return RoundState(model=model, time=start, round_length=length,
                          arrival=self.arrival[act], attained_service=self.attained[act],
                          received=self.received[act], done_iterations=self.done[act],
                          remaining_iterations=self.work[act] - self.done[act])

    def book(self, act: np.ndarray, out: RoundOutcome) -> np.ndarray:
        """Add the round's outcome to the jobs ``act``; returns the trace positions of the jobs that finished."""
        self.fair_time[act] += out.fair_throughput * out.life
        self.active_time[act] += out.life
        self.done[act] += out.done
        self.attained[act] += self.scale[act] * out.run_seconds
        np.add.at(self.received, (act[out.placed], out.key[out.placed, 0]), out.run_seconds[out.placed])
        self.prev_key[act] = out.key
        self.deficit[act] = out.deficit
        self.restart_left[act] = out.restart_left
        new = out.placed & np.isnan(self.first_start[act])
        self.first_start[act[new]] = out.begin[new]
        gone = act[out.finished]
        self.finish[gone] = out.end[out.finished]
        return gone

    def book_late(self, late: _LateStarts, cfg: SimConfig) -> np.ndarray:
        """Add what jobs that arrived inside a round did before its end (``starts="idle"``).

        Their time in the system counts from arrival with the fair share they had then; a job that started keeps
        its type as its previous placement (alone), so the next round charges no new overhead if it stays there,
        only what is left of its restart when the round ended before the restart was over.
        Each is owed the fair progress of its time in the round that it did not get,
        ``max(0, (1 - epsilon) life / R - (done / R) / Tfair)`` (``carry_deficits``). Returns the jobs that
        finished.
        """
        i = late.index
        self.fair_time[i] += late.fair_throughput * late.life
        self.active_time[i] += late.life
        self.done[i] += late.done
        self.attained[i] += self.scale[i] * late.run_seconds
        ran = late.gpu >= 0
        np.add.at(self.received, (i[ran], late.gpu[ran]), late.run_seconds[ran])
        self.prev_key[i[ran]] = np.column_stack([late.gpu[ran], np.full(int(ran.sum()), -1, np.int64)])
        self.restart_left[i[ran]] = late.restart_left[ran]
        if cfg.carry_deficits and cfg.wait_is_owed:
            length = cfg.round_length
            self.deficit[i] = np.maximum(0.0, (1.0 - cfg.epsilon) * late.life / length
                                         - (late.done / length) / late.fair_throughput)
        self.first_start[i[ran]] = late.at[ran]                       # they arrived in this round: never started
        gone = i[late.finished]
        self.finish[gone] = late.stop[late.finished]
        return gone

    def records(self, now: float) -> tuple[JobRecord, ...]:
        """One record per job; an unfinished job's ``active_seconds`` run to ``now``."""
        def fair(i: int) -> float:
            return float(self.fair_time[i] / self.active_time[i]) if self.active_time[i] > 0 else float("nan")

        return tuple(
            JobRecord(id=self.ids[i], model=self.models[i], tenant=self.tenant[i], scale=_scale(self.scale[i]),
                      weight=float(self.weight[i]), arrival=float(self.arrival[i]), finish=float(self.finish[i]),
                      iterations=float(self.work[i]), done_iterations=float(self.done[i]), fair_throughput=fair(i),
                      active_seconds=float(max(0.0, (self.finish[i] if np.isfinite(self.finish[i]) else now)
                                               - self.arrival[i])),
                      censored=bool(self.censored[i]), ideal_seconds=float(self.ideal[i]),
                      metadata=dict(self.metadata[i]), first_start=float(self.first_start[i]))
            for i in range(len(self.ids)))

    def remaining_seconds(self, t: float, capacity: int) -> float:
        """A lower bound on the simulated time left after ``t``.

        No job finishes before its remaining work at its fastest throughput, nor before the cluster has done all
        remaining GPU-work at full speed; jobs still to arrive count from their arrival.
        """
        left = self.work - self.done
        open_ = np.isnan(self.finish)
        if not open_.any():
            return 0.0
        alone = np.where(open_, np.maximum(self.arrival, t) + left / np.maximum(self.work / self.ideal, 1e-300), t)
        gpu_work = float(np.sum((left * self.ideal / self.work * self.scale)[open_]))
        return max(float(alone.max()) - t, gpu_work / max(capacity, 1))


def _scale(s: float) -> int | float:
    """A job's scale as recorded: an int for whole GPUs, the fraction for part of one GPU."""
    return float(s) if s < 1 else int(s)


def _why_nowhere(cat: Catalog, model: str, scale: int, gpus: dict[str, int], row: np.ndarray) -> str:
    """Why a job can run on no GPU type of the cluster: its gang is too large, or there is no data for it."""
    biggest = max(gpus.values())
    if scale > biggest:
        return (f"gang larger than any GPU type of the cluster: it needs {scale} GPUs of one type, the largest type "
                f"has {biggest} ({gpus})")
    if cat.scale_index(scale) < 0:
        return (f"no throughput data for model {model!r} at scale {scale}: the catalog has data for scales "
                f"{', '.join(map(str, cat.scales))} only")
    have = [g for g in cat.gpu_types if cat.supports(model, scale, g)]
    if not (row > 0).any():
        where = f"it has data on {', '.join(have)}" if have else "it has data on no GPU type at that scale"
        return (f"no throughput data for model {model!r} at scale {scale} on the cluster's GPU types {list(gpus)} "
                f"({where}); an imported trace's models are chosen for its import's target types: import again "
                f"with --cluster set to this cluster (import_trace(gpu_types=...))")
    small = [g for g, t in zip(gpus, row, strict=True) if t > 0]
    return (f"gang larger than the GPU types with data for model {model!r} at scale {scale}: "
            + ", ".join(f"{g} has {gpus[g]}" for g in small))


class _PairCache:
    """Co-location candidates of the active jobs, reused until the active set changes (they depend on it only)."""

    def __init__(self, cat: Catalog, led: _Ledger, gpu_types: tuple[str, ...], cfg: SimConfig) -> None:
        self._cat, self._led, self._gpu_types, self._cfg = cat, led, gpu_types, cfg
        index = {name: k for k, name in enumerate(cat.models)}
        self._model = np.array([index[name] for name in led.models], dtype=np.int64)  # the ledger checked them
        self._key = b""
        self._pairs: tuple[np.ndarray, np.ndarray, np.ndarray] = self._none()

    @staticmethod
    def _none() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return np.zeros((0, 2), np.int64), np.zeros(0, np.int64), np.zeros((0, 2))

    def get(self, act: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(pair_jobs, pair_gpu, pair_throughput)`` among ``act`` (rows of ``act``)."""
        if not self._cfg.offers_pairs:
            return self._none()
        key = act.tobytes()
        if key != self._key:
            self._key = key
            scale = self._led.scale[act]
            rows = np.flatnonzero(scale >= 1)  # jobs holding part of one GPU are not pair candidates
            pj, pg, pt = self._cat.colocation_candidates(self._model[act[rows]],
                                                         scale[rows].astype(np.int64), self._gpu_types,
                                                         max_per_job=self._cfg.max_pairs_per_job)
            self._pairs = (rows[pj] if rows.size < len(act) else pj, pg, pt)
        return self._pairs
