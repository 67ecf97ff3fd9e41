"""The stateful engine: round after round, carrying deficits (spec section 4), saved and loaded as JSON.

A scheduler keeps one :class:`Engine`. Each round it calls :meth:`Engine.plan` with the jobs active now
(their carried deficits are filled in from the engine's state), runs the placement, then calls
:meth:`Engine.commit` with the progress each job actually received (or nothing, to take the plan as
delivered). The deficit update is ``D_j <- max(0, D_j + (1 - epsilon) - rho_j)`` for every job of the round;
jobs that arrive start owing the fair progress of their wait (``age_seconds``), jobs that are not in a round are
dropped (finished).

With ``options={"warm_start": True}`` (mode ``fast``) the engine keeps a
:class:`~fairshare.methods.warm.WarmStart` between :meth:`Engine.plan` calls, so that each round's LP starts
from the previous round's GPU prices and, when values moved little, its basis (:mod:`fairshare.methods.warm`).
The LP optimum is the cold one; a placement can differ from the cold one only where the LP has several
optima or the polish runs. The warm state is not saved (a loaded engine's first plan is cold).

Every plan is committed at most once, and only the newest plan can be committed (:meth:`Engine.commit`).
:meth:`Engine.save` writes the state atomically and durably (see :meth:`Engine.save`), so a scheduler that
restarts or is killed loses no fairness history; :meth:`Engine.load` accepts exactly the state schema of
``docs/json-formats.md`` (:mod:`fairshare.engine_state`) and reports anything else as
:class:`~fairshare.errors.InvalidInputError` naming the field (``state.round_index``) or the file.

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

import dataclasses
import json
import os
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Generic, TypeVar, overload

import numpy as np

from fairshare._io import write_atomically
from fairshare._validate import clip, is_real
from fairshare.allocate import SolveOptions, allocate
from fairshare.allocation import Allocation, Status
from fairshare.cluster import Binding, Cluster, Node
from fairshare.engine_config import EngineConfig
from fairshare.engine_state import (
    DEFAULT_PRIORITY,
    DEFAULT_SHORTFALL_PRICE,
    MAX_ROUND_INDEX,
    STATE_KEYS,
    STATE_VERSION,
    EngineState,
    as_real,
    check_deficits,
    check_round_index,
    check_round_seconds,
    load_state,
    state_from_dict,
    state_to_dict,
)
from fairshare.errors import InvalidInputError
from fairshare.fair_share import fair_share, next_deficit
from fairshare.kept_jobs import KeptJobs
from fairshare.methods.kept import KeptLP
from fairshare.methods.warm import WarmStart
from fairshare.priority import JobHistory, NoPriority, PriorityRule
from fairshare.problem import MAX_VALUE, RoundProblem
from fairshare.running import DEFAULT_ROUND_SECONDS, MAX_SECONDS
from fairshare.shortfall_price import NoPrice, ShortfallPriceRule

__all__ = ["MAX_ROUND_INDEX", "STATE_KEYS", "STATE_VERSION", "Engine"]

JOB_STATE_KEYS = frozenset({"remaining_iterations", "done_iterations", "age_seconds"})
"""Keys of a job object that the engine's rules read; they are not part of the round document."""

_KEEP_RECENT = 4  # committed and superseded plans remembered to explain a refused commit


_T = TypeVar("_T")


class _Setting(Generic[_T]):
    """An :class:`Engine` setting that reads one field of ``engine.config``.

    Assigning a value replaces the config with a new one, checked by
    :class:`~fairshare.engine_config.EngineConfig` (``engine.epsilon = 0.2``).
    """

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc
        self._name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, engine: None, owner: type | None = None) -> _Setting[_T]: ...
    @overload
    def __get__(self, engine: Engine, owner: type | None = None) -> _T: ...

    def __get__(self, engine: Engine | None, owner: type | None = None) -> _T | _Setting[_T]:
        if engine is None:
            return self
        value: _T = getattr(engine.config, self._name)
        return value

    def __set__(self, engine: Engine, value: Any) -> None:
        engine.config = dataclasses.replace(engine.config, **{self._name: value})


class Engine:
    """Round-after-round allocation with carried deficits.

    Every argument is checked here, with the rules of the state document (``docs/json-formats.md``):
    a bad value raises at construction, never at a later :meth:`plan` or in a saved file. The settings (``mode``
    to ``incremental``) are one frozen :class:`~fairshare.engine_config.EngineConfig`, :attr:`config`; assigning
    one of them (``engine.epsilon = 0.2``) or a whole config replaces it with a new, checked one.

    Parameters
    ----------
    gpus : mapping of str to int
        The cluster: GPU type (a non-empty string) -> whole GPUs, an integer from 0 to
        :data:`~fairshare.cluster.MAX_GPUS`. The order of the types is kept, in saved states too. May be
        replaced between rounds (``engine.gpus = {...}``); :attr:`gpus` itself is read-only.
    mode : {"fast", "exact", "lp"}
        Solve mode of every round.
    epsilon : float
        Fairness slack of every round, in ``[0, 1)``.
    fairness_weight : float
        Price of weighted shortfall, ``0 < lambda <= MAX_VALUE``.
    options : SolveOptions or mapping, optional
        Solver options; each must apply to ``mode`` (see :meth:`SolveOptions.for_mode`).
    deficits : mapping of str to float, optional
        Initial carried deficits (e.g. from another system): job id -> number in ``[0, MAX_VALUE]``.
    round_index : int
        Rounds committed so far, ``0 <= round_index <= MAX_ROUND_INDEX``.
    nodes : sequence of Node or of node objects, optional
        The cluster's nodes (``{"id", "gpu", "gpus"}``); the nodes of each type must hold exactly ``gpus``
        of it. With nodes, every plan binds its placements to node ids and GPU indices (``alloc.binding``),
        and the binding of the last committed plan is kept (in saved states too) so that placements that did
        not change keep their GPUs (:func:`fairshare.binding.bind`).
    shortfall_price : str, rule or callable
        The shortfall-price rule (:mod:`fairshare.shortfall_price`): ``"finish-time"`` (default: a round of a
        job's shortfall priced in units of its fair finish time; it reads the jobs' ``remaining_iterations``
        and ``done_iterations``, and a job without them gets 1) or ``"none"`` (every ``f_j = 1``).
    round_seconds : float
        Length of a round (default 360 s): the unit of the deficits. A plan for part of a round (an event,
        :meth:`plan` with ``round_seconds``) counts its progress and deficits in proportion.
    incremental : bool
        Keep the last plan's jobs and LP between plans (default ``True``; ``False``: every plan validates and
        builds its whole round): a plan validates only the jobs and candidate pairs that are new or changed
        since the last plan, and mode ``fast`` changes the last plan's LP, kept in HiGHS, into the new one
        instead of building it again (:mod:`fairshare.methods.kept`; not with the option ``warm_start``, which
        keeps its own state). The LP optimum is the one a cold plan finds; the placement can differ only where
        the LP has several optima (or, when the polish runs, among placements within its gap). Neither is
        saved (a loaded engine's first plan is cold). Not with ``nodes`` (their plans take the full path).

    Raises
    ------
    InvalidInputError
        For any invalid argument, naming it (``epsilon``, ``gpus.V100``, ``deficits.j3``,
        ``options.threads``).

    Examples
    --------
    >>> Engine({"V100": 2}, epsilon=float("nan"))
    Traceback (most recent call last):
    ...
    fairshare.errors.InvalidInputError: `epsilon` = nan: must be a number in [0, 1)
    """

    def __init__(self, gpus: Mapping[str, int], *, mode: str = "fast", epsilon: float = 0.0,
                 fairness_weight: float = 100.0, options: SolveOptions | Mapping[str, Any] | None = None,
                 deficits: Mapping[str, float] | None = None, round_index: int = 0,
                 priority: str | PriorityRule | Callable[..., Any] | None = DEFAULT_PRIORITY,
                 nodes: Sequence[Node | Mapping[str, Any]] | None = None,
                 shortfall_price: str | ShortfallPriceRule | Callable[..., Any] | None = DEFAULT_SHORTFALL_PRICE,
                 round_seconds: float = DEFAULT_ROUND_SECONDS, incremental: bool = True) -> None:
        self._config = EngineConfig(mode=mode, epsilon=epsilon, fairness_weight=fairness_weight, options=options,
                                    priority=priority, shortfall_price=shortfall_price, round_seconds=round_seconds,
                                    incremental=incremental)
        self._set_cluster(Cluster.of_counts(gpus, "gpus"))
        self._deficits = check_deficits({} if deficits is None else deficits, "deficits")
        self._round_index = check_round_index(round_index, "round_index")
        self._reset_plans()
        self._set_cluster(self._cluster.with_nodes(nodes, "nodes"))
        self._binding: Binding | None = None

    def _reset_plans(self) -> None:
        """No plan pending, none remembered, nothing kept between plans (a new or a loaded engine)."""
        self._pending: Allocation | None = None
        self._pending_epsilon = self._config.epsilon
        self._pending_fraction = 1.0  # the pending plan's length over a round's
        self._pending_owed: dict[str, float] = {}  # what each job of the pending plan owed, in rounds
        self._recent: deque[tuple[Allocation, str]] = deque(maxlen=_KEEP_RECENT)
        self._warm = WarmStart()  # fast with warm_start: what the last plan leaves for the next (not saved)
        self._kept_lp = KeptLP()  # incremental, fast: the last plan's LP, kept in HiGHS (not saved)
        self._kept_jobs: KeptJobs | None = None  # incremental: the jobs of the last plan, validated (not saved)
        self._rule_inputs: dict[str, tuple[float, float, float]] = {}  # incremental: remaining, done, age by job
        self._pending_held: list[str] = []  # jobs of the pending plan that could run nowhere (held_out)
        self._pending_seconds = 0.0  # length of the round the pending plan was made for
        self._last_round: tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]] | None = None  # for event()

    def _set_cluster(self, cluster: Cluster) -> None:
        """The cluster, and its views ``_gpus`` (type -> GPUs) and ``_nodes``."""
        self._cluster, self._gpus, self._nodes = cluster, cluster.by_type(), cluster.nodes

    # ------------------------------------------------------------------ settings (checked on assignment)
    @property
    def cluster(self) -> Cluster:
        """The cluster as one value: :attr:`gpus` and :attr:`nodes` (:class:`~fairshare.cluster.Cluster`)."""
        return self._cluster

    @property
    def gpus(self) -> Mapping[str, int]:
        """The cluster, GPU type -> whole GPUs (read-only; assign a new mapping to change it)."""
        return MappingProxyType(self._gpus)

    @gpus.setter
    def gpus(self, value: Mapping[str, int]) -> None:
        self._set_cluster(Cluster.of_counts(value, "gpus").with_nodes(self._nodes, "gpus"))

    @property
    def nodes(self) -> tuple[Node, ...]:
        """The cluster's nodes (empty: placements stay at the type level).

        Assigning nodes sets :attr:`gpus` to their totals per type (types in order of first appearance);
        assign ``()`` to drop them.
        """
        return self._nodes

    @nodes.setter
    def nodes(self, value: Sequence[Node | Mapping[str, Any]] | None) -> None:
        c = self._cluster  # a type whose last node went stays at 0 GPUs: its jobs wait (held_out), not refused
        self._set_cluster(Cluster.of_nodes(value, "nodes", types=c.gpu_types) if value else c.with_nodes(None))

    @property
    def held_out(self) -> tuple[str, ...]:
        """Jobs of the pending plan that could run on no GPU of the cluster this round, in the order given.

        A job whose throughputs are all on types with no GPUs now (the last node of its type failed;
        ``gpus`` set a type to 0), or with fewer GPUs than its gang, is left out of the round's solve instead
        of failing the whole round: it is not in the allocation, and :meth:`commit` grows its deficit as for
        a job that got nothing (``D + 1 - epsilon``). Empty when every job could run.
        """
        return tuple(self._pending_held)

    @property
    def binding(self) -> Binding | None:
        """The binding of the last committed plan (the ``previous`` of the next plan's binding), if any."""
        return self._binding

    @property
    def config(self) -> EngineConfig:
        """How every round is planned (:class:`~fairshare.engine_config.EngineConfig`).

        Assign a new config to change several settings at once (``engine.config = replace(engine.config,
        mode="exact", options={})``); the settings below read and replace one field of it. Changing
        ``incremental`` drops what was kept between plans.
        """
        return self._config

    @config.setter
    def config(self, value: EngineConfig) -> None:
        if not isinstance(value, EngineConfig):
            raise InvalidInputError("config", clip(value), "must be an EngineConfig")
        if value.incremental != self._config.incremental:
            self._kept_lp.reset()
            self._kept_jobs = None
        self._config = value

    incremental: _Setting[bool] = _Setting("Plans keep the last plan's jobs and LP (see the class documentation).")

    @property
    def last_jobs(self) -> tuple[Mapping[str, Any], ...]:
        """The job objects of the last plan, as given (after :meth:`event`: with their ``current`` placements)."""
        return tuple(self._last_round[0]) if self._last_round is not None else ()

    @property
    def last_colocation(self) -> tuple[Mapping[str, Any], ...]:
        """The candidate pairs of the last plan, as given."""
        return tuple(self._last_round[1]) if self._last_round is not None else ()

    @property
    def pending_seconds(self) -> float | None:
        """Length in seconds of the round the pending plan was made for (``None``: no plan pending)."""
        return self._pending_seconds if self._pending is not None else None

    mode: _Setting[str] = _Setting("""Solve mode of every round; the options must apply to a new mode.""")

    epsilon: _Setting[float] = _Setting("""Fairness slack of every round, in ``[0, 1)``.""")

    fairness_weight: _Setting[float] = _Setting("""Price of weighted shortfall (``lambda``) of every round.""")

    options: _Setting[SolveOptions] = _Setting("""Solver options of every round (checked against :attr:`mode`).""")

    @property
    def round_index(self) -> int:
        """Rounds committed so far."""
        return self._round_index

    @round_index.setter
    def round_index(self, value: int) -> None:
        self._round_index = check_round_index(value, "round_index")

    round_seconds: _Setting[float] = _Setting("""Length of a round, the unit of the deficits (seconds).""")

    @property
    def deficits(self) -> dict[str, float]:
        """Carried deficit of every job the engine knows (a copy)."""
        return dict(self._deficits)

    # ------------------------------------------------------------------ rounds
    def problem(self, jobs: Sequence[Mapping[str, Any]], colocation: Sequence[Mapping[str, Any]] = (), *,
                round_seconds: float | None = None) -> RoundProblem:
        """The round problem for ``jobs`` with carried deficits filled in.

        ``jobs`` are job objects of the round document (spec section 6); a ``deficit`` key in them is an
        error (the engine owns deficits). Running jobs may carry their ``current`` placement and
        ``restart_seconds`` (spec section 11), so that moving them must be worth their restart. They may also
        carry what the rules read: ``remaining_iterations`` (iterations left; missing: unknown, priority and
        shortfall price 1), ``done_iterations`` (default 0) and ``age_seconds`` (seconds since the job arrived,
        default 0). A job the engine has not seen yet starts owing the fair progress of the time it waited,
        ``(1 - epsilon) * age_seconds / round_seconds`` (a job that arrives to a full cluster is owed from its
        arrival, not from its first round). With a rule other than ``none`` a ``priority`` (or
        ``shortfall_price``) key is an error: the rule computes them.

        ``round_seconds``: the length of the round planned (default :attr:`round_seconds`); a shorter one (a
        plan at an event, for the rest of a round) states the carried deficits in its own units,
        ``D_j * round_seconds_engine / round_seconds``.
        """
        length = self._config.round_seconds if round_seconds is None else check_round_seconds(round_seconds,
                                                                                        "round_seconds")
        if self._live():  # a query: on a copy of the kept jobs, which stay as the last plan left them
            kept = self._kept_jobs
            self._kept_jobs = None if kept is None else kept.copy()
            try:
                ids = self._sync(jobs, colocation)
                return self._kept_problem(jobs, ids, length, keep=False)
            finally:
                self._kept_jobs = kept
        docs = []
        n = len(jobs)
        remaining, done, age = np.full(n, np.inf), np.zeros(n), np.zeros(n)
        ruled = not isinstance(self._config.priority, NoPriority)
        priced = not isinstance(self._config.shortfall_price, NoPrice)
        for i, job in enumerate(jobs):
            if not isinstance(job, Mapping):
                raise InvalidInputError(f"jobs[{i}]", clip(job), "must be an object")
            if "deficit" in job:
                raise InvalidInputError(f"jobs[{i}].deficit", job["deficit"],
                                        "the engine carries deficits itself; leave this key out")
            _check_rule_keys(job, i, ruled, priced)
            remaining[i] = _job_number(job, "remaining_iterations", i, np.inf)
            done[i] = _job_number(job, "done_iterations", i, 0.0)
            age[i] = _job_number(job, "age_seconds", i, 0.0)
            d = {k: v for k, v in job.items() if k not in JOB_STATE_KEYS}
            jid = str(job.get("id"))
            owed = self._deficits.get(jid)
            if owed is None:  # a newcomer is owed the time it waited
                owed = min(MAX_VALUE, (1.0 - self._config.epsilon) * age[i] / self._config.round_seconds)
            d["deficit"] = min(MAX_VALUE, owed * self._config.round_seconds / length)
            docs.append(d)
        round_doc: dict[str, Any] = {"gpus": dict(self._gpus), "jobs": docs, "colocation": list(colocation),
                                     "epsilon": self._config.epsilon, "fairness_weight": self._config.fairness_weight,
                                     "round_seconds": length}
        if self._nodes:
            round_doc["nodes"] = list(self._nodes)
        problem = RoundProblem.from_dict(round_doc)
        if not (ruled or priced):
            return problem
        return self._with_rules(problem, JobHistory(remaining_iterations=remaining, done_iterations=done, age=age),
                                ruled=ruled, priced=priced)

    def _with_rules(self, problem: RoundProblem, past: JobHistory, *, ruled: bool, priced: bool) -> RoundProblem:
        """``problem`` with the priorities and shortfall prices of the config's rules, where they apply."""
        cfg = self._config
        return problem.with_prices(
            priority=cfg.priority.priorities(problem, past) if ruled else None,
            shortfall_price=cfg.shortfall_price.prices(problem, past, fair_share(problem).fair_throughput) if priced
            else None)

    def plan(self, jobs: Sequence[Mapping[str, Any]], colocation: Sequence[Mapping[str, Any]] = (), *,
             round_seconds: float | None = None) -> Allocation:
        """Solve the next round for the active ``jobs`` (and candidate pairs) with their carried deficits.

        The result becomes the *pending* plan, the one :meth:`commit` accepts; an earlier plan that was not
        committed is superseded. If planning raises, the pending plan is unchanged.

        ``round_seconds``: the length of the round planned, default :attr:`round_seconds`. A scheduler that
        plans again at an event (an arrival, a finish, a node lost) plans the rest of the current round: it
        commits the running plan with the progress delivered so far and the time it ran
        (``commit(progress=..., seconds=...)``), then plans with ``round_seconds`` = the time left, giving the
        running jobs' ``current`` placement and ``restart_seconds`` so that only moves worth their restart
        are made (:meth:`problem`).
        """
        if self._live():
            if round_seconds is not None:
                round_seconds = check_round_seconds(round_seconds, "round_seconds")
            ids = self._sync(jobs, colocation, np.array(list(self._gpus.values()), np.float64))
            return self._plan_kept(jobs, colocation, ids, round_seconds)
        held = _cannot_run(jobs, self._gpus)
        given, pairs = jobs, colocation
        if held:
            jobs, colocation = _without(jobs, colocation, held)
        problem = self.problem(jobs, colocation, round_seconds=round_seconds)
        return self._pend(problem, held, given, pairs, round_seconds)

    def _plan_kept(self, jobs: Sequence[Mapping[str, Any]], colocation: Sequence[Mapping[str, Any]],
                   ids: Sequence[str], round_seconds: float | None, read: set[str] | None = None) -> Allocation:
        """:meth:`plan` of the kept jobs ``ids``.

        ``jobs``: their objects, in that order; ``read``: as for :meth:`_kept_problem`.
        """
        assert self._kept_jobs is not None
        length = self._config.round_seconds if round_seconds is None else float(round_seconds)
        held = {jid: _job_number(jobs[i], "age_seconds", i, 0.0) for i, jid in self._kept_jobs.nowhere}
        problem = self._kept_problem(jobs, ids, length, held, read)
        return self._pend(problem, held, jobs, colocation, round_seconds)

    def _pend(self, problem: RoundProblem, held: Mapping[str, float], jobs: Sequence[Mapping[str, Any]],
              colocation: Sequence[Mapping[str, Any]], round_seconds: float | None) -> Allocation:
        """Solve ``problem`` and make it the pending plan (``jobs``, ``colocation``: as given, for :meth:`event`)."""
        previous = self._binding if self._nodes and self._config.mode != "lp" else None  # only where it applies
        warm: WarmStart | KeptLP | None = self._warm if self._config.options.warm_start else None
        if warm is None and self._config.incremental and self._config.mode == "fast":
            warm = self._kept_lp
        alloc = allocate(problem, mode=self._config.mode, options=self._config.options, previous_binding=previous,
                         warm=warm)
        if self._pending is not None:
            self._recent.append((self._pending, "superseded"))
        self._pending = alloc
        self._last_round = (list(jobs), list(colocation))
        self._pending_seconds = self._config.round_seconds if round_seconds is None else float(round_seconds)
        self._pending_epsilon = problem.epsilon
        fraction = self._pending_seconds / self._config.round_seconds
        self._pending_fraction = fraction
        self._pending_owed = dict(zip(problem.job_ids, (problem.deficit * fraction).tolist()))
        self._pending_held = list(held)
        for jid, age in held.items():  # what problem() would carry for them, in the same units
            owed = self._deficits.get(jid)
            if owed is None:
                owed = min(MAX_VALUE, (1.0 - self._config.epsilon) * age / self._config.round_seconds)
            self._pending_owed[jid] = min(MAX_VALUE, owed / fraction) * fraction
        return alloc

    def _live(self) -> bool:
        """Plans take the incremental path (kept jobs): ``incremental`` and no nodes."""
        return self._config.incremental and not self._nodes

    def _sync(self, jobs: Sequence[Mapping[str, Any]], colocation: Sequence[Mapping[str, Any]],
              capacity: np.ndarray | None = None) -> tuple[str, ...]:
        """Keep ``jobs`` and ``colocation`` in the kept jobs (validating what changed); their ids in order.

        With ``capacity``, candidate pairs of jobs that can run nowhere are dropped unread (as :meth:`plan` does).
        """
        if isinstance(jobs, (str, bytes, Mapping)) or not isinstance(jobs, Sequence):
            raise InvalidInputError("jobs", clip(jobs), "must be a list of job objects")
        if isinstance(colocation, (str, bytes, Mapping)) or not isinstance(colocation, Sequence):
            raise InvalidInputError("colocation", clip(colocation), "must be a list")
        types = tuple(self._gpus)
        if self._kept_jobs is None or self._kept_jobs.gpu_types != types:
            self._kept_jobs = KeptJobs(types)
        ids = self._kept_jobs.sync(jobs, colocation, ignore=JOB_STATE_KEYS, capacity=capacity)
        for i, job in enumerate(jobs):
            if "deficit" in job:
                raise InvalidInputError(f"jobs[{i}].deficit", job["deficit"],
                                        "the engine carries deficits itself; leave this key out")
        return ids

    def _kept_problem(self, jobs: Sequence[Mapping[str, Any]], ids: Sequence[str], length: float,
                      held: Mapping[str, float] | None = None, read: set[str] | None = None,
                      keep: bool = True) -> RoundProblem:
        """The round of the kept jobs ``ids`` (less ``held``), with deficits, priorities and prices filled in.

        The rules' inputs (``remaining_iterations``, ``done_iterations``, ``age_seconds``) are read from
        ``jobs`` (in the order of ``ids``); with ``read``, only for those ids, the others as last read (an event:
        the jobs it did not change are as they were). ``keep=False``: a query, which leaves what was read as it was.
        """
        assert self._kept_jobs is not None
        ruled = not isinstance(self._config.priority, NoPriority)
        priced = not isinstance(self._config.shortfall_price, NoPrice)
        cache = self._rule_inputs if keep else {}
        if read is None and keep:
            cache = self._rule_inputs = {}
        for i, jid in enumerate(ids):
            if read is not None and jid not in read and jid in cache:
                continue
            job = jobs[i]
            _check_rule_keys(job, i, ruled, priced)
            cache[jid] = (_job_number(job, "remaining_iterations", i, np.inf) if "remaining_iterations" in job
                          else np.inf,
                          _job_number(job, "done_iterations", i, 0.0) if "done_iterations" in job else 0.0,
                          _job_number(job, "age_seconds", i, 0.0) if "age_seconds" in job else 0.0)
        if read is not None and len(cache) > 2 * max(len(ids), 1024):
            live = set(ids)
            cache = self._rule_inputs = {j: v for j, v in cache.items() if j in live}
        kept_ids = [j for j in ids if not held or j not in held]
        n = len(kept_ids)
        inputs = np.array([cache[j] for j in kept_ids], np.float64).reshape(n, 3)
        remaining, done, age = inputs[:, 0], inputs[:, 1], inputs[:, 2]
        deficits = self._deficits
        known = np.array([deficits.get(j, -1.0) for j in kept_ids], np.float64)
        cfg = self._config
        owed = np.where(known >= 0, known, np.minimum(MAX_VALUE, (1.0 - cfg.epsilon) * age / cfg.round_seconds))
        deficit = np.minimum(MAX_VALUE, owed * cfg.round_seconds / length)
        problem = self._kept_jobs.problem(kept_ids, np.array(list(self._gpus.values())), deficit, cfg.epsilon,
                                          cfg.fairness_weight, length)
        if not (ruled or priced):
            return problem
        return self._with_rules(problem, JobHistory(remaining_iterations=remaining, done_iterations=done, age=age),
                                ruled=ruled, priced=priced)

    def commit(self, allocation: Allocation | None = None, *, progress: Mapping[str, float] | None = None,
               seconds: float | None = None) -> dict[str, float]:
        """Apply the deficit update for a round that was executed.

        Only the pending plan, the allocation the last :meth:`plan` returned, can be committed, once. Refused
        (:class:`~fairshare.errors.InvalidInputError` on field ``allocation``, state unchanged): a plan
        that was already committed (it would count the round twice), an older plan after a newer
        :meth:`plan` call, and an allocation this engine did not plan (a copy, ``Allocation.from_dict``, a
        plain :func:`~fairshare.allocate` call). To record a round that ran differently from the plan
        (an older placement kept running, a straggler), commit the pending plan with the progress actually
        delivered in ``progress``. A pending plan does not survive :meth:`save` and :meth:`load`: plan
        again after a restart.

        Parameters
        ----------
        allocation : Allocation, optional
            The pending plan (default: the pending plan).
        progress : mapping of job id to float, optional
            Progress ``rho_j`` (in fair-share units, ``tau_j / Tfair_j``, finite and ``>= 0``) each job
            actually received; jobs not listed are taken as planned. Use it when a job ran shorter or slower
            than planned.
        seconds : float, optional
            How long the plan ran, if it was cut short by an event (default: the length it was planned for).
            The deficits then change by that part of a round only:
            ``D_j <- (t / R) * max(0, D_j R / t + (1 - epsilon) - rho_j)`` for ``t`` seconds of a round of ``R``
            seconds (:attr:`round_seconds`), with ``rho_j`` the progress over those ``t`` seconds.

        Returns
        -------
        dict
            The new deficits of the round's jobs. Jobs not in the round are forgotten.

        Raises
        ------
        InvalidInputError
            ``allocation``: nothing pending or not the pending plan; ``progress.<id>``: a job not in the
            round, or a progress that is not a finite number ``>= 0``. The plan stays pending after an error.
        """
        alloc = self._pending if allocation is None else allocation
        if alloc is None:
            last = " (the last plan was already committed)" if self._recent and self._recent[-1][1] == "committed" \
                else ""
            raise InvalidInputError("allocation", None, f"no round planned{last}: call plan() first")
        if alloc is not self._pending:
            raise InvalidInputError("allocation", _describe(alloc), self._why_not_pending(alloc))
        if alloc.status == Status.NO_SOLUTION:
            rho = dict.fromkeys(alloc.job_ids, 0.0)
        else:
            rho = {j: float(alloc.jobs.progress[i]) for i, j in enumerate(alloc.job_ids)}
        rho.update(dict.fromkeys(self._pending_held, 0.0))  # jobs that could run nowhere got nothing
        if progress is not None and not isinstance(progress, Mapping):
            raise InvalidInputError("progress", clip(progress), "must be a mapping of job id -> progress")
        for jid, r in (progress or {}).items():
            if jid not in rho:
                raise InvalidInputError(f"progress.{jid}", clip(r), "not a job of this round")
            value = as_real(r)
            if value is None or value < 0:
                raise InvalidInputError(f"progress.{jid}", clip(r), "must be a finite number >= 0")
            rho[jid] = value
        fraction = self._pending_fraction
        if seconds is not None:
            value = as_real(seconds)
            if value is None or not 0 < value <= MAX_SECONDS:
                raise InvalidInputError("seconds", clip(seconds),
                                        f"must be a number of seconds in (0, {MAX_SECONDS:.0f}]")
            fraction = value / self._config.round_seconds
        ids = list(rho)
        # what each job owed when the plan was made (a newcomer's wait included), in units of the part of a round
        # that ran
        owed = np.array([self._pending_owed.get(j, 0.0) for j in ids])
        start = np.minimum(MAX_VALUE, owed / fraction)
        nxt = fraction * next_deficit(start, self._pending_epsilon, np.array([rho[j] for j in ids]))
        new = dict(zip(ids, nxt.tolist()))
        self._deficits = new
        self._round_index += 1
        self._pending = None
        self._pending_held = []
        self._recent.append((alloc, "committed"))
        if alloc.binding is not None:
            self._binding = alloc.binding
        return dict(new)

    def event(self, *, seconds: float, arrived: Sequence[Mapping[str, Any]] = (), departed: Sequence[str] = (),
              changed: Sequence[Mapping[str, Any]] = (), colocation: Sequence[Mapping[str, Any]] = (),
              progress: Mapping[str, float] | None = None, gpus: Mapping[str, int] | None = None) -> Allocation:
        """Plan again at an event (jobs arrived, jobs finished, GPUs lost or added): the rest of the round.

        The pending plan ran for ``seconds`` of the round it was made for: it is committed for that time
        (``commit(progress=progress, seconds=seconds)``), and the rest of that round is planned with the
        jobs of the last plan, less ``departed`` (ids), plus ``arrived`` (job objects as for :meth:`plan`) and
        the candidate pairs of the last plan that name no departed job, plus ``colocation``. ``changed``: new
        objects for jobs of the last plan (matched by ``id``; e.g. with ``remaining_iterations`` counted down).
        Each job's
        ``current`` placement is set from the committed plan (where it runs now; a job the plan left out is not
        running), so that a move must be worth the job's ``restart_seconds``. ``gpus``: the cluster after the
        event, if it changed (a node lost or added; as assigning :attr:`gpus`).

        With ``incremental=True`` only the arrived jobs, the new pairs and the jobs whose placement changed are
        validated, and in mode ``fast`` the kept LP is changed rather than built again.

        Raises
        ------
        InvalidInputError
            ``seconds``: not in ``(0, length of the pending plan)`` (at the end of a round, :meth:`commit` and
            :meth:`plan` the next one); ``departed`` or ``changed``: a job that is not a job of the last plan; as
            :meth:`commit` and :meth:`plan` for the rest. Nothing is committed when the arguments are invalid.
        """
        if self._pending is None or self._last_round is None:
            raise InvalidInputError("event", None, "no plan pending: an event re-plans the pending plan's round; "
                                    "call plan() first")
        length = self._pending_seconds
        value = as_real(seconds)
        if value is None or not 0 < value < length:
            raise InvalidInputError("seconds", clip(seconds), f"must be a number of seconds in (0, {length:g}), the "
                                    "time the pending plan ran (at its end, commit() and plan() the next round)")
        if isinstance(departed, (str, bytes)) or not isinstance(departed, Sequence):
            raise InvalidInputError("departed", clip(departed), "must be a list of job ids")
        jobs, pairs = self._last_round
        known = {j.get("id") for j in jobs}
        for k, jid in enumerate(departed):
            if jid not in known:
                raise InvalidInputError(f"departed[{k}]", clip(jid), "not a job of the last plan")
        for what, given in (("arrived", arrived), ("changed", changed)):
            if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Sequence):
                raise InvalidInputError(what, clip(given), "must be a list of job objects")
        replace_by: dict[str, Mapping[str, Any]] = {}
        for k, job in enumerate(changed):
            name: Any = job.get("id") if isinstance(job, Mapping) else None
            if name not in known or name in departed:
                raise InvalidInputError(f"changed[{k}].id", clip(name), "not a job of the last plan")
            replace_by[name] = job
        if isinstance(colocation, (str, bytes, Mapping)) or not isinstance(colocation, Sequence):
            raise InvalidInputError("colocation", clip(colocation), "must be a list")
        new_cluster = None if gpus is None else Cluster.of_counts(gpus, "gpus").with_nodes(self._nodes, "gpus")
        alloc = self._pending
        where: dict[str, dict[str, str]] = {}
        for p in alloc.placements:
            if len(p.jobs) == 2:
                where[p.jobs[0]] = {"gpu": p.gpu, "partner": p.jobs[1]}
                where[p.jobs[1]] = {"gpu": p.gpu, "partner": p.jobs[0]}
            else:
                for name in p.jobs:
                    where[name] = {"gpu": p.gpu}
        gone = set(departed)
        now: list[Mapping[str, Any]] = []
        placed: dict[str, Any] = {}
        for job in jobs:
            key: Any = job.get("id")
            if key in gone:
                continue
            job = replace_by.get(key, job)
            cur = where.get(key)
            if cur is not None and cur.get("partner") in gone:
                cur = {"gpu": cur["gpu"]}
            if job.get("current") != cur:
                job = {k: v for k, v in job.items() if k != "current"}
                if cur is not None:
                    job["current"] = cur
                if key not in replace_by:
                    placed[key] = cur
            now.append(job)
        now.extend(_with_current(j, None) for j in arrived)  # a job that arrives is not running yet
        cols = [c for c in pairs if not any(j in gone for j in c.get("jobs", ()))] + list(colocation)
        rest = length - value
        new_gpus = self._gpus if new_cluster is None else new_cluster.by_type()
        kept = self._kept_jobs if self._live() else None
        if kept is not None and tuple(new_gpus) == kept.gpu_types:
            for name, objs in (("arrived", arrived), ("changed", changed)):
                for k, job in enumerate(objs):
                    if isinstance(job, Mapping) and "deficit" in job:
                        raise InvalidInputError(f"{name}[{k}].deficit", job["deficit"],
                                                "the engine carries deficits itself; leave this key out")
            # only the event's jobs and pairs are validated (staged, so that nothing changes if one is wrong)
            ids = kept.apply(departed=list(gone), arrived=[_with_current(j, None) for j in arrived],
                             changed=[j for j in now if j.get("id") in replace_by], placed=placed,
                             colocation=colocation, ignore=JOB_STATE_KEYS,
                             capacity=np.array(list(new_gpus.values()), np.float64))
            self.commit(alloc, progress=progress, seconds=value)
            kept.accept()
            self._set_cluster(new_cluster or self._cluster)
            read = {str(j.get("id")) for j in changed} | {str(j.get("id")) for j in arrived}
            return self._plan_kept(now, cols, ids, rest, read)
        if gpus is None:  # the full path: the new round is checked before anything is committed
            self.problem(now, cols, round_seconds=rest)
        self.commit(alloc, progress=progress, seconds=value)
        self._set_cluster(new_cluster or self._cluster)
        return self.plan(now, cols, round_seconds=rest)

    def _why_not_pending(self, alloc: object) -> str:
        if not isinstance(alloc, Allocation):
            return "must be the Allocation the last plan() returned"
        for seen, what in reversed(self._recent):
            if seen is alloc:
                if what == "committed":
                    return "already committed (each plan counts once; plan the next round first)"
                return ("an older plan: plan() was called again after it; commit the newest plan, with the "
                        "progress actually delivered as progress=")
        return ("not the pending plan of this engine (commit the allocation its last plan() returned, with "
                "the progress actually delivered as progress=)")

    def step(self, jobs: Sequence[Mapping[str, Any]], colocation: Sequence[Mapping[str, Any]] = ()) -> Allocation:
        """:meth:`plan` and :meth:`commit` as planned, in one call."""
        alloc = self.plan(jobs, colocation)
        self.commit(alloc)
        return alloc

    # ------------------------------------------------------------------ persistence
    def state(self) -> dict[str, Any]:
        """The engine's state as a plain JSON-able document (``docs/json-formats.md``, engine state).

        ``gpu_order`` records the order of the GPU types, which a JSON object with sorted keys loses.

        Examples
        --------
        >>> st = Engine({"V100": 2, "K80": 1}, deficits={"a": 0.5}).state()
        >>> st["gpus"], st["gpu_order"], st["deficits"], st["version"]
        ({'V100': 2, 'K80': 1}, ['V100', 'K80'], {'a': 0.5}, 1)
        """
        cfg = self._config
        return state_to_dict(EngineState(
            cluster=self._cluster, mode=cfg.mode, epsilon=cfg.epsilon, fairness_weight=cfg.fairness_weight,
            options=cfg.options, round_index=self._round_index, deficits=self._deficits, priority=cfg.priority,
            shortfall_price=cfg.shortfall_price, round_seconds=cfg.round_seconds, binding=self._binding))

    @classmethod
    def from_state(cls, doc: Mapping[str, Any], *,
                   priority: str | PriorityRule | Callable[..., Any] | None = None,
                   shortfall_price: str | ShortfallPriceRule | Callable[..., Any] | None = None) -> Engine:
        """Rebuild an engine from :meth:`state` output (or a parsed state file).

        The document must follow the state schema exactly: ``version`` the integer 1, ``gpus`` present,
        no unknown key, every value of its type (no bool for a number, no float for an integer, no string
        for either). Missing optional keys take the constructor's defaults; without ``gpu_order`` the GPU types keep
        the order of ``gpus``; without ``priority`` the engine takes
        :data:`DEFAULT_PRIORITY`. ``priority`` replaces the saved priority rule; it is required when the engine
        was saved with a rule of the user's own (``"priority": {"rule": "custom"}``), which a file cannot hold;
        ``shortfall_price`` likewise for the shortfall-price rule (states without one take ``"none"``).

        Raises
        ------
        InvalidInputError
            For any deviation, naming the field (``state.round_index``, ``state.deficits.j3``).
        """
        return cls._restore(state_from_dict(doc, priority=priority, shortfall_price=shortfall_price))

    @classmethod
    def _restore(cls, st: EngineState) -> Engine:
        """An engine with the checked settings and history ``st`` (nothing planned yet)."""
        engine = cls.__new__(cls)
        engine._config = EngineConfig(mode=st.mode, epsilon=st.epsilon, fairness_weight=st.fairness_weight,
                                      options=st.options, priority=st.priority, shortfall_price=st.shortfall_price,
                                      round_seconds=st.round_seconds)
        engine._set_cluster(st.cluster)
        engine._deficits, engine._round_index = st.deficits, st.round_index
        engine._reset_plans()
        engine._binding = st.binding
        return engine

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`state` to ``path`` as JSON, atomically and durably.

        The text (keys sorted, strict JSON) goes to ``.<name>.tmp`` in the same folder, which is fsynced
        and renamed over ``path``; then the folder is fsynced. Readers therefore see the complete old or
        the complete new state, also after a crash or ``kill -9`` at any moment.

        * Concurrent saves to one path (threads or processes) are serialised by an exclusive
          ``fcntl.flock`` on the temporary file; the last one wins. (Not on Windows.)
        * A save killed midway leaves at most that one ``.<name>.tmp``; the next save reuses and removes
          it.
        * An existing file keeps its permission bits (not its owner); a new one gets the umask's default.
        * If ``path`` is a symbolic link, the link stays and the file it points to is replaced.

        Raises
        ------
        OSError
            If the folder is missing or not writable, the disk is full, ... The file at ``path`` is then
            unchanged and no temporary file is left.
        """
        data = (json.dumps(self.state(), sort_keys=True, indent=2, allow_nan=False) + "\n").encode("ascii")
        write_atomically(path, data, lock=True)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *,
             priority: str | PriorityRule | Callable[..., Any] | None = None,
             shortfall_price: str | ShortfallPriceRule | Callable[..., Any] | None = None) -> Engine:
        """Read an engine saved by :meth:`save` (see :meth:`from_state` for the rules).

        Raises
        ------
        InvalidInputError
            If the file is missing, unreadable, not a regular file, larger than
            :data:`~fairshare.documents.MAX_JSON_BYTES`, not UTF-8 JSON within
            :func:`~fairshare.documents.read_json`'s limits (nesting, number range, no duplicate key), or
            not a valid state. The message names the field (``state`` for the file as a whole) and the path.
        """
        return cls._restore(load_state(path, priority=priority, shortfall_price=shortfall_price))


# ---------------------------------------------------------------------------------------------- helpers
def _check_rule_keys(job: Mapping[str, Any], i: int, ruled: bool, priced: bool) -> None:
    """Refuse a ``priority`` (``shortfall_price``) key in ``jobs[i]`` when the engine's rule computes it."""
    if ruled and "priority" in job:
        raise InvalidInputError(f"jobs[{i}].priority", clip(job["priority"]),
                                "the engine's priority rule computes priorities; leave this key out "
                                "or use Engine(..., priority='none')")
    if priced and "shortfall_price" in job:
        raise InvalidInputError(f"jobs[{i}].shortfall_price", clip(job["shortfall_price"]),
                                "the engine's shortfall-price rule computes prices; leave this key out "
                                "or use Engine(..., shortfall_price='none')")


def _with_current(job: Mapping[str, Any], cur: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """``job`` with its ``current`` placement ``cur`` (``None``: not running); ``job`` itself if it has it."""
    if not isinstance(job, Mapping) or job.get("current") == cur:
        return job
    out = {k: v for k, v in job.items() if k != "current"}
    if cur is not None:
        out["current"] = cur
    return out


def _cannot_run(jobs: Sequence[Mapping[str, Any]], gpus: Mapping[str, int]) -> dict[str, float]:
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


def _without(jobs: Sequence[Mapping[str, Any]], colocation: Sequence[Mapping[str, Any]],
             held: Mapping[str, float]) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """``jobs`` and ``colocation`` without the ``held`` jobs and the candidates that name one of them."""
    kept = [j for j in jobs if not (isinstance(j, Mapping) and j.get("id") in held)]
    pairs = [c for c in colocation if not (isinstance(c, Mapping) and isinstance(c.get("jobs"), (list, tuple))
                                           and any(isinstance(i, str) and i in held for i in c["jobs"]))]
    return kept, pairs


def _describe(alloc: object) -> str:
    if isinstance(alloc, Allocation):
        return f"<Allocation of {len(alloc.job_ids)} jobs, status {alloc.status}>"
    return type(alloc).__name__


# ---------------------------------------------------------------------------------------------- files
def _job_number(job: Mapping[str, Any], key: str, i: int, default: float) -> float:
    """A non-negative number of a job object (``remaining_iterations`` may be ``inf``: unknown)."""
    if key not in job or job[key] is None:
        return default
    v = job[key]
    number = isinstance(v, (int, float)) and not isinstance(v, bool)
    finite_ok = number and (is_real(v) or (key == "remaining_iterations" and v == float("inf")))
    if not (finite_ok and v >= 0):
        raise InvalidInputError(f"jobs[{i}].{key}", clip(v), "must be a number >= 0")
    return float(v)


