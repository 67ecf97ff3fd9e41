"""How much work a trace offers a cluster: :func:`offered_load`.

A trace whose jobs need more GPU time than the cluster has while they arrive cannot be served: its queue
grows for as long as jobs keep arriving, every round has more jobs to plan than the last, and a replay of it
takes time that grows with the square of the trace's length (rounds x active jobs). The offered load says
so before the run starts.

The ratio alone does not say how busy a replay will keep the cluster: a day of arrivals whose jobs run for
days has a ratio well above 1, yet no cluster is busier than 100 %. :func:`offered_load` therefore also runs
a fluid model of a work-conserving schedule (every job present runs on up to its gang of GPUs, the GPUs
shared in proportion to the gangs when there are too few; each job needs its GPU time on its fastest type)
up to the replay's horizon, and reports the GPU busy fraction and the time the last job would end. It ignores
which type a job runs on, gangs that must fit one type, co-location and round boundaries; its measured error
against replays is in ``docs/traces.md`` ("Load").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fairshare.cluster import Cluster
from fairshare.sim.catalog import Catalog, load_catalog
from fairshare.sim.ledger import _Ledger
from fairshare.sim.traces import Trace

__all__ = ["OfferedLoad", "fluid_schedule", "offered_load"]


@dataclass(frozen=True, slots=True)
class OfferedLoad:
    """The GPU time a trace needs against the GPU time its cluster has while the jobs arrive.

    Attributes
    ----------
    gpu_seconds : float
        Sum over jobs of scale x (work / fastest alone throughput on the cluster's types): a lower bound on
        the GPU time the jobs need when each runs alone (every GPU of a job counted, each job on its
        fastest type, even where that type has too few GPUs for all of them).
    span_seconds : float
        From the first arrival to the last.
    gpus : int
        GPUs of the cluster.
    busy_fraction : float
        The fluid model's GPU busy fraction over the time some job is present, up to ``horizon_seconds``
        (the one :class:`~fairshare.sim.metrics.RunMetrics` reports as ``gpu_busy_fraction``); ``nan`` without
        jobs.
    end_seconds : float
        When the fluid model stops: its last job's end, or the horizon, s after the first arrival.
    horizon_seconds : float or None
        The horizon the model ran to (``until``), or None.
    """

    gpu_seconds: float
    span_seconds: float
    gpus: int
    busy_fraction: float = float("nan")
    end_seconds: float = float("nan")
    horizon_seconds: float | None = None

    @property
    def ratio(self) -> float:
        """``gpu_seconds / (gpus x span_seconds)`` (``inf`` when every job arrives at once)."""
        have = self.gpus * self.span_seconds
        return self.gpu_seconds / have if have > 0 else float("inf")

    @property
    def overloaded(self) -> bool:
        """The jobs need more GPU time than the cluster has over the arrival span (``ratio > 1``).

        The bound ignores co-location (two jobs sharing a GPU can do more than one job's work on it), so an
        overloaded trace may still be served by a policy that shares GPUs well; a ratio well above 1 cannot.
        """
        return self.ratio > 1.0

    def describe(self) -> str:
        """One sentence for a person: the ratio, the GPU-hours and the span, and the fluid model's estimate."""
        text = (f"the trace needs at least {self.gpu_seconds / 3600:,.0f} GPU-hours (each job alone on its fastest "
                f"type) and arrives over {self.span_seconds / 3600:,.0f} h, during which {self.gpus} GPUs have "
                f"{self.gpus * self.span_seconds / 3600:,.0f} GPU-hours: offered load {self.ratio:.2f}")
        if self.busy_fraction == self.busy_fraction:
            until = ("to the horizon" if self.horizon_seconds is not None and self.end_seconds >= self.horizon_seconds
                     else "until its last job ends")
            text += (f"; a work-conserving schedule would keep the GPUs about {100 * self.busy_fraction:.0f} % busy "
                     f"{until}, at {self.end_seconds / 3600:,.0f} h")
        return text


def offered_load(trace: Trace, cluster: Cluster | str | Mapping[str, int] | Sequence[Any],
                 catalog: Catalog | None = None, *, until: float | None = None) -> OfferedLoad:
    """The offered load of ``trace`` on ``cluster`` (see :class:`OfferedLoad`).

    Parameters
    ----------
    trace : fairshare.sim.traces.Trace
        The jobs (their models, scales, iterations and arrivals).
    cluster : str, mapping or list of nodes
        As :func:`fairshare.sim.simulator.simulate` takes it.
    catalog : fairshare.sim.catalog.Catalog, optional
        Throughput data (default: the built-in catalog).
    until : float, optional
        The replay's horizon, s (the fluid model stops there; default: when its last job ends).

    Raises
    ------
    fairshare.errors.InvalidInputError
        A job that can run on no GPU type of the cluster (as :func:`~fairshare.sim.simulator.simulate`).

    Examples
    --------
    >>> from fairshare.sim.traces import generate_trace
    >>> load = offered_load(generate_trace(2000, jobs_per_hour=6, seed=0), "V100=36,P100=36,K80=36")
    >>> load.overloaded
    True
    >>> offered_load(generate_trace(2000, jobs_per_hour=1, seed=0), "V100=36,P100=36,K80=36").overloaded
    False
    """
    gpus = Cluster.parse(cluster).require_gpu("cluster").by_type()
    led = _Ledger.of(trace, load_catalog() if catalog is None else catalog, gpus)
    total = int(sum(gpus.values()))
    if not len(led.ids):
        return OfferedLoad(0.0, 0.0, total, horizon_seconds=until)
    gang = np.maximum(np.asarray(led.scale, dtype=np.float64), 0.0)
    need = float(np.sum(led.ideal * gang))
    span = float(led.arrival.max() - led.arrival.min())
    busy, end = fluid_schedule(np.asarray(led.arrival, dtype=np.float64), gang, np.asarray(led.ideal), total, until)
    return OfferedLoad(need, span, total, busy, end, until)


def fluid_schedule(arrival: np.ndarray, gang: np.ndarray, alone: np.ndarray, gpus: int,
                   until: float | None = None) -> tuple[float, float]:
    """A work-conserving fluid schedule: ``(GPU busy fraction while some job is present, end time)``.

    Each present job runs on up to its ``gang`` GPUs; with more gangs than ``gpus``, every job runs at the same
    fraction ``gpus / sum(gangs)`` of its full speed. A job needs ``alone`` seconds at full speed. The busy
    fraction is ``integral of min(gpus, sum of present gangs)`` over ``gpus x`` the time some job is present,
    up to ``until`` (s; default: the last job's end). Times are from the first arrival.

    >>> busy, end = fluid_schedule(np.array([0.0, 0.0]), np.array([1.0, 1.0]), np.array([10.0, 30.0]), 2)
    >>> round(busy, 3), end          # both GPUs for 10 s, then one for 20 s
    (0.667, 30.0)
    >>> fluid_schedule(np.array([0.0, 0.0]), np.array([2.0, 2.0]), np.array([10.0, 10.0]), 2)
    (1.0, 20.0)
    """
    order = np.argsort(arrival, kind="stable")
    a, g, rem = arrival[order] - arrival.min(), gang[order], alone[order].astype(np.float64).copy()
    tol = 1e-9 * np.maximum(rem, 1.0)
    n, k, t = len(a), 0, 0.0
    horizon = math.inf if until is None else float(until)
    present = np.zeros(n, dtype=bool)
    busy = time = 0.0
    while t < horizon:
        while k < n and a[k] <= t:
            present[k] = True
            k += 1
        if not present.any():
            if k == n:
                break
            t = float(a[k])
            continue
        want = float(g[present].sum())
        speed = min(1.0, gpus / want) if want > 0 else 1.0
        dt = min(float(rem[present].min()) / speed, float(a[k]) - t if k < n else math.inf, horizon - t)
        busy += min(gpus, want) * dt
        time += dt
        rem[present] -= speed * dt
        t += dt
        present &= rem > tol
    return (busy / (gpus * time) if time > 0 and gpus > 0 else float("nan")), t
