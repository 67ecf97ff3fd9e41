"""Records a simulation produces: one per job and one per round. Metrics are computed from these alone.

These are plain frozen dataclasses so that a run can be saved as JSON and re-analysed without re-running
(``to_dict`` / ``from_dict``; the JSON layout is in ``docs/json-formats.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["JobRecord", "RoundRecord"]


@dataclass(frozen=True, slots=True)
class JobRecord:
    """What happened to one job of a trace.

    Attributes
    ----------
    id, model, tenant : str
        Identity; ``tenant`` is ``""`` when the trace has none.
    scale : int or float
        Gang size, or the share of one GPU a job that asks for part of a GPU holds (``0 < scale < 1``).
    weight : float
        Fairness weight as given in the trace.
    arrival : float
        Arrival time, s.
    finish : float
        Finish time, s (``nan`` if the job had not finished when the simulation stopped).
    iterations : float
        Total work of the job.
    done_iterations : float
        Work completed by the end of the simulation (== ``iterations`` if finished).
    fair_throughput : float
        Mean fair throughput ``Tfair_j`` (iterations/s) over the rounds the job was active, weighted by the
        time it was active in each round. Used for finish-time fairness ``rho``.
    active_seconds : float
        Time from arrival to finish (or to the end of the simulation), s.
    censored : bool
        The trace marked the job censored: it was still running when the source trace ended, so its work is
        a lower bound and its JCT is left out of the JCT metrics (default False).
    ideal_seconds : float
        Time the job needs alone on the fastest GPU type of the cluster it can use, ``iterations / max alone
        throughput``, s (``nan`` in records written before 0.2). Defines its duration class.
    metadata : dict of str to str
        The trace's metadata of the job (default empty).
    first_start : float
        When the job was first given GPUs (by a round's plan or a start between rounds), s; ``nan`` if it never
        was (or in records written before 0.2). ``first_start - arrival`` is its queueing delay.
    """

    id: str
    model: str
    tenant: str
    scale: int | float
    weight: float
    arrival: float
    finish: float
    iterations: float
    done_iterations: float
    fair_throughput: float
    active_seconds: float
    censored: bool = False
    ideal_seconds: float = float("nan")
    metadata: dict[str, str] = field(default_factory=dict)
    first_start: float = float("nan")

    def to_dict(self) -> dict[str, Any]:
        """The record as a plain dict (``nan`` stays ``nan``; JSON writers turn it into ``null``)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> JobRecord:
        """A record from :meth:`to_dict` output or its JSON form (``null`` read as ``nan``).

        Examples
        --------
        >>> j = JobRecord("a", "m", "", 1, 1.0, 0.0, float("nan"), 6.0, 3.0, 0.1, 60.0)
        >>> back = JobRecord.from_dict({**j.to_dict(), "finish": None})
        >>> back.id, back.finish != back.finish
        ('a', True)
        """
        values: dict[str, Any] = {k: (float("nan") if v is None else v) for k, v in doc.items()}
        if isinstance(values.get("metadata"), float):                  # null metadata: none
            values["metadata"] = {}
        return cls(**values)


@dataclass(frozen=True, slots=True)
class RoundRecord:
    """One scheduling round of a simulation.

    Attributes
    ----------
    index : int
        Round number, from 0.
    start : float
        Simulated time at the start of the round, s.
    length : float
        Round length, s.
    active_jobs : int
        Jobs that were active (arrived, unfinished) when the round was planned.
    placed_jobs : int
        Jobs that ran in the round.
    utilization : float
        ``E / C`` of the placement as planned (spec round-problem section 3), the allocation's
        ``utilization``.
    busy_gpu_seconds : float
        GPU-seconds during which a GPU ran at least one job (a job that finishes early frees its GPUs).
    capacity_gpu_seconds : float
        ``C * length``.
    solver_seconds : float
        Wall time the policy took for this round.
    status : str
        The allocation status (``optimal``, ``time_limit``, ``heuristic``, ...).
    migrations : int
        Cluster given as nodes: jobs that ran in the previous round and run in this one on other GPUs (0
        otherwise).
    split_gangs : int
        Cluster given as nodes: gangs of this round spread over more than one node.
    moved_jobs : int
        Jobs that ran in the previous plan and run on another GPU type or beside another partner in this one
        (each pays the restart overhead).
    preempted_jobs : int
        Jobs that ran in the previous plan and, unfinished, do not run in this one.
    """

    index: int
    start: float
    length: float
    active_jobs: int
    placed_jobs: int
    utilization: float
    busy_gpu_seconds: float
    capacity_gpu_seconds: float
    solver_seconds: float
    status: str
    migrations: int = 0
    split_gangs: int = 0
    moved_jobs: int = 0
    preempted_jobs: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The record as a plain dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> RoundRecord:
        """A record from :meth:`to_dict` output.

        Examples
        --------
        >>> r = RoundRecord(0, 0.0, 360.0, 2, 2, 0.9, 700.0, 720.0, 0.01, "optimal")
        >>> RoundRecord.from_dict(r.to_dict()) == r
        True
        """
        return cls(**dict(doc))
