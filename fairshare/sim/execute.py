"""Executing one round's plan on its active jobs: a pure function from plan and job state to a :class:`RoundOutcome`.

Every placed job runs for the round length Δ at its planned (alone or co-located) throughput, less
``restart_overhead`` seconds when its placement (GPU type or partner) differs from the previous round's. A job
whose work runs out inside the round finishes at that exact time; its GPUs are idle for the rest of the round.
Deficits are then updated with the progress actually delivered, ``rho_j = (work done in the round / Δ) /
Tfair_j`` (unless ``carry_deficits`` is off).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from fairshare.errors import PolicyError
from fairshare.fair_share import next_deficit
from fairshare.sim.config import SimConfig

__all__ = ["RoundOutcome", "partial_deficit"]


class _Plan(Protocol):
    """What the executor reads from a policy's answer (its :class:`~fairshare.allocation.JobResults`)."""

    @property
    def throughput(self) -> np.ndarray: ...  # noqa: D102

    @property
    def fair_throughput(self) -> np.ndarray: ...  # noqa: D102

    @property
    def job_gpu(self) -> np.ndarray: ...  # noqa: D102

    @property
    def job_partner(self) -> np.ndarray: ...  # noqa: D102


@dataclass(frozen=True, slots=True)
class _JobState:
    """The active jobs of one round as the executor sees them: arrays over those jobs, in trace order.

    ``index`` holds their trace positions, ``work`` and ``done`` their total and finished iterations,
    ``prev_key`` the (GPU type, partner trace position) of their previous round's placement (-1 for "not
    placed" or "alone", -2 before the first round), ``deficit`` the deficits they carry into the round.
    """

    start: float
    index: np.ndarray
    scale: np.ndarray
    work: np.ndarray
    done: np.ndarray
    prev_key: np.ndarray
    deficit: np.ndarray
    # seconds this plan runs: a round (None), or with re-planning at events the part of it until the next event
    length: float | None = None
    # seconds of a restart still to pay by a job that keeps its placement (a plan cut short); None: none
    restart_left: np.ndarray | None = None

    def plan_length(self, cfg: SimConfig) -> float:
        """Seconds the plan runs: :attr:`length`, or a whole round of ``cfg``."""
        return cfg.round_length if self.length is None else self.length


@dataclass(frozen=True, slots=True)
class RoundOutcome:
    """What executing one round's plan did to its active jobs (arrays over those jobs, in trace order).

    Attributes
    ----------
    placed : bool array (n,)
        The job ran in the round (a GPU type and a positive throughput).
    finished : bool array (n,)
        Its work ran out inside the round.
    end : array (n,)
        When it stopped: its finish time if ``finished``, else the end of the round (s).
    done : array (n,)
        Iterations done in the round.
    run_seconds : array (n,)
        Seconds it computed (the restart overhead excluded).
    key : int array (n, 2)
        (GPU type, partner trace position) of its placement; -1 for "not placed" or "alone".
    begin : array (n,)
        When it was given its GPUs in the round (the round's start, or a start between boundaries; before the
        restart overhead), s; ``nan`` if not placed.
    life : array (n,)
        Seconds it was in the system during the round (up to its finish).
    fair_throughput : array (n,)
        ``Tfair_j`` of the round (iterations/s).
    deficit : array (n,)
        Deficit carried into the next round.
    busy_gpu_seconds : float
        GPU-seconds during which a GPU held a placed job: a placement holds its GPUs until its last member
        stops (a job that finishes early frees them unless its partner still runs).
    """

    placed: np.ndarray
    finished: np.ndarray
    end: np.ndarray
    done: np.ndarray
    run_seconds: np.ndarray
    key: np.ndarray
    begin: np.ndarray
    life: np.ndarray
    fair_throughput: np.ndarray
    deficit: np.ndarray
    busy_gpu_seconds: float
    restart_left: np.ndarray


def partial_deficit(deficit: np.ndarray, epsilon: float, done: np.ndarray, fair_throughput: np.ndarray,
                    length: float, round_length: float) -> np.ndarray:
    """Deficits after ``length`` seconds of a round of ``round_length`` in which jobs did ``done`` iterations.

    ``(L / R) * max(0, D R / L + (1 - epsilon) - rho)`` with ``rho = (done / L) / Tfair`` (spec round-problem.md
    section 4 for the part of a round that ran); for a whole round (``L == R``) exactly section 4's update.
    """
    if length == round_length:
        return next_deficit(deficit, epsilon, (done / length) / fair_throughput)
    part = length / round_length
    return part * next_deficit(deficit / part, epsilon, (done / length) / fair_throughput)


def _execute_round(plan: _Plan, jobs: _JobState, cfg: SimConfig, moved: np.ndarray | None = None) -> RoundOutcome:
    """Run ``plan`` for one round on ``jobs`` (steps 4 and 5 of the module documentation); pure.

    ``moved`` (bool, per job; cluster given as nodes): the job kept its type and partner but its GPUs changed,
    which costs ``restart_overhead`` like a change of placement. The plan runs ``jobs.length`` seconds; a job
    that keeps its placement first pays what is left of a restart cut short by the previous plan's end.
    """
    length = jobs.plan_length(cfg)
    tau = np.asarray(plan.throughput, dtype=np.float64)
    gpu = np.asarray(plan.job_gpu, dtype=np.int64)
    partner = np.asarray(plan.job_partner, dtype=np.int64)
    placed = (gpu >= 0) & (tau > 0)
    partner_trace = np.where(partner >= 0, jobs.index[np.maximum(partner, 0)], -1)
    key = np.column_stack([np.where(placed, gpu, -1), np.where(placed, partner_trace, -1)])
    changed = placed & (key != jobs.prev_key).any(axis=1)
    if moved is not None:
        changed |= placed & moved
    left = 0.0 if jobs.restart_left is None else np.where(placed, jobs.restart_left, 0.0)
    overhead = np.where(changed, cfg.restart_overhead, left)
    remaining = jobs.work - jobs.done
    with np.errstate(divide="ignore", invalid="ignore"):
        need_time = np.where(placed, remaining / np.where(tau > 0, tau, 1.0), np.inf)
    run_time = np.where(placed, np.maximum(0.0, length - overhead), 0.0)
    # a job whose work runs out within floating-point noise of the round's end finishes with the round
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        slack = 1e-9 * np.where(tau > 0, jobs.work / np.where(tau > 0, tau, 1.0), 0.0)
    finished = placed & (need_time <= run_time * (1.0 + 1e-12) + slack)
    need_time = np.where(finished, np.minimum(need_time, run_time), need_time)
    used = np.where(finished, need_time, run_time)
    done = np.where(finished, remaining, tau * used)
    end = np.where(finished, jobs.start + overhead + need_time, jobs.start + length)
    busy = np.where(placed, np.minimum(overhead, length) + used, 0.0)  # seconds the job's GPUs were held
    fair = np.asarray(plan.fair_throughput, dtype=np.float64)
    deficit = (partial_deficit(jobs.deficit, cfg.epsilon, done, fair, length, cfg.round_length)
               if cfg.carry_deficits else jobs.deficit)
    return RoundOutcome(placed=placed, finished=finished, end=end, done=done, run_seconds=used, key=key,
                        begin=np.where(placed, jobs.start, np.nan),
                        life=np.where(finished, end - jobs.start, length), fair_throughput=fair, deficit=deficit,
                        busy_gpu_seconds=_busy_gpu_seconds(placed, partner, busy, jobs.scale),
                        restart_left=np.where(placed & ~finished, np.maximum(0.0, overhead - length), 0.0))


def _busy_gpu_seconds(placed: np.ndarray, partner: np.ndarray, busy: np.ndarray, scale: np.ndarray) -> float:
    """GPU-seconds held by the round's placements: ``scale x`` the longer hold of a pair, once per pair.

    A pair is counted at its first member in trace order that ran (the second is skipped only if the first
    ran); the sum runs in trace order, term by term, so it is reproducible to the last bit.
    """
    idx = np.arange(len(placed))
    paired = partner >= 0
    mate = np.where(paired, partner, idx)
    if (mate[mate] != idx).any():
        i = int(np.argmax(mate[mate] != idx))
        raise PolicyError(f"job_partner is not symmetric: job {i} is paired with {int(mate[i])}, "
                          f"which is paired with {int(mate[mate[i]])}")
    counted = placed & ~(paired & (mate < idx) & placed[mate])
    hold = np.maximum(busy, busy[mate])
    return sum((scale.astype(np.float64) * hold)[counted].tolist(), 0.0)
