"""The round-based simulator (spec simulator.md): replay a trace on a heterogeneous cluster with a policy.

Each round of length Δ (default 360 s):

1. Active jobs = arrived (``arrival <= t``) and unfinished. With none active, time jumps to the next arrival.
2. The round problem is built from arrays: alone throughputs from the catalog, co-location candidates among
   the active jobs (capped at ``max_pairs_per_job`` per job, top-k by combined normalised throughput),
   carried deficits, weights, ``epsilon`` and ``fairness_weight``. A job whose ``scale`` is a share
   ``0 < s < 1`` of one GPU runs at ``s`` times its model's one-GPU throughput (derived: the catalog has no
   per-share figures) and is never a co-location candidate.
3. The policy plans the round (its wall time is recorded).
4. Every placed job runs for Δ at its planned (alone or co-located) throughput, less ``restart_overhead``
   seconds when its placement (GPU type or partner) differs from the previous round's (starting from not
   running counts as a change). A job whose work runs out inside the round finishes at that exact time; its
   GPUs are idle for the rest of the round, and a co-located partner keeps its co-located throughput (the
   simulator does not re-plan inside a round).
   With ``starts="idle"`` (:class:`SimConfig`, the default; ``"round"`` is the rule above alone) jobs also start
   inside the round: at every arrival and every finish, the waiting jobs (the round's jobs the plan did not
   place, then the round's arrivals, in arrival order) start one by one, alone, on the type with the highest
   throughput for them among those with enough idle GPUs (a gang's ``scale`` GPUs of one type, a part of a
   GPU its share class), pay ``restart_overhead`` and run until their work runs out or the round ends. The
   plan's placements are not changed. With nodes such starts are per type, not bound to nodes.
5. Deficits are updated with the progress actually delivered, ``rho_j = (work done in the round / Δ) /
   Tfair_j`` (spec round-problem.md section 4), for jobs that are still active; finished jobs leave. With
   ``carry_deficits=False`` deficits stay 0 (spatial-only fairness, an ablation).

The options of a run are a :class:`SimConfig`. Step 4 and the deficit update of step 5 are the pure function
``_execute_round(plan, jobs, config) -> RoundOutcome``, and the starts between boundaries
``_between_rounds``; :func:`simulate` only admits jobs, builds each round, asks the policy and books the
outcome. A job that arrived inside a round counts as in the system from its arrival with ``starts="idle"``,
with its fair share among the jobs present then (``docs/metrics.md``, "Starts between rounds").

A run stops when every job has finished, or at a horizon: ``until`` (no round starts at or after that
simulated time) or ``max_rounds``; jobs not finished then keep ``finish = nan`` and are counted as unfinished.
Before the first round it refuses, naming the job or option, a job that can run nowhere (a gang larger than
any GPU type, or no throughput data for its model at its scale on the cluster's types), a GPU type the catalog
does not have, and a run sure to need more than :data:`ROUND_LIMIT` rounds without a horizon. Progress
(stderr) is the simulated time against a lower bound on the time still needed, with an ETA from the recent
wall time per round.

Deterministic: the same trace, cluster, policy and options give the same records (no randomness is used
here; policies break ties by job order, which is the trace's order).
"""

from __future__ import annotations

import heapq
import json
import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from fairshare._validate import clip, is_real, readonly
from fairshare.allocation import Allocation
from fairshare.binding import MAX_NODE_GPUS, Binding, Node, bind, gpus_of_nodes, parse_nodes
from fairshare.documents import MAX_JSON_BYTES, read_json
from fairshare.errors import InvalidInputError, PolicyError
from fairshare.fair_share import fair_share_of, next_deficit
from fairshare.formulation import RoundModel, build_model
from fairshare.packing import share_classes
from fairshare.policies.base import Policy, RoundState, get_policy
from fairshare.problem import MAX_GPUS, RoundProblem
from fairshare.sim.catalog import Catalog, load_catalog
from fairshare.sim.metrics import RunMetrics, compute_metrics
from fairshare.sim.progress import Progress
from fairshare.sim.records import JobRecord, RoundRecord
from fairshare.sim.traces import MAX_ARRIVAL, Trace

__all__ = ["ROUND_LENGTH_RANGE", "ROUND_LIMIT", "STARTS", "GpuHold", "RoundOutcome", "SimConfig", "SimulationResult",
           "catalog_provenance", "check_run", "cluster_nodes", "parse_cluster", "parse_nodes_spec", "records_json",
           "simulate"]


_NODE_GROUP = re.compile(r"\s*(\d{1,9})\s*[xX]\s*([^:=,]+?)\s*:\s*(\d{1,9})\s*")


def parse_nodes_spec(spec: str) -> tuple[Node, ...]:
    """``"36xV100:8,2xK80:4"`` (COUNTxTYPE:GPUS_PER_NODE groups) or a JSON file of node objects, as nodes.

    Nodes are named ``TYPE-0``, ``TYPE-1``, ... per type, in the order given. A file (``.json``) holds a list
    of ``{"id", "gpu", "gpus"}`` objects, or an object with that list under ``nodes``.

    >>> [n.id for n in parse_nodes_spec("2xV100:8,1xK80:4,1xV100:4")]
    ['V100-0', 'V100-1', 'K80-0', 'V100-2']
    """
    text = str(spec)
    if text.strip().lower().endswith(".json"):
        try:
            with open(text.strip(), "rb") as fh:
                data = fh.read(MAX_JSON_BYTES + 1)
        except OSError as exc:
            raise InvalidInputError("nodes", text, f"cannot read the node file ({exc.strerror or exc})") from None
        doc = read_json(data, what="nodes")
        return parse_nodes(doc["nodes"] if isinstance(doc, dict) and "nodes" in doc else doc)
    nodes: list[Node] = []
    per_type: dict[str, int] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        m = _NODE_GROUP.fullmatch(part)
        if m is None:
            raise InvalidInputError("nodes", spec, f"expected COUNTxTYPE:GPUS_PER_NODE groups, got {part.strip()!r}")
        count, gpu, size = int(m.group(1)), m.group(2), int(m.group(3))
        if count < 1 or not 1 <= size <= MAX_NODE_GPUS:
            raise InvalidInputError("nodes", part.strip(), f"needs at least 1 node of 1 to {MAX_NODE_GPUS} GPUs")
        first = per_type.get(gpu, 0)
        nodes += [Node(f"{gpu}-{first + i}", gpu, size) for i in range(count)]
        per_type[gpu] = first + count
    if not nodes:
        raise InvalidInputError("nodes", spec, "no node")
    return parse_nodes(nodes)


def cluster_nodes(cluster: str | Mapping[str, int] | Sequence[Any]) -> tuple[dict[str, int], tuple[Node, ...]]:
    """The cluster's GPUs per type and its nodes (none for a cluster given by type).

    ``cluster`` is ``"V100=36,K80=36"`` or a mapping (by type, no nodes), ``"36xV100:8,36xK80:4"`` or a
    ``.json`` file (nodes: :func:`parse_nodes_spec`), or a list of nodes. With nodes, the capacities are their
    totals per type.

    >>> cluster_nodes("2xV100:8")[0]
    {'V100': 16}
    """
    if isinstance(cluster, str) and "=" not in cluster and (":" in cluster or
                                                          cluster.strip().lower().endswith(".json")):
        nodes = parse_nodes_spec(cluster)
    elif not isinstance(cluster, (str, Mapping)) and isinstance(cluster, Sequence):
        nodes = parse_nodes(cluster)
    else:
        return parse_cluster(cluster), ()
    return parse_cluster(gpus_of_nodes(nodes)), nodes


def parse_cluster(spec: str | Mapping[str, int]) -> dict[str, int]:
    """``"V100=36,P100=36,K80=36"`` (or a mapping) to ``{"V100": 36, ...}``, validated.

    >>> parse_cluster("V100=2,K80=1")
    {'V100': 2, 'K80': 1}
    """
    if isinstance(spec, Mapping):
        items = list(spec.items())
    else:
        items = []
        for part in str(spec).split(","):
            if not part.strip():
                continue
            if "=" not in part:
                raise InvalidInputError("cluster", spec, f"expected TYPE=COUNT pairs, got {part!r}")
            gpu, _, text = part.partition("=")
            text = text.strip()
            if not (text.isascii() and text.isdigit() and len(text) <= 12):
                raise InvalidInputError(f"cluster.{gpu.strip()}", clip(text),
                                        f"must be an integer from 0 to {MAX_GPUS} (2**31)")
            items.append((gpu.strip(), int(text)))
    out: dict[str, int] = {}
    for name, count in items:
        if not str(name):
            raise InvalidInputError("cluster", spec, "a GPU type name is empty")
        if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= MAX_GPUS:
            raise InvalidInputError(f"cluster.{name}", clip(count), f"must be an integer from 0 to {MAX_GPUS} (2**31)")
        if str(name) in out:
            raise InvalidInputError(f"cluster.{name}", count, "GPU type given twice")
        out[str(name)] = count
    if sum(out.values()) <= 0:
        raise InvalidInputError("cluster", spec, "the cluster has no GPU")
    return out


# ----------------------------------------------------------------------------------------------------------
# Options and results
# ----------------------------------------------------------------------------------------------------------


ROUND_LENGTH_RANGE = (1e-3, 1e8)
"""Smallest and largest round length (s) a simulation accepts."""

ROUND_LIMIT = 1_000_000
"""Most rounds a run may be sure to need: a run whose longest job alone needs more rounds than this (its work
over its fastest throughput, divided by the round length) is refused before it starts unless a horizon
(``until``, ``max_rounds``) cuts it shorter. It would otherwise run for hours or days of wall time."""


STARTS = ("round", "idle")
"""Values of :attr:`SimConfig.starts`: jobs start only at round boundaries, or also on idle GPUs between them."""


def _is_count(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


@dataclass(frozen=True, slots=True)
class SimConfig:
    """Options of a simulation run (everything but the trace, the cluster and the policy).

    Parameters
    ----------
    round_length : float
        Δ, seconds per round (> 0).
    epsilon : float
        Fairness slack of every round problem, in ``[0, 1)``.
    fairness_weight : float
        ``lambda`` of every round problem (> 0).
    restart_overhead : float
        Seconds lost by a job whose placement changed from the previous round, in ``[0, round_length)``.
    max_pairs_per_job : int or None
        Cap on co-location candidates per job (None: all).
    colocation : bool
        Offer co-location candidates at all.
    carry_deficits : bool
        Carry deficits across rounds (False: spatial-only fairness).
    max_rounds : int, optional
        Stop after this many rounds (unfinished jobs have ``finish = nan``).
    until : float, optional
        Horizon in simulated seconds: no round starts at or after this time (unfinished jobs have
        ``finish = nan`` and are counted as unfinished). Default: run until every job has finished.
    stop_when_finished : tuple of str, optional
        Job ids: stop at the end of the round in which the last of them finishes, however many other jobs are
        still active (they keep ``finish = nan``). This is how a steady-state window is measured on a
        continuous trace, e.g. Gavel's mean JCT of jobs 4000-5000 while later jobs keep arriving.
    starts : {"round", "idle"}
        When a job may start. ``"idle"`` (default): at round boundaries, when the policy plans, and also
        between them: at every arrival or finish inside a round, waiting jobs start on idle GPUs that fit them
        (in arrival order, each alone on its fastest idle type) and run until the next boundary, where the
        policy re-plans every job as before (see :func:`simulate`). ``"round"``: only at round boundaries, the
        only rule of 0.1 (and of Gavel's simulator, which the Gavel cross-check keeps).

    Raises
    ------
    InvalidInputError
        For an invalid option, naming it.

    Examples
    --------
    >>> cfg = SimConfig(round_length=1800, epsilon=0.1)
    >>> cfg.round_length, cfg.restart_overhead, SimConfig.coerce(cfg, epsilon=0.2).epsilon
    (1800.0, 0.0, 0.2)
    >>> SimConfig(restart_overhead=400)
    Traceback (most recent call last):
    ...
    fairshare.errors.InvalidInputError: `restart_overhead` = 400: must be in [0, round_length)
    """

    round_length: float = 360.0
    epsilon: float = 0.0
    fairness_weight: float = 100.0
    restart_overhead: float = 0.0
    max_pairs_per_job: int | None = 4
    colocation: bool = True
    carry_deficits: bool = True
    max_rounds: int | None = None
    stop_when_finished: tuple[str, ...] | None = None
    until: float | None = None
    starts: str = "idle"

    def __post_init__(self) -> None:
        """Validate every option; store the numbers as floats and ``stop_when_finished`` as a tuple."""
        set_ = object.__setattr__
        lo, hi = ROUND_LENGTH_RANGE
        if not (is_real(self.round_length) and lo <= self.round_length <= hi):
            raise InvalidInputError("round_length", clip(self.round_length),
                                    f"must be a positive number of seconds from {lo:g} to {hi:g}")
        set_(self, "round_length", float(self.round_length))
        if not (is_real(self.restart_overhead) and 0 <= self.restart_overhead < self.round_length):
            raise InvalidInputError("restart_overhead", self.restart_overhead, "must be in [0, round_length)")
        set_(self, "restart_overhead", float(self.restart_overhead))
        if not (is_real(self.epsilon) and 0 <= self.epsilon < 1):
            raise InvalidInputError("epsilon", self.epsilon, "must be in [0, 1)")
        set_(self, "epsilon", float(self.epsilon))
        if not (is_real(self.fairness_weight) and self.fairness_weight > 0):
            raise InvalidInputError("fairness_weight", self.fairness_weight, "must be finite and > 0")
        set_(self, "fairness_weight", float(self.fairness_weight))
        if self.max_pairs_per_job is not None and not _is_count(self.max_pairs_per_job):
            raise InvalidInputError("max_pairs_per_job", self.max_pairs_per_job,
                                    "must be a non-negative integer or None")
        for name in ("colocation", "carry_deficits"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidInputError(name, getattr(self, name), "must be True or False")
        if self.max_rounds is not None and not _is_count(self.max_rounds):
            raise InvalidInputError("max_rounds", self.max_rounds, "must be a non-negative integer or None")
        if self.until is not None:
            if not (is_real(self.until) and 0 < self.until <= MAX_ARRIVAL):
                raise InvalidInputError("until", clip(self.until),
                                        f"must be a number of seconds > 0 and <= {MAX_ARRIVAL:g}, or None")
            set_(self, "until", float(self.until))
        if self.starts not in STARTS:
            raise InvalidInputError("starts", clip(self.starts), f"must be one of {', '.join(map(repr, STARTS))}")
        watch = self.stop_when_finished
        if watch is not None:
            if isinstance(watch, str) or not isinstance(watch, Iterable):
                raise InvalidInputError("stop_when_finished", watch, "must be a collection of job ids")
            watch = tuple(watch)
            if not watch:
                raise InvalidInputError("stop_when_finished", watch, "names no job")
            set_(self, "stop_when_finished", watch)

    @property
    def offers_pairs(self) -> bool:
        """Whether rounds get co-location candidates (``colocation`` and a cap that is not 0)."""
        return self.colocation and (self.max_pairs_per_job is None or self.max_pairs_per_job > 0)

    @classmethod
    def coerce(cls, config: SimConfig | Mapping[str, Any] | None = None, **overrides: Any) -> SimConfig:
        """A config from an instance, a mapping of fields or ``None`` (defaults), with keyword overrides.

        Raises
        ------
        InvalidInputError
            For an unknown option name or an invalid value.
        """
        if config is not None and not isinstance(config, (SimConfig, Mapping)):
            raise InvalidInputError("config", type(config).__name__, "must be a SimConfig or a mapping")
        base = config if isinstance(config, SimConfig) else cls(**_known_fields(dict(config or {})))
        return replace(base, **_known_fields(overrides)) if overrides else base

    def to_dict(self) -> dict[str, Any]:
        """The options as JSON-ready values (``stop_when_finished`` as a list or ``None``)."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.stop_when_finished is not None:
            d["stop_when_finished"] = list(self.stop_when_finished)
        return d

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> SimConfig:
        """The config of :meth:`to_dict` output; keys that are not options (``cluster``, ...) are ignored.

        A config without ``starts`` was written before the option existed, when jobs started only at round
        boundaries: it reads as ``starts="round"``, not as today's default.
        """
        names = {f.name for f in fields(cls)}
        return cls(**{"starts": "round", **{k: v for k, v in doc.items() if k in names}})


def _known_fields(kw: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(SimConfig)}
    for k, v in kw.items():
        if k not in names:
            raise InvalidInputError(k, v, f"unknown simulation option (known: {', '.join(sorted(names))})")
    return kw


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
        """The run of :meth:`to_dict` output or its JSON form (also files written by fairshare 0.1)."""
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


# ----------------------------------------------------------------------------------------------------------
# One round: executing a plan
# ----------------------------------------------------------------------------------------------------------


class _Plan(Protocol):
    """What the executor reads from a policy's answer (an :class:`~fairshare.allocation.Allocation`)."""

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
    life: np.ndarray
    fair_throughput: np.ndarray
    deficit: np.ndarray
    busy_gpu_seconds: float


def _execute_round(plan: _Plan, jobs: _JobState, cfg: SimConfig, moved: np.ndarray | None = None) -> RoundOutcome:
    """Run ``plan`` for one round on ``jobs`` (steps 4 and 5 of the module documentation); pure.

    ``moved`` (bool, per job; cluster given as nodes): the job kept its type and partner but its GPUs changed,
    which costs ``restart_overhead`` like a change of placement.
    """
    length = cfg.round_length
    tau = np.asarray(plan.throughput, dtype=np.float64)
    gpu = np.asarray(plan.job_gpu, dtype=np.int64)
    partner = np.asarray(plan.job_partner, dtype=np.int64)
    placed = (gpu >= 0) & (tau > 0)
    partner_trace = np.where(partner >= 0, jobs.index[np.maximum(partner, 0)], -1)
    key = np.column_stack([np.where(placed, gpu, -1), np.where(placed, partner_trace, -1)])
    changed = placed & (key != jobs.prev_key).any(axis=1)
    if moved is not None:
        changed |= placed & moved
    overhead = np.where(changed, cfg.restart_overhead, 0.0)
    remaining = jobs.work - jobs.done
    with np.errstate(divide="ignore", invalid="ignore"):
        need_time = np.where(placed, remaining / np.where(tau > 0, tau, 1.0), np.inf)
    run_time = np.where(placed, length - overhead, 0.0)
    # a job whose work runs out within floating-point noise of the round's end finishes with the round
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        slack = 1e-9 * np.where(tau > 0, jobs.work / np.where(tau > 0, tau, 1.0), 0.0)
    finished = placed & (need_time <= run_time * (1.0 + 1e-12) + slack)
    need_time = np.where(finished, np.minimum(need_time, run_time), need_time)
    used = np.where(finished, need_time, run_time)
    done = np.where(finished, remaining, tau * used)
    end = np.where(finished, jobs.start + overhead + need_time, jobs.start + length)
    busy = np.where(placed, overhead + used, 0.0)  # seconds the job's GPUs were held
    fair = np.asarray(plan.fair_throughput, dtype=np.float64)
    deficit = next_deficit(jobs.deficit, cfg.epsilon, (done / length) / fair) if cfg.carry_deficits \
        else jobs.deficit
    return RoundOutcome(placed=placed, finished=finished, end=end, done=done, run_seconds=used, key=key,
                        life=np.where(finished, end - jobs.start, length), fair_throughput=fair, deficit=deficit,
                        busy_gpu_seconds=_busy_gpu_seconds(placed, partner, busy, jobs.scale))


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


# ----------------------------------------------------------------------------------------------------------
# Starts between round boundaries (SimConfig.starts == "idle")
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _LateStarts:
    """Jobs that arrived inside a round (``starts="idle"``): arrays over them, in arrival order.

    ``gpu`` is the type a job started on (-1: it did not start), ``run_seconds`` the seconds it computed,
    ``done`` its iterations, ``finished``/``stop`` whether and when its work ran out, ``life`` its seconds in the
    system up to the round's end (or its finish) and ``fair_throughput`` its fair share among the jobs present
    when it arrived.
    """

    index: np.ndarray
    gpu: np.ndarray
    run_seconds: np.ndarray
    done: np.ndarray
    finished: np.ndarray
    stop: np.ndarray
    life: np.ndarray
    fair_throughput: np.ndarray


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
    end = t0 + cfg.round_length
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
    heapq.heapify(releases)
    n_act = len(jobs.index)
    w0 = jobs.index[~out.placed]  # in trace order
    waiting = w0[np.argsort(led.arrival[w0], kind="stable")].tolist()  # by arrival, ties in trace order
    # the round's jobs (rows 0..n_act-1), then the arrivals: when each leaves (inf: not before the round ends)
    present_ids = np.concatenate([jobs.index, np.asarray(arriving, dtype=np.int64)])
    row_of: dict[int, int] = {}  # row of each present job, built when first needed (a start)

    def row(i: int) -> int:
        if not row_of:
            row_of.update(zip(present_ids.tolist(), range(len(present_ids))))
        return row_of[i]

    gone_at = np.concatenate([np.where(out.finished, out.end, math.inf), np.full(len(arriving), math.inf)])
    capacity = np.array(list(gpus.values()), dtype=np.int64)
    started: dict[int, tuple[int, float, float, float, bool, float]] = {}  # i: (type, at, run s, done, fin, stop)
    fair_at: dict[int, float] = {}
    n_in, nxt = len(arriving), 0
    overhead = cfg.restart_overhead
    least: np.ndarray | None = None  # per type: the fewest idle GPUs a waiting job can start on (None: stale)
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
            rows = np.sort(present_ids[:upto][gone_at[:upto] > now])
            tfair = fair_share_of(led.scale[rows], led.weight[rows], led.throughput[rows], capacity).throughput
            fair_at.update({i: float(tfair[int(np.searchsorted(rows, i))]) for i in new})
            waiting += new
            least = None
        # Idle GPUs only get fewer during this pass, so a job that fits on no type now stays waiting. Most events
        # start nothing: the fewest GPUs any waiting job needs per type tells without the jobs. Otherwise the
        # jobs that fit are found in one vectorised step, the first of them starts, and the step is repeated
        # over the jobs after it (the same starts as trying every job in turn).
        if not waiting:
            continue
        if least is None:  # ``waiting`` changed: its array and per-type minimum again
            w = np.array(waiting, dtype=np.int64)
            least = np.where(led.throughput[w] > 0, size[w][:, None], np.inf).min(axis=0)
        if not (free >= least).any():
            continue
        can, wsize = led.throughput[w] > 0, size[w][:, None]
        left = np.ones(len(w), dtype=bool)
        k = 0
        while True:
            hit = np.flatnonzero(np.any(can[k:] & (free[None, :] >= wsize[k:]), axis=1))
            if not len(hit):
                break
            j = k + int(hit[0])
            i, k = waiting[j], j + 1
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
            started[i] = (g, now, run, remaining if finished else tau * run, finished, stop)
            free[g] -= size[i]
            if finished:
                gone_at[row(i)] = stop
                if stop < end:
                    heapq.heappush(releases, (stop, g, float(size[i])))
            if log is not None:
                log.append(GpuHold((led.ids[i],), names[g], float(size[i]), now, stop, True))
        waiting = w[left].tolist()
        least = None
    busy = out.busy_gpu_seconds
    for i, (_, at, _, _, _, stop) in started.items():  # in order of start: reproducible to the last bit
        busy += float(led.scale[i]) * (stop - at)
    mine = [(row(i), v) for i, v in started.items() if row(i) < n_act]
    if mine:
        ks = np.array([k for k, _ in mine], dtype=np.int64)
        placed, finished, end_, done = out.placed.copy(), out.finished.copy(), out.end.copy(), out.done.copy()
        run_s, key, life, deficit = out.run_seconds.copy(), out.key.copy(), out.life.copy(), out.deficit.copy()
        for k, (g, _, run, did, fin, stop) in mine:
            placed[k], finished[k], done[k], run_s[k], key[k] = True, fin, did, run, (g, -1)
            end_[k] = stop
            life[k] = stop - t0 if fin else cfg.round_length
        if cfg.carry_deficits:
            deficit[ks] = next_deficit(jobs.deficit[ks], cfg.epsilon,
                                       (done[ks] / cfg.round_length) / out.fair_throughput[ks])
        out = replace(out, placed=placed, finished=finished, end=end_, done=done, run_seconds=run_s, key=key,
                      life=life, deficit=deficit, busy_gpu_seconds=busy)
    elif started:  # only jobs that arrived inside the round started
        out = replace(out, busy_gpu_seconds=busy)
    n = len(arriving)
    late = _LateStarts(index=np.asarray(arriving, dtype=np.int64), gpu=np.full(n, -1, np.int64),
                       run_seconds=np.zeros(n), done=np.zeros(n), finished=np.zeros(n, bool), stop=np.full(n, end),
                       life=np.zeros(n), fair_throughput=np.zeros(n))
    for m, i in enumerate(arriving.tolist()):
        if i in started:
            g, _, run, did, fin, stop = started[i]
            late.gpu[m], late.run_seconds[m], late.done[m], late.finished[m], late.stop[m] = g, run, did, fin, stop
        late.life[m] = late.stop[m] - led.arrival[i]
        late.fair_throughput[m] = fair_at[i]
    return out, late


# ----------------------------------------------------------------------------------------------------------
# The run: per-job ledger, co-location candidates, the loop
# ----------------------------------------------------------------------------------------------------------


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
    censored: np.ndarray  # marked censored in the trace
    ideal: np.ndarray  # iterations / fastest alone throughput on the cluster, s
    metadata: tuple[dict[str, str], ...]
    id_array: np.ndarray  # ids as an object array, to take the active jobs' ids in one step
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
                   np.zeros(n), np.full((n, 2), -2, np.int64), readonly(np.asarray(trace.censored, dtype=bool)),
                   readonly(work / np.where(fastest > 0, fastest, 1.0)), tuple(trace.metadata),
                   readonly(np.array(ids, dtype=object)))

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

    def jobs(self, act: np.ndarray, start: float) -> _JobState:
        """The executor's view of the active jobs ``act`` of the round starting at ``start``."""
        return _JobState(start, act, self.scale[act], self.work[act], self.done[act], self.prev_key[act],
                         self.deficit[act])

    def problem(self, act: np.ndarray, gpus: dict[str, int], pairs: tuple[np.ndarray, np.ndarray, np.ndarray],
                cfg: SimConfig) -> RoundProblem:
        """The round problem of the active jobs ``act``."""
        pj, pg, pt = pairs
        return RoundProblem._of_checked_arrays(
            gpu_types=tuple(gpus), capacity=np.array(list(gpus.values()), dtype=np.int64),
            job_ids=tuple(self.id_array[act].tolist()), scale=self.scale[act], throughput=self.throughput[act],
            weight=self.weight[act], deficit=self.deficit[act], pair_jobs=pj, pair_gpu=pg, pair_throughput=pt,
            epsilon=cfg.epsilon, fairness_weight=cfg.fairness_weight, job_keys=(self.key_space, act))

    def round_state(self, model: RoundModel, act: np.ndarray, start: float, cfg: SimConfig) -> RoundState:
        """What the policy sees of the round."""
        return RoundState(problem=model.problem, model=model, time=start, round_length=cfg.round_length,
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
        gone = act[out.finished]
        self.finish[gone] = out.end[out.finished]
        return gone

    def book_late(self, late: _LateStarts) -> np.ndarray:
        """Add what jobs that arrived inside a round did before its end (``starts="idle"``).

        Their time in the system counts from arrival with the fair share they had then; a job that started keeps
        its type as its previous placement (alone), so the next round charges no overhead if it stays there.
        Their deficits stay 0 (like a job waiting for its first round). Returns the jobs that finished.
        """
        i = late.index
        self.fair_time[i] += late.fair_throughput * late.life
        self.active_time[i] += late.life
        self.done[i] += late.done
        self.attained[i] += self.scale[i] * late.run_seconds
        ran = late.gpu >= 0
        np.add.at(self.received, (i[ran], late.gpu[ran]), late.run_seconds[ran])
        self.prev_key[i[ran]] = np.column_stack([late.gpu[ran], np.full(int(ran.sum()), -1, np.int64)])
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
                      metadata=dict(self.metadata[i]))
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
                f"({where})")
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


def _round_record(index: int, jobs: _JobState, alloc: Allocation, out: RoundOutcome, capacity: int,
                  cfg: SimConfig, solver_seconds: float, binding: Binding | None = None) -> RoundRecord:
    return RoundRecord(index=index, start=jobs.start, length=cfg.round_length, active_jobs=len(jobs.index),
                       placed_jobs=int(out.placed.sum()), utilization=float(alloc.utilization),
                       busy_gpu_seconds=out.busy_gpu_seconds,
                       capacity_gpu_seconds=float(capacity * cfg.round_length), solver_seconds=solver_seconds,
                       status=str(alloc.status), migrations=0 if binding is None else binding.moved_jobs,
                       split_gangs=0 if binding is None else binding.split_gangs)


def simulate(
    trace: Trace,
    cluster: str | Mapping[str, int] | Sequence[Any],
    policy: Policy | str,
    *,
    config: SimConfig | Mapping[str, Any] | None = None,
    catalog: Catalog | None = None,
    policy_options: Mapping[str, Any] | None = None,
    name: str | None = None,
    progress: bool | None = None,
    record_holds: bool = False,
    **options: Any,
) -> SimulationResult:
    """Replay ``trace`` on ``cluster`` with ``policy`` (see the module documentation).

    Parameters
    ----------
    trace : fairshare.sim.traces.Trace
        Jobs with ``id``, ``arrival``, ``model``, ``scale``, ``iterations``, ``weight``, ``tenant``.
    cluster : str, mapping or list of nodes
        ``"V100=36,P100=36,K80=36"`` or ``{"V100": 36, ...}``; or nodes (:func:`cluster_nodes`):
        ``"36xV100:8,36xP100:4"``, a ``.json`` node file or a list of ``{"id", "gpu", "gpus"}``. With nodes,
        every round's placements are bound to node ids and GPU indices (:func:`fairshare.binding.bind`, sticky
        from round to round); a job whose GPUs change pays ``restart_overhead`` and counts as a migration.
    policy : Policy or str
        A policy object or a registered name (``policy_options`` are passed to its constructor).
    config : SimConfig or mapping, optional
        Options of the run (default :class:`SimConfig()`); keyword arguments override single fields
        (``simulate(trace, cluster, "gavel", round_length=1800)``).
    catalog : fairshare.sim.catalog.Catalog, optional
        Throughput data (default: the built-in catalog).
    policy_options : mapping, optional
        Constructor options of a policy given by name.
    name : str, optional
        Display name of the policy in the result.
    progress : bool, optional
        Progress bar on stderr for runs longer than a few seconds (default on; False silences it).
    record_holds : bool
        Keep every hold of GPUs (:class:`GpuHold`) in :attr:`SimulationResult.holds`, e.g. to check that no
        type is over capacity at any time or to read when a job first started (default False: they cost memory
        on long runs).
    **options
        Fields of :class:`SimConfig`.

    Returns
    -------
    SimulationResult

    Raises
    ------
    InvalidInputError
        For an invalid option, cluster, policy name or trace (a job that fits no GPU type), before any round.
    """
    t_wall = time.perf_counter()
    cfg = SimConfig.coerce(config, **options)
    gpus, nodes = cluster_nodes(cluster)
    pol = get_policy(policy, **dict(policy_options or {})) if isinstance(policy, str) else policy
    if not isinstance(pol, Policy):
        raise InvalidInputError("policy", policy, "must be a registered name or an object with allocate(state)")
    cat = load_catalog() if catalog is None else catalog
    _check_gpu_types(cat, gpus)
    led = _Ledger.of(trace, cat, gpus)
    _check_length(led, cfg)
    watched = led.watched(cfg.stop_when_finished)
    watch_left = None if watched is None else int(watched.sum())
    pairs = _PairCache(cat, led, tuple(gpus), cfg)
    n_all, capacity = len(led.ids), sum(gpus.values())
    order = np.argsort(led.arrival, kind="stable")
    active = np.zeros(n_all, bool)                          # by ledger row
    n_active = 0
    nxt = n_finished = 0
    t = t0 = float(led.arrival[order[0]]) if n_all else 0.0
    binding: Binding | None = None                           # the last round's, with nodes
    rounds: list[RoundRecord] = []
    bar = Progress(1.0, f"simulate {name or getattr(pol, 'name', 'policy')}", enabled=progress)
    per_round = 0.0                                          # running mean of recent wall seconds per round
    size = share_classes(led.scale) if led.scale.dtype.kind == "f" else led.scale.astype(np.float64)
    holds: list[GpuHold] | None = [] if record_holds else None
    between = cfg.starts == "idle" or holds is not None
    arrivals = led.arrival[order]                           # ascending
    while n_finished < n_all and (cfg.max_rounds is None or len(rounds) < cfg.max_rounds) and watch_left != 0:
        if cfg.until is not None and t >= cfg.until:
            break
        while nxt < n_all and led.arrival[order[nxt]] <= t:
            if np.isnan(led.finish[order[nxt]]):  # not already finished between rounds
                active[order[nxt]] = True
                n_active += 1
            nxt += 1
        if not n_active:
            t = float(led.arrival[order[nxt]])
            continue
        t_round = time.perf_counter()
        act = np.flatnonzero(active)  # trace order: deterministic tie-breaking
        jobs = led.jobs(act, t)
        t_pol = time.perf_counter()
        model = build_model(led.problem(act, gpus, pairs.get(act), cfg))
        alloc = pol.allocate(led.round_state(model, act, t, cfg))
        solver_s = time.perf_counter() - t_pol
        moved = None
        if nodes:  # the second stage: node ids and GPU indices; a job whose GPUs changed restarts
            before = {} if binding is None else binding.gpus_of()
            binding = bind(alloc, nodes, binding)
            now = binding.gpus_of()
            moved = np.array([(j in before and j in now and set(now[j][1]) != set(before[j][1]))
                              for j in (led.ids[i] for i in act)], dtype=bool)
        out = _execute_round(alloc, jobs, cfg, moved)
        late = None
        if between:
            last = int(np.searchsorted(arrivals, t + cfg.round_length, side="left"))
            arriving = order[nxt:last] if cfg.starts == "idle" else order[:0]
            out, late = _between_rounds(led, jobs, alloc, out, cfg, gpus, size, arriving, holds)
        gone = led.book(act, out)
        if late is not None:
            gone = np.concatenate([gone, led.book_late(late)])
        n_finished += len(gone)
        if watched is not None and watch_left is not None:
            watch_left -= int(watched[gone].sum())
        if len(gone):
            n_active -= int(active[gone].sum())  # jobs that started and ended between rounds were not active
            active[gone] = False
        rounds.append(_round_record(len(rounds), jobs, alloc, out, capacity, cfg, solver_s, binding if nodes else None))
        t += cfg.round_length
        spent = time.perf_counter() - t_round
        per_round = spent if len(rounds) == 1 else 0.9 * per_round + 0.1 * spent
        if bar.due():
            bar.update(*_progress(led, t, t0, capacity, cfg, per_round, len(rounds), n_active, n_finished))
    bar.close(f"({len(rounds)} rounds, simulated {(t - t0) / 3600:.1f} h)")
    return SimulationResult(name or str(getattr(pol, "name", policy)), led.records(t), tuple(rounds), cfg,
                            time.perf_counter() - t_wall, gpus, dict(policy_options or {}),
                            catalog_provenance(cat, led.models, led.scale, tuple(gpus)), tuple(holds or ()))


def check_run(trace: Trace, cluster: str | Mapping[str, int] | Sequence[Any], catalog: Catalog | None = None,
              config: SimConfig | Mapping[str, Any] | None = None) -> None:
    """Raise :class:`InvalidInputError` for what :func:`simulate` would refuse before its first round.

    The cluster (its GPU types must be in the catalog), every job (a gang larger than any type, a model with
    no data at its scale on the cluster's types) and the run's length (:data:`ROUND_LIMIT`). A command line
    calls it once before starting worker processes.
    """
    cfg = SimConfig.coerce(config)
    gpus, _ = cluster_nodes(cluster)
    cat = load_catalog() if catalog is None else catalog
    _check_gpu_types(cat, gpus)
    _check_length(_Ledger.of(trace, cat, gpus), cfg)


def _progress(led: _Ledger, t: float, t0: float, capacity: int, cfg: SimConfig, per_round: float, n_rounds: int,
              n_active: int, n_finished: int) -> tuple[float, str, float]:
    """``(fraction, note, eta seconds)`` of the progress line: simulated time over an estimate of the end.

    The end is at least the lower bound :meth:`_Ledger.remaining_seconds` away (the horizon, if sooner), so
    the fraction is simulated time, not finished jobs, and the ETA is the rounds left at the recent wall time
    per round: a long tail of nearly empty rounds is counted, and priced at what such rounds cost.
    """
    left = led.remaining_seconds(t, capacity)
    if cfg.until is not None:
        left = min(left, max(0.0, cfg.until - t))
    rounds_left = left / cfg.round_length
    if cfg.max_rounds is not None:
        rounds_left = min(rounds_left, cfg.max_rounds - n_rounds)
        left = min(left, rounds_left * cfg.round_length)
    span = (t - t0) + left
    frac = (t - t0) / span if span > 0 else 1.0
    note = (f"simulated {(t - t0) / 3600:,.1f} h of at least {span / 3600:,.1f} h, round {n_rounds}, "
            f"{n_active} active, {n_finished}/{len(led.ids)} done")
    return frac, note, rounds_left * per_round


def _check_gpu_types(cat: Catalog, gpus: dict[str, int]) -> None:
    """Every GPU type of the cluster must be in the catalog; point to the catalog that has it."""
    from fairshare.sim.catalog import CATALOGS

    for g in gpus:
        if g in cat.gpu_types:
            continue
        hint = ""
        for name in CATALOGS:
            if name not in ("default",) and g in load_catalog(name).gpu_types:
                derived = any(s.derived for s in load_catalog(name).sources)
                hint = (f"; it is in the catalog {name!r}{' (derived figures)' if derived else ''}: pass "
                        f"catalog=load_catalog({name!r}) (CLI: --catalog {name})")
                break
        raise InvalidInputError("cluster", g, f"unknown GPU type (the catalog has: {', '.join(cat.gpu_types)}){hint}")


def _check_length(led: _Ledger, cfg: SimConfig) -> None:
    """Refuse a run sure to need more than :data:`ROUND_LIMIT` rounds (see there)."""
    if not len(led.ids):
        return
    j = int(np.argmax(led.ideal))
    need = float(led.ideal[j]) / cfg.round_length
    cap = need
    if cfg.max_rounds is not None:
        cap = min(cap, cfg.max_rounds)
    if cfg.until is not None:
        cap = min(cap, cfg.until / cfg.round_length)
    if cap > ROUND_LIMIT:
        raise InvalidInputError(f"trace[{j}].iterations", float(led.work[j]),
                                f"job {led.ids[j]!r} needs at least {need:.3g} rounds of {cfg.round_length:g} s "
                                f"(its work at its fastest throughput takes {led.ideal[j]:.3g} s), more than the "
                                f"limit of {ROUND_LIMIT:,} rounds per run: set a horizon (until, max_rounds; CLI "
                                "--until, --max-rounds) or a longer round length")


def catalog_provenance(cat: Catalog, models: tuple[str, ...], scales: np.ndarray,
                       gpu_types: tuple[str, ...]) -> dict[str, Any]:
    """Which sources the throughput figures of a run come from, and how many are derived.

    ``figures`` counts the distinct (model, scale, GPU type) alone entries with data for the trace's jobs on
    the cluster's types; ``derived`` those whose source is derived; ``sources`` every source behind them (or
    behind a pair entry among the trace's models on those types), each with ``kind`` measured or derived.

    Examples
    --------
    >>> from fairshare.sim.catalog import load_catalog
    >>> p = catalog_provenance(load_catalog("modern"), ("ResNet-50 (batch size 64)",), np.array([1]), ("V100", "T4"))
    >>> p["figures"], p["derived"], [s["name"] for s in p["sources"]]
    (2, 1, ['gavel-simulation', 'derived:modern-v1'])
    """
    if not len(models):
        return {"sources": [], "figures": 0, "derived": 0}
    keys = sorted({(m, max(1, math.ceil(sc))) for m, sc in zip(models, scales.tolist(), strict=True)})
    g = np.array([cat.gpu_index(x) for x in gpu_types], dtype=np.int64)
    used: set[int] = set()
    figures = derived = 0
    for m, sc in keys:
        si = cat.scale_index(sc)
        if si < 0:
            continue
        src = cat.alone_source[cat.model_index(m), si, g]
        have = (cat.alone[cat.model_index(m), si, g] > 0) & (src >= 0)
        figures += int(have.sum())
        derived += int(sum(cat.sources[k].derived for k in src[have].tolist()))
        used.update(src[have].tolist())
    mi = np.array(sorted({cat.model_index(m) for m, _ in keys}), dtype=np.int64)
    psrc = cat.pair_source[:, g][:, :, mi][:, :, :, mi]
    used.update(int(k) for k in np.unique(psrc[psrc >= 0]).tolist())
    return {"sources": [{"name": cat.sources[k].name, "kind": "derived" if cat.sources[k].derived else "measured"}
                        for k in sorted(used)], "figures": figures, "derived": derived}
