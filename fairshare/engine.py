"""The stateful engine: round after round, carrying deficits (spec section 4), saved and loaded as JSON.

A scheduler keeps one :class:`Engine`. Each round it calls :meth:`Engine.plan` with the jobs active now
(their carried deficits are filled in from the engine's state), runs the placement, then calls
:meth:`Engine.commit` with the progress each job actually received (or nothing, to take the plan as
delivered). The deficit update is ``D_j <- max(0, D_j + (1 - epsilon) - rho_j)`` for every job of the round;
jobs that arrive start at 0, jobs that are not in a round are dropped (finished). :meth:`Engine.save` writes
the state atomically (temporary file in the same folder, fsync, rename), so a scheduler that restarts loses
no fairness history.

>>> eng = Engine({"V100": 1}, mode="exact")
>>> alloc = eng.plan([{"id": "a", "scale": 1, "throughput": {"V100": 3.0}},
...                   {"id": "b", "scale": 1, "throughput": {"V100": 2.0}}])
>>> [p.jobs for p in alloc.placements]   # the faster job gets the GPU
[('a',)]
>>> _ = eng.commit(alloc)
>>> sorted(eng.deficits.items())   # a ran (progress 2.0, twice its fair share); b is owed its share
[('a', 0.0), ('b', 1.0)]
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from fairshare.allocate import MODES, SolveOptions, allocate
from fairshare.allocation import Allocation, Status
from fairshare.errors import InvalidInputError
from fairshare.fair_share import next_deficit
from fairshare.problem import RoundProblem

__all__ = ["Engine"]

_STATE_VERSION = 1


class Engine:
    """Round-after-round allocation with carried deficits.

    Parameters
    ----------
    gpus : mapping of str to int
        The cluster (GPU type -> whole GPUs). May be changed between rounds with :attr:`gpus`.
    mode : {"fast", "exact", "lp"}
        Solve mode of every round.
    epsilon, fairness_weight : float
        Fairness knobs of every round (spec section 1).
    options : SolveOptions or mapping, optional
        Solver options.
    deficits : mapping of str to float, optional
        Initial carried deficits (e.g. from another system).
    """

    def __init__(self, gpus: Mapping[str, int], *, mode: str = "fast", epsilon: float = 0.0,
                 fairness_weight: float = 100.0, options: SolveOptions | Mapping[str, Any] | None = None,
                 deficits: Mapping[str, float] | None = None, round_index: int = 0) -> None:
        if not isinstance(mode, str) or mode not in MODES:
            raise InvalidInputError("mode", mode, f"must be one of {', '.join(MODES)}")
        self.gpus = dict(gpus)
        self.mode = mode
        self.epsilon = epsilon
        self.fairness_weight = fairness_weight
        self.options = SolveOptions.coerce(options).for_mode(mode)
        self.round_index = int(round_index)
        self._deficits: dict[str, float] = {}
        for jid, d in (deficits or {}).items():
            if not (isinstance(d, (int, float)) and math.isfinite(d) and d >= 0):
                raise InvalidInputError(f"deficits.{jid}", d, "must be finite and >= 0")
            self._deficits[str(jid)] = float(d)
        self._pending: Allocation | None = None
        self._pending_epsilon = epsilon

    @property
    def deficits(self) -> dict[str, float]:
        """Carried deficit of every job the engine knows (a copy)."""
        return dict(self._deficits)

    def problem(self, jobs: Sequence[Mapping[str, Any]], colocation: Sequence[Mapping[str, Any]] = ()) -> RoundProblem:
        """The round problem for ``jobs`` with carried deficits filled in.

        ``jobs`` are job objects of the round document (spec section 6); a ``deficit`` key in them is an
        error (the engine owns deficits).
        """
        docs = []
        for i, job in enumerate(jobs):
            if not isinstance(job, Mapping):
                raise InvalidInputError(f"jobs[{i}]", job, "must be an object")
            if "deficit" in job:
                raise InvalidInputError(f"jobs[{i}].deficit", job["deficit"],
                                        "the engine carries deficits itself; leave this key out")
            d = dict(job)
            d["deficit"] = self._deficits.get(str(job.get("id")), 0.0)
            docs.append(d)
        return RoundProblem.from_dict({"gpus": self.gpus, "jobs": docs, "colocation": list(colocation),
                                       "epsilon": self.epsilon, "fairness_weight": self.fairness_weight})

    def plan(self, jobs: Sequence[Mapping[str, Any]], colocation: Sequence[Mapping[str, Any]] = ()) -> Allocation:
        """Solve the next round for the active ``jobs`` (and candidate pairs) with their carried deficits."""
        problem = self.problem(jobs, colocation)
        alloc = allocate(problem, mode=self.mode, options=self.options)
        self._pending = alloc
        self._pending_epsilon = problem.epsilon
        return alloc

    def commit(self, allocation: Allocation | None = None, *,
               progress: Mapping[str, float] | None = None) -> dict[str, float]:
        """Apply the deficit update for a round that was executed.

        Parameters
        ----------
        allocation : Allocation, optional
            The round's plan (default: the last :meth:`plan`).
        progress : mapping of job id to float, optional
            Progress ``rho_j`` (in fair-share units, ``tau_j / Tfair_j``) each job actually received; jobs
            not listed are taken as planned. Use it when a job ran shorter or slower than planned.

        Returns
        -------
        dict
            The new deficits of the round's jobs. Jobs not in the round are forgotten.
        """
        alloc = allocation if allocation is not None else self._pending
        if alloc is None:
            raise InvalidInputError("allocation", None, "no round planned: call plan() first")
        if alloc.status == Status.NO_SOLUTION:
            rho = dict.fromkeys(alloc.job_ids, 0.0)
        else:
            rho = {j: float(alloc.progress[i]) for i, j in enumerate(alloc.job_ids)}
        for jid, r in (progress or {}).items():
            if jid not in rho:
                raise InvalidInputError(f"progress.{jid}", r, "not a job of this round")
            if not (isinstance(r, (int, float)) and math.isfinite(r) and r >= 0):
                raise InvalidInputError(f"progress.{jid}", r, "must be finite and >= 0")
            rho[jid] = float(r)
        ids = list(rho)
        carried = np.array([self._deficits.get(j, 0.0) for j in ids])
        nxt = next_deficit(carried, self._pending_epsilon, np.array([rho[j] for j in ids]))
        new = dict(zip(ids, nxt.tolist()))
        self._deficits = new
        self.round_index += 1
        self._pending = None
        return dict(new)

    def step(self, jobs: Sequence[Mapping[str, Any]], colocation: Sequence[Mapping[str, Any]] = ()) -> Allocation:
        """:meth:`plan` and :meth:`commit` as planned, in one call."""
        alloc = self.plan(jobs, colocation)
        self.commit(alloc)
        return alloc

    # ------------------------------------------------------------------ persistence
    def state(self) -> dict[str, Any]:
        """The engine's state as a plain JSON-able document."""
        return {"version": _STATE_VERSION, "gpus": self.gpus, "mode": self.mode, "epsilon": self.epsilon,
                "fairness_weight": self.fairness_weight, "options": asdict(self.options),
                "round_index": self.round_index, "deficits": dict(self._deficits)}

    @classmethod
    def from_state(cls, doc: Mapping[str, Any]) -> Engine:
        """Rebuild an engine from :meth:`state` output."""
        if not isinstance(doc, Mapping):
            raise InvalidInputError("state", doc, "must be an object")
        if doc.get("version") != _STATE_VERSION:
            raise InvalidInputError("state.version", doc.get("version"), f"expected {_STATE_VERSION}")
        if not isinstance(doc.get("gpus"), Mapping):
            raise InvalidInputError("state.gpus", doc.get("gpus"), "missing or not an object")
        allowed = {"version", "gpus", "mode", "epsilon", "fairness_weight", "options", "round_index", "deficits"}
        for key in doc:
            if key not in allowed:
                raise InvalidInputError(f"state.{key}", doc[key], "unknown key")
        return cls(doc["gpus"], mode=doc.get("mode", "fast"), epsilon=doc.get("epsilon", 0.0),
                   fairness_weight=doc.get("fairness_weight", 100.0), options=doc.get("options"),
                   deficits=doc.get("deficits", {}), round_index=doc.get("round_index", 0))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`state` as JSON atomically (temporary file in the same folder, fsync, rename)."""
        path = Path(path)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(self.state(), f, indent=2)  # key order kept: GPU type order matters
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Engine:
        """Read an engine saved by :meth:`save`."""
        text = Path(path).read_text()
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInputError("state", str(path), f"not valid JSON ({exc})") from None
        return cls.from_state(doc)
