"""How much work a trace offers a cluster: :func:`offered_load`.

A trace whose jobs need more GPU time than the cluster has while they arrive cannot be served: its queue
grows for as long as jobs keep arriving, every round has more jobs to plan than the last, and a replay of it
takes time that grows with the square of the trace's length (rounds x active jobs). The offered load says
so before the run starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fairshare.sim.catalog import Catalog, load_catalog
from fairshare.sim.cluster_spec import cluster_nodes
from fairshare.sim.ledger import _Ledger
from fairshare.sim.traces import Trace

__all__ = ["OfferedLoad", "offered_load"]


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
    """

    gpu_seconds: float
    span_seconds: float
    gpus: int

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
        """One sentence for a person: the ratio, the GPU-hours and the span."""
        return (f"the trace needs at least {self.gpu_seconds / 3600:,.0f} GPU-hours (each job alone on its fastest "
                f"type) and arrives over {self.span_seconds / 3600:,.0f} h, during which {self.gpus} GPUs have "
                f"{self.gpus * self.span_seconds / 3600:,.0f} GPU-hours: offered load {self.ratio:.2f}")


def offered_load(trace: Trace, cluster: str | Mapping[str, int] | Sequence[Any],
                 catalog: Catalog | None = None) -> OfferedLoad:
    """The offered load of ``trace`` on ``cluster`` (see :class:`OfferedLoad`).

    Parameters
    ----------
    trace : fairshare.sim.traces.Trace
        The jobs (their models, scales, iterations and arrivals).
    cluster : str, mapping or list of nodes
        As :func:`fairshare.sim.simulator.simulate` takes it.
    catalog : fairshare.sim.catalog.Catalog, optional
        Throughput data (default: the built-in catalog).

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
    gpus, _ = cluster_nodes(cluster)
    led = _Ledger.of(trace, load_catalog() if catalog is None else catalog, gpus)
    if not len(led.ids):
        return OfferedLoad(0.0, 0.0, int(sum(gpus.values())))
    need = float(np.sum(led.ideal * np.maximum(led.scale, 0)))
    span = float(led.arrival.max() - led.arrival.min())
    return OfferedLoad(need, span, int(sum(gpus.values())))
