"""What a simulation run produced (:class:`SimulationResult`, :class:`GpuHold`) and its compact JSON form."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fairshare.sim.config import SimConfig
from fairshare.sim.metrics import RunMetrics, compute_metrics
from fairshare.sim.records import JobRecord, RoundRecord

__all__ = ["GpuHold", "SimulationResult", "records_json"]


@dataclass(frozen=True, slots=True)
class GpuHold:
    """GPUs of one type held by one placement for a stretch of time (``simulate(..., record_holds=True)``).

    Attributes
    ----------
    jobs : tuple of str
        The job ids of the placement (two for a co-located pair, which shares its GPUs).
    gpu : str
        GPU type.
    gpus : float
        GPUs held: the gang size, or the share class (``1/2^k``) of a job holding part of one GPU, as in the
        capacity row of the round problem.
    start, end : float
        Simulated seconds: from when the GPUs were taken (a round boundary, or a start between rounds) until
        the placement's last member finished or the round ended. The restart overhead is inside.
    between_rounds : bool
        Started between round boundaries (``SimConfig.starts == "idle"``), not by the policy's plan.
    """

    jobs: tuple[str, ...]
    gpu: str
    gpus: float
    start: float
    end: float
    between_rounds: bool = False


@dataclass(frozen=True)
class SimulationResult:
    """Records of one simulation run.

    Attributes
    ----------
    policy : str
        Display name of the policy (with its variant).
    jobs : tuple of JobRecord
    rounds : tuple of RoundRecord
    config : SimConfig
        The options of the run.
    wall_seconds : float
        Wall time of the whole run.
    cluster : dict of str to int
        GPUs per type.
    policy_options : dict
        Constructor options of the policy (when it was given by name).
    catalog : dict
        Provenance of the throughput figures the run could use (:func:`catalog_provenance`): ``sources``
        (name, kind) and how many of the ``figures`` (alone entries of the trace's models and scales on the
        cluster's types) are ``derived``.
    holds : tuple of GpuHold
        Every time a placement held GPUs, in the order they were taken; empty unless
        ``simulate(..., record_holds=True)``. Not part of :meth:`to_dict` (records files do not carry them).
    """

    policy: str
    jobs: tuple[JobRecord, ...]
    rounds: tuple[RoundRecord, ...]
    config: SimConfig = field(default_factory=SimConfig)
    wall_seconds: float = 0.0
    cluster: dict[str, int] = field(default_factory=dict)
    policy_options: dict[str, Any] = field(default_factory=dict)
    catalog: dict[str, Any] = field(default_factory=dict)
    holds: tuple[GpuHold, ...] = ()

    def metrics(self) -> RunMetrics:
        """:class:`fairshare.sim.metrics.RunMetrics` of this run."""
        return compute_metrics(self.jobs, self.rounds)

    def to_dict(self) -> dict[str, Any]:
        """The run as plain data (``docs/json-formats.md``, "Simulation records"); ``nan`` stays ``nan``."""
        watch = self.config.stop_when_finished
        config = {"cluster": dict(self.cluster), **self.config.to_dict(),
                  "stop_when_finished_jobs": len(watch or ()), "policy_options": dict(self.policy_options)}
        return {"policy": self.policy, "config": config, "wall_seconds": self.wall_seconds,
                "catalog": dict(self.catalog),
                "jobs": [j.to_dict() for j in self.jobs], "rounds": [r.to_dict() for r in self.rounds]}

    def to_json(self) -> str:
        """:meth:`to_dict` as compact JSON: one record per line, ``nan`` as ``null``, default fields left out.

        A job record leaves out ``censored`` when false and ``metadata`` when empty (readers restore the
        defaults); everything else is kept at full precision.
        """
        return records_json(self.to_dict())

    def save_json(self, path: str | Path) -> None:
        """All per-job and per-round records as JSON (:meth:`to_json`; NaN written as null)."""
        Path(path).write_text(self.to_json())

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> SimulationResult:
        """The run of :meth:`to_dict` output or its JSON form."""
        cfg = dict(doc.get("config", {}))
        return cls(doc["policy"], tuple(JobRecord.from_dict(j) for j in doc["jobs"]),
                   tuple(RoundRecord.from_dict(r) for r in doc["rounds"]), SimConfig.from_dict(cfg),
                   doc.get("wall_seconds", 0.0), dict(cfg.get("cluster", {})), dict(cfg.get("policy_options", {})),
                   dict(doc.get("catalog") or {}))


def _plain(v: Any) -> Any:
    """JSON-ready: non-finite floats as None, numpy values as Python ones, containers recursively."""
    if isinstance(v, (float, np.floating)):
        return float(v) if np.isfinite(v) else None
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.ndarray):
        return _plain(v.tolist())
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def _compact_job(rec: dict[str, Any]) -> dict[str, Any]:
    out = dict(rec)
    if not out.get("censored"):
        out.pop("censored", None)
    if not out.get("metadata"):
        out.pop("metadata", None)
    return out


def records_json(doc: dict[str, Any]) -> str:
    """Records as compact JSON: a run (:meth:`SimulationResult.to_dict`), or ``{..., "runs": [run, ...]}``.

    Each job and round record takes one line without indentation, ``nan`` and infinities are ``null``, and
    job records leave out ``censored: false`` and empty ``metadata``. (Records of an eight-policy comparison
    are about a third of the size of indented JSON; see ``docs/json-formats.md``.)

    Examples
    --------
    >>> print(records_json({"policy": "p", "jobs": [{"id": "a", "finish": float("nan"), "censored": False}],
    ...                     "rounds": []}))
    {"policy": "p",
     "jobs": [
      {"id": "a", "finish": null}
     ],
     "rounds": []}
    """
    def run_text(run: dict[str, Any], indent: str) -> str:
        parts = []
        for key, value in run.items():
            if key in ("jobs", "rounds") and isinstance(value, list):
                rows = [json.dumps(_plain(_compact_job(r) if key == "jobs" else r)) for r in value]
                body = ("[\n" + ",\n".join(f"{indent} {r}" for r in rows) + f"\n{indent}]") if rows else "[]"
                parts.append(f"{json.dumps(key)}: {body}")
            else:
                parts.append(f"{json.dumps(key)}: {json.dumps(_plain(value))}")
        return "{" + f",\n{indent} ".join(parts) + "}"

    if isinstance(doc.get("runs"), list):
        head = [f"{json.dumps(k)}: {json.dumps(_plain(v))}" for k, v in doc.items() if k != "runs"]
        runs = ",\n".join(" " + run_text(r, " ") for r in doc["runs"])
        return "{" + ",\n ".join([*head, '"runs": [\n' + runs + "\n ]"]) + "}\n"
    return run_text(doc, "") + "\n"
