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

The engine holds what lives between calls (settings, cluster, deficits, the pending plan, the last binding,
and, not saved, the kept jobs and LP); each call checks its arguments and hands the work over: the round a
plan solves to :mod:`fairshare.engine_rounds` (the full path, or the incremental one of an engine with
``incremental=True``), the commit's deficit update to :mod:`fairshare.engine_plans`, the rest of a round after
an event to :mod:`fairshare.engine_events`, the state document to :mod:`fairshare.engine_state`.

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

import json
import os
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from fairshare._io import write_atomically
from fairshare._validate import clip
from fairshare.allocate import SolveOptions, allocate
from fairshare.allocation import Allocation
from fairshare.cluster import Binding, Cluster, Node
from fairshare.engine_config import EngineConfig, Setting
from fairshare.engine_events import event_round
from fairshare.engine_plans import PendingPlan, PlanLog, describe, pending_plan, settle
from fairshare.engine_rounds import (
    KeptRound,
    cannot_run,
    check_rule_inputs,
    refuse_deficits,
    round_of_jobs,
    without,
)
from fairshare.engine_state import (
    DEFAULT_PRIORITY,
    DEFAULT_SHORTFALL_PRICE,
    MAX_ROUND_INDEX,
    STATE_KEYS,
    STATE_VERSION,
    EngineState,
    check_deficits,
    check_round_index,
    check_round_seconds,
    load_state,
    state_from_dict,
    state_to_dict,
)
from fairshare.errors import InvalidInputError
from fairshare.methods.kept import KeptLP
from fairshare.methods.warm import WarmStart
from fairshare.priority import PriorityRule
from fairshare.problem import RoundProblem
from fairshare.running import DEFAULT_ROUND_SECONDS
from fairshare.shortfall_price import ShortfallPriceRule

__all__ = ["MAX_ROUND_INDEX", "STATE_KEYS", "STATE_VERSION", "Engine"]


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
        self._pending: PendingPlan | None = None
        self._log = PlanLog()
        self._warm = WarmStart()  # fast with warm_start: what the last plan leaves for the next (not saved)
        self._kept_lp = KeptLP()  # incremental, fast: the last plan's LP, kept in HiGHS (not saved)
        self._kept: KeptRound | None = None  # incremental: the jobs of the last plan, validated (not saved)
        self._pending_kept: KeptRound | None = None  # the kept jobs the pending plan was made from, if it was
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
        return () if self._pending is None else self._pending.held

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
            self._kept = None
        self._config = value

    incremental: Setting[bool] = Setting("Plans keep the last plan's jobs and LP (see the class documentation).")

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
        return None if self._pending is None else self._pending.seconds

    mode: Setting[str] = Setting("""Solve mode of every round; the options must apply to a new mode.""")

    epsilon: Setting[float] = Setting("""Fairness slack of every round, in ``[0, 1)``.""")

    fairness_weight: Setting[float] = Setting("""Price of weighted shortfall (``lambda``) of every round.""")

    options: Setting[SolveOptions] = Setting("""Solver options of every round (checked against :attr:`mode`).""")

    @property
    def round_index(self) -> int:
        """Rounds committed so far."""
        return self._round_index

    @round_index.setter
    def round_index(self, value: int) -> None:
        self._round_index = check_round_index(value, "round_index")

    round_seconds: Setting[float] = Setting("""Length of a round, the unit of the deficits (seconds).""")

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
        length = self._length(round_seconds)
        if self._live():  # a query: on a copy of the kept jobs, which stay as the last plan left them
            kept = self._kept
            types = tuple(self._gpus)
            query = kept.copy() if kept is not None and kept.gpu_types == types else KeptRound(types)
            ids = query.sync(jobs, colocation)
            return query.problem(jobs, ids, **self._round_inputs(length))
        return round_of_jobs(jobs, colocation, cluster=self._cluster, deficits=self._deficits, config=self._config,
                             length=length)

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
        are made (:meth:`problem`); :meth:`event` does both in one call.
        """
        length = self._length(round_seconds)
        if self._live():
            kept = self._kept_round()
            ids = kept.sync(jobs, colocation, self._capacity())
            return self._plan_kept(kept, jobs, colocation, ids, length)
        held = cannot_run(jobs, self._gpus)
        given, pairs = jobs, colocation
        if held:
            jobs, colocation = without(jobs, colocation, held)
        problem = self.problem(jobs, colocation, round_seconds=length)
        return self._pend(problem, held, given, pairs, length)

    def _length(self, round_seconds: float | None) -> float:
        """The length of the round planned: ``round_seconds``, checked, or the engine's."""
        if round_seconds is None:
            return self._config.round_seconds
        return check_round_seconds(round_seconds, "round_seconds")

    def _live(self) -> bool:
        """Plans take the incremental path (kept jobs): ``incremental`` and no nodes."""
        return self._config.incremental and not self._nodes

    def _kept_round(self) -> KeptRound:
        """The kept jobs, new when there are none or the cluster's GPU types changed."""
        if self._kept is None or self._kept.gpu_types != tuple(self._gpus):
            self._kept = KeptRound(tuple(self._gpus))
        return self._kept

    def _capacity(self, cluster: Cluster | None = None) -> np.ndarray:
        """GPUs per type of ``cluster`` (default: the engine's), in its order, as floats."""
        return np.array((cluster or self._cluster).capacity, np.float64)

    def _round_inputs(self, length: float) -> dict[str, Any]:
        """What :meth:`KeptRound.problem` reads of the engine for a round of ``length`` seconds."""
        return {"capacity": np.array(list(self._gpus.values())), "deficits": self._deficits, "config": self._config,
                "length": length}

    def _plan_kept(self, kept: KeptRound, jobs: Sequence[Mapping[str, Any]],
                   colocation: Sequence[Mapping[str, Any]], ids: Sequence[str], length: float,
                   read: set[str] | None = None) -> Allocation:
        """:meth:`plan` of the kept jobs ``ids`` (``jobs``: their objects, in that order).

        ``read``: the ids whose rules' inputs are read again (:meth:`KeptRound.problem`).
        """
        try:
            held = kept.held(jobs)
            problem = kept.problem(jobs, ids, held=held, read=read, **self._round_inputs(length))
            alloc = self._pend(problem, held, jobs, colocation, length)
        except BaseException:
            self._kept = None  # it holds the jobs of a plan that was not made: the next plan starts afresh
            raise
        self._pending_kept = kept
        return alloc

    def _pend(self, problem: RoundProblem, held: Mapping[str, float], jobs: Sequence[Mapping[str, Any]],
              colocation: Sequence[Mapping[str, Any]], length: float) -> Allocation:
        """Solve ``problem`` and make it the pending plan (``jobs``, ``colocation``: as given, for :meth:`event`)."""
        cfg = self._config
        previous = self._binding if self._nodes and cfg.mode != "lp" else None  # only where it applies
        warm: WarmStart | KeptLP | None = self._warm if cfg.options.warm_start else None
        if warm is None and cfg.incremental and cfg.mode == "fast":
            warm = self._kept_lp
        alloc = allocate(problem, mode=cfg.mode, options=cfg.options, previous_binding=previous, warm=warm)
        if self._pending is not None:
            self._log.add(self._pending.allocation, "superseded")
        self._pending = pending_plan(alloc, problem, held, deficits=self._deficits, config=cfg, seconds=length)
        self._pending_kept = None  # set by _plan_kept when the plan was made from the kept jobs
        self._last_round = (list(jobs), list(colocation))
        return alloc

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
        plan = self._pending
        alloc = allocation if allocation is not None or plan is None else plan.allocation
        if alloc is None:
            last = " (the last plan was already committed)" if self._log.last_committed else ""
            raise InvalidInputError("allocation", None, f"no round planned{last}: call plan() first")
        if plan is None or alloc is not plan.allocation:
            raise InvalidInputError("allocation", describe(alloc), self._log.why_not_pending(alloc))
        self._deficits = settle(plan, progress=progress, seconds=seconds, round_seconds=self._config.round_seconds)
        self._round_index += 1
        self._pending = None
        self._log.add(alloc, "committed")
        if alloc.binding is not None:
            self._binding = alloc.binding
        return dict(self._deficits)

    def event(self, *, seconds: float, arrived: Sequence[Mapping[str, Any]] = (), departed: Sequence[str] = (),
              changed: Sequence[Mapping[str, Any]] = (), colocation: Sequence[Mapping[str, Any]] = (),
              progress: Mapping[str, float] | None = None, gpus: Mapping[str, int] | None = None) -> Allocation:
        """Plan again at an event (jobs arrived, jobs finished, GPUs lost or added): the rest of the round.

        The pending plan ran for ``seconds`` of the round it was made for: it is committed for that time
        (``commit(progress=progress, seconds=seconds)``), and the rest of that round is planned with the
        jobs of the last plan, less ``departed`` (ids), plus ``arrived`` (job objects as for :meth:`plan`) and
        the candidate pairs of the last plan that name no departed job, plus ``colocation``. ``changed``: new
        objects for jobs of the last plan (matched by ``id``; e.g. with ``remaining_iterations`` counted down).
        Each job's ``current`` placement is set from the committed plan (where it runs now; a job the plan left
        out is not running), so that a move must be worth the job's ``restart_seconds``. ``gpus``: the cluster
        after the event, if it changed (a node lost or added; as assigning :attr:`gpus`).

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
        ev = event_round(self._pending.allocation, self._pending.seconds, *self._last_round, seconds=seconds,
                         arrived=arrived, departed=departed, changed=changed, colocation=colocation)
        cluster = self._cluster if gpus is None else Cluster.of_counts(gpus, "gpus").with_nodes(self._nodes, "gpus")
        for field, objs in (("arrived", arrived), ("changed", changed)):
            refuse_deficits(objs, field)
            check_rule_inputs(objs, field, self._config)
        kept = self._kept if self._live() and self._pending_kept is self._kept else None
        if kept is not None and cluster.gpu_types == kept.gpu_types:
            # only the event's jobs and pairs are validated (staged, so that nothing changes if one is wrong)
            ids = kept.apply(departed=list(ev.departed), arrived=ev.arrived, changed=ev.changed, placed=ev.placed,
                             colocation=colocation, capacity=self._capacity(cluster))
            self.commit(progress=progress, seconds=ev.ran)
            kept.accept()
            self._set_cluster(cluster)
            return self._plan_kept(kept, ev.jobs, ev.colocation, ids, ev.rest, ev.read)
        # the full path: the new round, on the new cluster, is checked before anything is committed
        held = cannot_run(ev.jobs, cluster.by_type())
        round_of_jobs(*without(ev.jobs, ev.colocation, held), cluster=cluster, deficits=self._deficits,
                      config=self._config, length=ev.rest)
        self.commit(progress=progress, seconds=ev.ran)
        self._set_cluster(cluster)
        return self.plan(ev.jobs, ev.colocation, round_seconds=ev.rest)

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
