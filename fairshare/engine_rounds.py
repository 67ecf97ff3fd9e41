"""The round an :class:`~fairshare.engine.Engine` plans: job objects and carried deficits made a round problem.

Two paths build the same round. :func:`round_of_jobs` validates every job object and builds the round
document (the full path). :class:`KeptRound` keeps the validated jobs between plans
(:class:`~fairshare.kept_jobs.KeptJobs`) and validates only what changed (the incremental path). Both fill in
each job's carried deficit in the units of the round planned, the owed wait of a job the engine has not seen,
and the priorities and shortfall prices of the engine's rules, computed from the inputs the rules read
(``remaining_iterations``, ``done_iterations``, ``age_seconds``; :data:`JOB_STATE_KEYS`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from fairshare._validate import clip, is_real
from fairshare.cluster import Cluster
from fairshare.engine_config import EngineConfig
from fairshare.engine_state import as_real
from fairshare.errors import InvalidInputError
from fairshare.fair_share import fair_share
from fairshare.kept_jobs import KeptJobs
from fairshare.priority import JobHistory, NoPriority
from fairshare.problem import MAX_VALUE, RoundProblem
from fairshare.shortfall_price import NoPrice

__all__ = ["JOB_STATE_KEYS", "KeptRound", "cannot_run", "check_rule_inputs", "job_number", "owed_on_arrival",
           "refuse_deficits", "round_of_jobs", "without"]

JOB_STATE_KEYS = frozenset({"remaining_iterations", "done_iterations", "age_seconds"})
"""Keys of a job object that the engine's rules read; they are not part of the round document."""


def owed_on_arrival(age_seconds: float, epsilon: float, round_seconds: float) -> float:
    """What a job the engine has not seen is owed for its wait, in rounds: ``(1 - epsilon) * age / R``."""
    return min(MAX_VALUE, (1.0 - epsilon) * age_seconds / round_seconds)


def refuse_deficits(objs: Iterable[object], field: str) -> None:
    """Raise if a job object of ``objs`` carries a ``deficit`` (``field[k].deficit``): the engine owns them."""
    for k, job in enumerate(objs):
        if isinstance(job, Mapping):
            _refuse_deficit(job, f"{field}[{k}]")


def round_of_jobs(jobs: Sequence[Mapping[str, Any]], colocation: Sequence[Mapping[str, Any]], *, cluster: Cluster,
                  deficits: Mapping[str, float], config: EngineConfig, length: float) -> RoundProblem:
    """The round of ``jobs`` on ``cluster``, every object validated, with deficits and the rules' values.

    Parameters
    ----------
    jobs, colocation : sequence of mapping
        Job objects and candidate pairs of the round document; a job may also carry the rules' inputs
        (:data:`JOB_STATE_KEYS`).
    cluster : Cluster
        GPUs per type and nodes.
    deficits : mapping of str to float
        The carried deficit of each job the engine knows, in rounds of ``config.round_seconds``; a job not in
        it is owed its wait (:func:`owed_on_arrival`).
    config : EngineConfig
        Slack, fairness weight, round length and the rules.
    length : float
        Seconds of the round planned: the deficits are stated in its units.

    Returns
    -------
    RoundProblem

    Raises
    ------
    InvalidInputError
        As :meth:`RoundProblem.from_dict <fairshare.problem.RoundProblem.from_dict>`, and ``jobs[i].deficit``
        (the engine owns deficits), ``jobs[i].priority`` / ``jobs[i].shortfall_price`` where the config's rule
        computes them, ``jobs[i].age_seconds`` (and the other rule inputs) not a number ``>= 0``.
    """
    ruled, priced = _rules_apply(config)
    n = len(jobs)
    remaining, done, age = np.full(n, np.inf), np.zeros(n), np.zeros(n)
    docs = []
    for i, job in enumerate(jobs):
        if not isinstance(job, Mapping):
            raise InvalidInputError(f"jobs[{i}]", clip(job), "must be an object")
        _refuse_deficit(job, f"jobs[{i}]")
        remaining[i], done[i], age[i] = _rule_inputs(job, i, ruled, priced)
        doc = {k: v for k, v in job.items() if k not in JOB_STATE_KEYS}
        owed = deficits.get(str(job.get("id")))
        if owed is None:
            owed = owed_on_arrival(age[i], config.epsilon, config.round_seconds)
        doc["deficit"] = min(MAX_VALUE, owed * config.round_seconds / length)
        docs.append(doc)
    round_doc: dict[str, Any] = {"gpus": cluster.by_type(), "jobs": docs, "colocation": list(colocation),
                                 "epsilon": config.epsilon, "fairness_weight": config.fairness_weight,
                                 "round_seconds": length}
    if cluster.nodes:
        round_doc["nodes"] = list(cluster.nodes)
    problem = RoundProblem.from_dict(round_doc)
    return _with_rules(problem, JobHistory(remaining_iterations=remaining, done_iterations=done, age=age), config)


class KeptRound:
    """The jobs of the last plan, validated and kept, and the rules' inputs read from them (mutable).

    A plan keeps the jobs given (:meth:`sync`, validating only the objects that differ from the kept ones), or an
    event changes them (:meth:`apply`); :meth:`problem` then builds the round of the kept jobs. The state after
    an error is the state before it.

    Parameters
    ----------
    gpu_types : sequence of str
        The cluster's GPU types, in order (a cluster with other types needs a new object).
    """

    def __init__(self, gpu_types: Sequence[str]) -> None:
        self.jobs = KeptJobs(gpu_types)
        self._inputs: dict[str, tuple[float, float, float]] = {}  # remaining, done, age by job id

    @property
    def gpu_types(self) -> tuple[str, ...]:
        """The cluster's GPU types the jobs were validated against."""
        return self.jobs.gpu_types

    def copy(self) -> KeptRound:
        """A copy whose changes leave this one as it is (for a query)."""
        out = KeptRound(self.gpu_types)
        out.jobs = self.jobs.copy()
        return out

    def sync(self, jobs: Sequence[Mapping[str, Any]], colocation: Sequence[Mapping[str, Any]],
             capacity: np.ndarray | None = None) -> tuple[str, ...]:
        """Keep exactly ``jobs`` and ``colocation``, validating what changed; their ids in order.

        With ``capacity`` (GPUs per type), the candidate pairs of jobs that can run nowhere are dropped unread,
        as the full path drops them (:func:`without`).
        """
        if isinstance(jobs, (str, bytes, Mapping)) or not isinstance(jobs, Sequence):
            raise InvalidInputError("jobs", clip(jobs), "must be a list of job objects")
        if isinstance(colocation, (str, bytes, Mapping)) or not isinstance(colocation, Sequence):
            raise InvalidInputError("colocation", clip(colocation), "must be a list")
        refuse_deficits(jobs, "jobs")
        return self.jobs.sync(jobs, colocation, ignore=JOB_STATE_KEYS, capacity=capacity)

    def apply(self, *, departed: Sequence[str], arrived: Sequence[Mapping[str, Any]],
              changed: Sequence[Mapping[str, Any]], placed: Mapping[str, Any],
              colocation: Sequence[Mapping[str, Any]], capacity: np.ndarray) -> tuple[str, ...]:
        """Stage an event's change of the kept jobs (:meth:`KeptJobs.apply`); the job ids in order."""
        return self.jobs.apply(departed=departed, arrived=arrived, changed=changed, placed=placed,
                               colocation=colocation, ignore=JOB_STATE_KEYS, capacity=capacity)

    def accept(self) -> None:
        """Make the change staged by :meth:`apply` the kept state."""
        self.jobs.accept()

    def held(self, jobs: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        """Id -> ``age_seconds`` of the jobs the last sync or change found can run nowhere (``jobs``: in order)."""
        return {jid: job_number(jobs[i], "age_seconds", i, 0.0) for i, jid in self.jobs.nowhere}

    def problem(self, jobs: Sequence[Mapping[str, Any]], ids: Sequence[str], *, capacity: np.ndarray,
                deficits: Mapping[str, float], config: EngineConfig, length: float,
                held: Mapping[str, float] | None = None, read: set[str] | None = None) -> RoundProblem:
        """The round of the kept jobs ``ids`` less ``held``, with deficits, priorities and prices filled in.

        ``jobs``: their objects, in the order of ``ids``, from which the rules' inputs are read; with ``read``,
        only for those ids, the others as last read (an event: the jobs it did not change are as they were).
        ``capacity`` (GPUs per type), ``deficits``, ``config``, ``length``: as for :func:`round_of_jobs`.

        Raises
        ------
        InvalidInputError
            ``jobs[i].priority``, ``jobs[i].shortfall_price`` or a rule input (``jobs[i].age_seconds``), as
            :func:`round_of_jobs`; the inputs kept are then as before the call.
        """
        ruled, priced = _rules_apply(config)
        cache = dict(self._inputs) if read is not None else {}  # assigned once every input was read
        todo = range(len(ids)) if read is None else [i for i, jid in enumerate(ids) if jid in read or jid not in cache]
        values = _inputs_of(jobs, todo, ruled, priced)
        cache.update(zip([ids[i] for i in todo], map(tuple, values.tolist())))
        if read is not None and len(cache) > 2 * max(len(ids), 1024):
            live = set(ids)
            cache = {j: v for j, v in cache.items() if j in live}
        self._inputs = cache
        kept_ids = [j for j in ids if not held or j not in held]
        n = len(kept_ids)
        inputs = np.array([cache[j] for j in kept_ids], np.float64).reshape(n, 3)
        remaining, done, age = inputs[:, 0], inputs[:, 1], inputs[:, 2]
        known = np.array([deficits.get(j, -1.0) for j in kept_ids], np.float64)
        arrival = np.minimum(MAX_VALUE, (1.0 - config.epsilon) * age / config.round_seconds)
        deficit = np.minimum(MAX_VALUE, np.where(known >= 0, known, arrival) * config.round_seconds / length)
        problem = self.jobs.problem(kept_ids, capacity, deficit, config.epsilon, config.fairness_weight, length)
        return _with_rules(problem, JobHistory(remaining_iterations=remaining, done_iterations=done, age=age), config)


def cannot_run(jobs: Sequence[Mapping[str, Any]], gpus: Mapping[str, int]) -> dict[str, float]:
    """Id -> ``age_seconds`` of the well-formed jobs that can run on no GPU of ``gpus`` this round.

    Only jobs whose every field this reads is well formed count (a string id, a positive ``scale``, a
    throughput object of numbers on known types): anything else stays in the round, whose checks name it.
    """
    out: dict[str, float] = {}
    ids = Counter(job.get("id") for job in jobs if isinstance(job, Mapping) and isinstance(job.get("id"), str))
    for job in jobs:
        if not isinstance(job, Mapping) or ids[job.get("id")] != 1:  # a repeated id is the round's error
            continue
        jid, scale, tput = job.get("id"), as_real(job.get("scale")), job.get("throughput")
        if not isinstance(jid, str) or scale is None or scale <= 0 or not isinstance(tput, Mapping):
            continue
        values = {g: as_real(v) for g, v in tput.items()}
        if not values or any(v is None or v < 0 or g not in gpus for g, v in values.items()):
            continue
        need = max(1.0, scale)
        if any(v and gpus[g] >= need for g, v in values.items()):
            continue
        age = as_real(job.get("age_seconds", 0.0))
        out[jid] = age if age is not None and age >= 0 else 0.0
    return out


def without(jobs: Sequence[Mapping[str, Any]], colocation: Sequence[Mapping[str, Any]],
            held: Mapping[str, float]) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """``jobs`` and ``colocation`` without the ``held`` jobs and the candidates that name one of them."""
    kept = [j for j in jobs if not (isinstance(j, Mapping) and j.get("id") in held)]
    pairs = [c for c in colocation if not (isinstance(c, Mapping) and isinstance(c.get("jobs"), (list, tuple))
                                           and any(isinstance(i, str) and i in held for i in c["jobs"]))]
    return kept, pairs


def check_rule_inputs(objs: Sequence[object], field: str, config: EngineConfig) -> None:
    """Raise if a job object of ``objs`` has a rule input the round would refuse (``field[k].age_seconds``).

    What :meth:`KeptRound.problem` and :func:`round_of_jobs` check of each job beyond the round document: the
    ``remaining_iterations``, ``done_iterations`` and ``age_seconds`` numbers, and no ``priority`` or
    ``shortfall_price`` key where the config's rule computes it. Objects that are not mappings are left to
    the checks of the round.
    """
    ruled, priced = _rules_apply(config)
    for k, job in enumerate(objs):
        if isinstance(job, Mapping):
            _rule_inputs(job, f"{field}[{k}]", ruled, priced)


def job_number(job: Mapping[str, Any], key: str, where: int | str, default: float) -> float:
    """A non-negative number of a job object (``remaining_iterations`` may be ``inf``: unknown).

    Missing or ``None``: ``default``. ``where`` names the object in an error: a position in ``jobs`` or a name.
    """
    if key not in job or job[key] is None:
        return default
    v = job[key]
    number = isinstance(v, (int, float)) and not isinstance(v, bool)
    finite_ok = number and (is_real(v) or (key == "remaining_iterations" and v == float("inf")))
    if not (finite_ok and v >= 0):
        raise InvalidInputError(f"{_name(where)}.{key}", clip(v), "must be a number >= 0")
    return float(v)


def _rule_inputs(job: Mapping[str, Any], where: int | str, ruled: bool, priced: bool) -> tuple[float, float, float]:
    """``remaining_iterations``, ``done_iterations``, ``age_seconds`` of a job object, its rule keys checked."""
    _check_rule_keys(job, where, ruled, priced)
    return (job_number(job, "remaining_iterations", where, np.inf), job_number(job, "done_iterations", where, 0.0),
            job_number(job, "age_seconds", where, 0.0))


_INPUTS = (("remaining_iterations", np.inf), ("done_iterations", 0.0), ("age_seconds", 0.0))


def _inputs_of(jobs: Sequence[Mapping[str, Any]], positions: Sequence[int], ruled: bool, priced: bool) -> np.ndarray:
    """The rules' inputs of ``jobs[i]`` for ``i`` in ``positions``, shape ``(k, 3)``, checked as one job's are.

    Plain numbers are read and checked as arrays; anything else (a missing or ``None`` value, another type, a
    value out of range, a rule's own key) takes the per-job path, which raises the first error in job order.
    """
    sub = [jobs[i] for i in positions]
    out = np.empty((len(sub), 3))
    plain = not ((ruled and any("priority" in j for j in sub)) or (priced and any("shortfall_price" in j for j in sub)))
    for col, (key, default) in enumerate(_INPUTS):
        if not plain:
            break
        vals = [j.get(key, default) for j in sub]
        plain = all(type(v) is float or type(v) is int for v in vals)
        if plain:
            try:
                a = np.array(vals, np.float64)
            except OverflowError:  # an int beyond the float range
                plain = False
                break
            plain = bool(np.all((a >= 0) & (np.isfinite(a) | ((a == np.inf) & (default == np.inf)))))
            out[:, col] = a
    if plain:
        return out
    return np.array([_rule_inputs(jobs[i], i, ruled, priced) for i in positions], np.float64).reshape(len(sub), 3)


def _name(where: int | str) -> str:
    """The name of a job object in an error: ``jobs[3]`` for position 3, else ``where`` itself."""
    return f"jobs[{where}]" if isinstance(where, int) else where


def _rules_apply(config: EngineConfig) -> tuple[bool, bool]:
    """Whether the config's priority rule and shortfall-price rule compute anything (not ``none``)."""
    return not isinstance(config.priority, NoPriority), not isinstance(config.shortfall_price, NoPrice)


def _with_rules(problem: RoundProblem, past: JobHistory, config: EngineConfig) -> RoundProblem:
    """``problem`` with the priorities and shortfall prices of the config's rules, where they apply."""
    ruled, priced = _rules_apply(config)
    if not (ruled or priced):
        return problem
    return problem.with_prices(
        priority=config.priority.priorities(problem, past) if ruled else None,
        shortfall_price=config.shortfall_price.prices(problem, past, fair_share(problem).fair_throughput) if priced
        else None)


def _refuse_deficit(job: Mapping[str, Any], where: str) -> None:
    """Refuse a ``deficit`` key in the job object at ``where`` (``jobs[3]``)."""
    if "deficit" in job:
        raise InvalidInputError(f"{where}.deficit", job["deficit"],
                                "the engine carries deficits itself; leave this key out")


def _check_rule_keys(job: Mapping[str, Any], where: int | str, ruled: bool, priced: bool) -> None:
    """Refuse a ``priority`` (``shortfall_price``) key in a job object when the engine's rule computes it."""
    if ruled and "priority" in job:
        raise InvalidInputError(f"{_name(where)}.priority", clip(job["priority"]),
                                "the engine's priority rule computes priorities; leave this key out "
                                "or use Engine(..., priority='none')")
    if priced and "shortfall_price" in job:
        raise InvalidInputError(f"{_name(where)}.shortfall_price", clip(job["shortfall_price"]),
                                "the engine's shortfall-price rule computes prices; leave this key out "
                                "or use Engine(..., shortfall_price='none')")
