"""Starts between round boundaries (``SimConfig.starts == "idle"``): waiting jobs on GPUs idle inside a round.

At every arrival and every finish inside a round, the waiting jobs (the round's jobs the plan did not place,
then the round's arrivals, in arrival order) start one by one, alone, on the type with the highest throughput
for them among those with enough idle GPUs, pay ``restart_overhead`` and run until their work runs out or the
round ends. The plan's placements are not changed.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from fairshare.fair_share import fair_share_of
from fairshare.sim.config import SimConfig
from fairshare.sim.execute import RoundOutcome, _JobState, _Plan, partial_deficit
from fairshare.sim.result import GpuHold

if TYPE_CHECKING:
    from fairshare.sim.ledger import _Ledger

__all__: list[str] = []


@dataclass(frozen=True, slots=True)
class _LateStarts:
    """Jobs that arrived inside a round (``starts="idle"``): arrays over them, in arrival order.

    ``gpu`` is the type a job started on (-1: it did not start), ``at`` when it started (``nan``: it did not),
    ``run_seconds`` the seconds it computed,
    ``done`` its iterations, ``finished``/``stop`` whether and when its work ran out, ``life`` its seconds in the
    system up to the round's end (or its finish), ``fair_throughput`` its fair share among the jobs present
    when it arrived and ``restart_left`` the seconds of its restart the round's end cut short.
    """

    index: np.ndarray
    gpu: np.ndarray
    at: np.ndarray
    run_seconds: np.ndarray
    done: np.ndarray
    finished: np.ndarray
    stop: np.ndarray
    life: np.ndarray
    fair_throughput: np.ndarray
    restart_left: np.ndarray


def _plan_holds(plan: _Plan, jobs: _JobState, out: RoundOutcome, size: np.ndarray,
                end: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(release time, type, GPUs, first member, second member)`` of each placement of the plan, in trace order.

    A placement holds its GPUs from the round's start until its last member stops (``end`` if it did not
    finish); a pair is listed once, at its first member. Members are trace positions; the second member of a
    job alone is -1.
    """
    placed = out.placed
    stop = np.where(out.finished, out.end, end)
    k = np.flatnonzero(placed)
    p = np.asarray(plan.job_partner, dtype=np.int64)[k]
    paired = p >= 0
    paired[paired] = placed[p[paired]]
    first = ~paired | (p > k)  # a pair once, at its first member
    k, p, paired = k[first], p[first], paired[first]
    q = np.where(paired, p, k)
    rk, rq = jobs.index[k], jobs.index[q]
    release = np.maximum(stop[k], stop[q])
    gpus = np.maximum(size[rk], size[rq]).astype(np.float64)
    return release, out.key[k, 0].astype(np.int64), gpus, rk, np.where(paired, rq, -1)


def _between_rounds(led: _Ledger, jobs: _JobState, plan: _Plan, out: RoundOutcome, cfg: SimConfig,
                    gpus: dict[str, int], size: np.ndarray, arriving: np.ndarray,
                    log: list[GpuHold] | None) -> tuple[RoundOutcome, _LateStarts | None]:
    """Start waiting jobs on idle GPUs inside the round ``[jobs.start, jobs.start + Δ)`` (``starts="idle"``).

    The plan's placements run as :func:`_execute_round` computed (``out``); their GPUs free up when the
    placement's last member finishes. At every time inside the round when a job arrives (``arriving``: trace
    positions in arrival order) or a job finishes, the waiting jobs (the round's jobs the plan did not place,
    then the arrivals, in order of arrival, ties in trace order) are tried in turn: a job starts at once, alone,
    on the type with the highest throughput for it among those with enough idle GPUs (``size``: its gang, or its
    share class), pays ``restart_overhead`` (it was not running) and runs at that throughput until its work runs
    out or the round ends. A job that does not fit does not hold back later ones. Capacity is counted per type.

    Returns the round's outcome with the round's own jobs that started in between added (placed, on their type
    alone; ``done``, ``run_seconds``, ``end``, ``life`` and the deficit update include that work, and the busy
    GPU-seconds include every start in between) and, with ``starts="idle"``, what happened to ``arriving``.
    With ``log``, every hold of GPUs in the round is appended to it (also with ``starts="round"``).
    """
    t0 = jobs.start
    end = t0 + jobs.plan_length(cfg)
    names = tuple(gpus)
    free = np.array(list(gpus.values()), dtype=np.float64)
    release, types, held, first, second = _plan_holds(plan, jobs, out, size, end)
    np.subtract.at(free, types, held)  # one placement after the other, as a loop would
    early = release < end
    releases = list(zip(release[early].tolist(), types[early].tolist(), held[early].tolist()))
    if log is not None:
        for stop, g, n, a, b in zip(release.tolist(), types.tolist(), held.tolist(), first.tolist(),
                                    second.tolist()):
            log.append(GpuHold((led.ids[a],) if b < 0 else (led.ids[a], led.ids[b]), names[g], n, t0, stop))
    if cfg.starts != "idle":
        return out, None
    rows = _Rows(np.concatenate([jobs.index, np.asarray(arriving, dtype=np.int64)]))
    started, fair_at = _start_waiting(led, jobs, out, cfg, gpus, size, arriving, free, releases, rows, log)
    return _merge(led, jobs, out, cfg, arriving, started, fair_at, rows)


@dataclass(frozen=True, slots=True)
class _Start:
    """A job started between round boundaries.

    Its GPU type, when it started, the seconds it computed, its iterations, whether its work ran out, when
    it stopped (its finish, or the round's end) and the seconds of its restart that the round's end cut short
    (owed in the next plan if it stays put).
    """

    gpu: int
    at: float
    run_seconds: float
    done: float
    finished: bool
    stop: float
    restart_left: float


class _Rows:
    """Row of each job present in a round: the round's jobs (rows ``0..n-1``), then its arrivals.

    The lookup table is built on first use (a start), as most rounds start nothing.
    """

    __slots__ = ("_of", "ids")

    def __init__(self, ids: np.ndarray) -> None:
        self.ids = ids
        self._of: dict[int, int] = {}

    def __getitem__(self, i: int) -> int:
        if not self._of:
            self._of.update(zip(self.ids.tolist(), range(len(self.ids))))
        return self._of[i]


def _start_waiting(led: _Ledger, jobs: _JobState, out: RoundOutcome, cfg: SimConfig, gpus: dict[str, int],
                   size: np.ndarray, arriving: np.ndarray, free: np.ndarray, releases: list[tuple[float, int, float]],
                   rows: _Rows, log: list[GpuHold] | None) -> tuple[dict[int, _Start], dict[int, float]]:
    """The event loop of :func:`_between_rounds`: every start inside the round, and each arrival's fair share.

    The starts are in order of start; an arrival's fair share is among the jobs present when it arrived.

    ``free`` (idle GPUs per type after the plan's placements) and ``releases`` (a heap of ``(time, type, GPUs)``
    of placements that end inside the round) are updated in place.
    """
    end = jobs.start + jobs.plan_length(cfg)
    heapq.heapify(releases)
    n_act = len(jobs.index)
    w0 = jobs.index[~out.placed]  # in trace order
    waiting = w0[np.argsort(led.arrival[w0], kind="stable")].tolist()  # by arrival, ties in trace order
    # the round's jobs, then the arrivals: when each leaves (inf: not before the round ends)
    gone_at = np.concatenate([np.where(out.finished, out.end, math.inf), np.full(len(arriving), math.inf)])
    capacity = np.array(list(gpus.values()), dtype=np.int64)
    started: dict[int, _Start] = {}
    fair_at: dict[int, float] = {}
    n_in, nxt = len(arriving), 0
    least: np.ndarray | None = None  # per type: the fewest idle GPUs a waiting job can start on (None: stale)
    w = np.zeros(0, dtype=np.int64)
    while True:
        now = min(releases[0][0] if releases else math.inf,
                  float(led.arrival[arriving[nxt]]) if nxt < n_in else math.inf)
        if now >= end:
            break
        while releases and releases[0][0] <= now:
            _, g, n = heapq.heappop(releases)
            free[g] += n
        new = []
        while nxt < n_in and led.arrival[arriving[nxt]] <= now:
            new.append(int(arriving[nxt]))
            nxt += 1
        if new:
            upto = n_act + nxt
            present = np.sort(rows.ids[:upto][gone_at[:upto] > now])
            tfair = fair_share_of(led.scale[present], led.weight[present], led.throughput[present],
                                  capacity).fair_throughput
            fair_at.update({i: float(tfair[int(np.searchsorted(present, i))]) for i in new})
            waiting += new
            least = None
        # Idle GPUs only get fewer during this pass, so a job that fits on no type now stays waiting. Most events
        # start nothing: the fewest GPUs any waiting job needs per type tells without the jobs.
        if not waiting:
            continue
        if least is None:  # ``waiting`` changed: its array and per-type minimum again
            w = np.array(waiting, dtype=np.int64)
            least = np.where(led.throughput[w] > 0, size[w][:, None], np.inf).min(axis=0)
        if not (free >= least).any():
            continue
        left = _start_fitting(led, w, size, free, now, end, cfg.restart_overhead, started, releases,
                              tuple(gpus), log)
        for i in w[~left].tolist():
            if started[i].finished:
                gone_at[rows[i]] = started[i].stop
        waiting = w[left].tolist()
        least = None
    return started, fair_at


def _start_fitting(led: _Ledger, w: np.ndarray, size: np.ndarray, free: np.ndarray, now: float, end: float,
                   overhead: float, started: dict[int, _Start], releases: list[tuple[float, int, float]],
                   names: tuple[str, ...], log: list[GpuHold] | None) -> np.ndarray:
    """Start the waiting jobs ``w`` (in order) that fit on idle GPUs at ``now``; returns the mask of those left.

    The jobs that fit are found in one vectorised step, the first of them starts, and the step is repeated over
    the jobs after it: the same starts as trying every job in turn. ``free``, ``started`` and ``releases`` are
    updated in place.
    """
    can, wsize = led.throughput[w] > 0, size[w][:, None]
    left = np.ones(len(w), dtype=bool)
    k = 0
    while True:
        hit = np.flatnonzero(np.any(can[k:] & (free[None, :] >= wsize[k:]), axis=1))
        if not len(hit):
            return left
        j = k + int(hit[0])
        i, k = int(w[j]), j + 1
        left[j] = False
        fits = can[j] & (free >= size[i])
        g = int(np.argmax(np.where(fits, led.throughput[i], -1.0)))
        tau = float(led.throughput[i, g])
        remaining = float(led.work[i] - led.done[i])
        avail = max(0.0, end - now - overhead)
        need = remaining / tau
        # as in _execute_round: work that runs out within floating-point noise of the round's end finishes
        finished = need <= avail * (1.0 + 1e-12) + 1e-9 * float(led.work[i]) / tau
        run = min(need, avail) if finished else avail
        stop = now + overhead + run if finished else end
        started[i] = _Start(g, now, run, remaining if finished else tau * run, finished, stop,
                            0.0 if finished else max(0.0, overhead - (end - now)))
        free[g] -= size[i]
        if finished and stop < end:
            heapq.heappush(releases, (stop, g, float(size[i])))
        if log is not None:
            log.append(GpuHold((led.ids[i],), names[g], float(size[i]), now, stop, True))


def _merge(led: _Ledger, jobs: _JobState, out: RoundOutcome, cfg: SimConfig, arriving: np.ndarray,
           started: dict[int, _Start], fair_at: dict[int, float], rows: _Rows) -> tuple[RoundOutcome, _LateStarts]:
    """The round's outcome with the starts between boundaries added, and what happened to ``arriving``."""
    t0 = jobs.start
    end = t0 + jobs.plan_length(cfg)
    n_act = len(jobs.index)
    busy = out.busy_gpu_seconds
    for i, s in started.items():  # in order of start: reproducible to the last bit
        busy += float(led.scale[i]) * (s.stop - s.at)
    mine = [(rows[i], s) for i, s in started.items() if rows[i] < n_act]
    if mine:
        ks = np.array([k for k, _ in mine], dtype=np.int64)
        placed, finished, end_, done = out.placed.copy(), out.finished.copy(), out.end.copy(), out.done.copy()
        run_s, key, life, deficit = out.run_seconds.copy(), out.key.copy(), out.life.copy(), out.deficit.copy()
        begin, restart_left = out.begin.copy(), out.restart_left.copy()
        for k, s in mine:
            placed[k], finished[k], done[k], run_s[k], key[k] = True, s.finished, s.done, s.run_seconds, (s.gpu, -1)
            begin[k] = s.at
            restart_left[k] = s.restart_left
            end_[k] = s.stop
            life[k] = s.stop - t0 if s.finished else jobs.plan_length(cfg)
        if cfg.carry_deficits:
            deficit[ks] = partial_deficit(jobs.deficit[ks], cfg.epsilon, done[ks], out.fair_throughput[ks],
                                          jobs.plan_length(cfg), cfg.round_length)
        out = replace(out, placed=placed, finished=finished, end=end_, done=done, run_seconds=run_s, key=key,
                      begin=begin, life=life, deficit=deficit, busy_gpu_seconds=busy, restart_left=restart_left)
    elif started:  # only jobs that arrived inside the round started
        out = replace(out, busy_gpu_seconds=busy)
    n = len(arriving)
    late = _LateStarts(index=np.asarray(arriving, dtype=np.int64), gpu=np.full(n, -1, np.int64),
                       at=np.full(n, np.nan), run_seconds=np.zeros(n), done=np.zeros(n), finished=np.zeros(n, bool),
                       stop=np.full(n, end), life=np.zeros(n), fair_throughput=np.zeros(n),
                       restart_left=np.zeros(n))
    for m, i in enumerate(arriving.tolist()):
        if i in started:
            s = started[i]
            late.gpu[m], late.run_seconds[m], late.done[m], late.finished[m], late.stop[m] = \
                s.gpu, s.run_seconds, s.done, s.finished, s.stop
            late.at[m], late.restart_left[m] = s.at, s.restart_left
        late.life[m] = late.stop[m] - led.arrival[i]
        late.fair_throughput[m] = fair_at[i]
    return out, late
