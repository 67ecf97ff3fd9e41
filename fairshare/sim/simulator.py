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

The options of a run are a :class:`~fairshare.sim.config.SimConfig`. Step 4 and the deficit update of step 5
are the pure function ``_execute_round(plan, jobs, config) -> RoundOutcome`` (:mod:`fairshare.sim.execute`), the
starts between boundaries are :mod:`fairshare.sim.idle_starts`, and the per-job arrays live in
:mod:`fairshare.sim.ledger`; :func:`simulate` only admits jobs, builds each round, asks the policy and books the
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

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from fairshare.allocation import Allocation, JobResults
from fairshare.binding import bind
from fairshare.cluster import Binding, Cluster
from fairshare.errors import InvalidInputError
from fairshare.formulation import build_model
from fairshare.packing import share_classes
from fairshare.policies.base import SupportsAllocate, get_policy
from fairshare.problem import RoundProblem
from fairshare.sim.catalog import Catalog, load_catalog
from fairshare.sim.config import ROUND_LIMIT, SimConfig
from fairshare.sim.execute import RoundOutcome, _execute_round, _JobState
from fairshare.sim.idle_starts import _between_rounds
from fairshare.sim.ledger import _Ledger, _PairCache
from fairshare.sim.progress_bar import ProgressBar
from fairshare.sim.records import RoundRecord
from fairshare.sim.result import GpuHold, SimulationResult
from fairshare.sim.traces import Trace

__all__ = ["catalog_provenance", "check_run", "simulate"]


def _as_run(alloc: Allocation, problem: RoundProblem) -> JobResults:
    """The plan's per-job results as the executor runs them: moved jobs at their placement's throughput.

    A round that carries running jobs (spec section 11) reports a moved job's throughput with its restart
    taken off (``throughput * (1 - restart / round)``); the executor charges the restart itself, in seconds, so
    it must run the job at the placement's own throughput or the restart would be paid twice.
    """
    plan = alloc.jobs
    if problem.running is None or plan.moved is None or not plan.moved.any():
        return plan
    tau = np.array(plan.throughput, dtype=np.float64)
    pj, pg, pt = problem.pair_jobs, problem.pair_gpu, problem.pair_throughput
    for j in np.flatnonzero(plan.moved).tolist():
        g, k = int(plan.job_gpu[j]), int(plan.job_partner[j])
        if k < 0:
            tau[j] = float(problem.throughput[j, g])
            continue
        hit = np.flatnonzero((pg == g) & (((pj[:, 0] == j) & (pj[:, 1] == k)) | ((pj[:, 0] == k) & (pj[:, 1] == j))))
        p = int(hit[0])
        tau[j] = float(pt[p, 0] if pj[p, 0] == j else pt[p, 1])
    return replace(plan, throughput=tau)


def _moves(jobs: _JobState, out: RoundOutcome) -> tuple[int, int]:
    """``(moved, preempted)``: jobs that ran in the previous plan and now run elsewhere, or stopped unfinished."""
    was = jobs.prev_key[:, 0] >= 0
    moved = was & out.placed & (out.key != jobs.prev_key).any(axis=1)
    return int(moved.sum()), int((was & ~out.placed).sum())


def _round_record(index: int, jobs: _JobState, length: float, alloc: Allocation, out: RoundOutcome, capacity: int,
                  solver_seconds: float, binding: Binding | None = None,
                  moves: tuple[int, int] = (0, 0)) -> RoundRecord:
    return RoundRecord(index=index, start=jobs.start, length=length, active_jobs=len(jobs.index),
                       placed_jobs=int(out.placed.sum()), utilization=float(alloc.values.utilization),
                       busy_gpu_seconds=out.busy_gpu_seconds,
                       capacity_gpu_seconds=float(capacity * length), solver_seconds=solver_seconds,
                       status=str(alloc.status), migrations=0 if binding is None else binding.moved_jobs,
                       split_gangs=0 if binding is None else binding.split_gangs, moved_jobs=moves[0],
                       preempted_jobs=moves[1])


def simulate(
    trace: Trace,
    cluster: Cluster | str | Mapping[str, int] | Sequence[Any],
    policy: SupportsAllocate | str,
    *,
    config: SimConfig | Mapping[str, Any] | None = None,
    catalog: Catalog | None = None,
    policy_options: Mapping[str, Any] | None = None,
    name: str | None = None,
    show_progress: bool | None = None,
    record_holds: bool = False,
    **options: Any,
) -> SimulationResult:
    """Replay ``trace`` on ``cluster`` with ``policy`` (see the module documentation).

    Parameters
    ----------
    trace : fairshare.sim.traces.Trace
        Jobs with ``id``, ``arrival``, ``model``, ``scale``, ``iterations``, ``weight``, ``tenant``.
    cluster : str, mapping or list of nodes
        ``"V100=36,P100=36,K80=36"`` or ``{"V100": 36, ...}``; or nodes: ``"36xV100:8,36xP100:4"``, a ``.json``
        node file or a list of ``{"id", "gpu", "gpus"}``; or a :class:`~fairshare.cluster.Cluster`
        (:meth:`Cluster.parse <fairshare.cluster.Cluster.parse>` reads them all). With nodes,
        every round's placements are bound to node ids and GPU indices (:func:`fairshare.binding.bind`, sticky
        from round to round); a job whose GPUs change pays ``restart_overhead`` and counts as a migration.
    policy : SupportsAllocate or str
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
    show_progress : bool, optional
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
    spec = Cluster.parse(cluster).require_gpu("cluster")
    gpus, nodes = spec.by_type(), spec.nodes
    pol = get_policy(policy, **dict(policy_options or {})) if isinstance(policy, str) else policy
    if not isinstance(pol, SupportsAllocate):
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
    bar = ProgressBar(1.0, f"simulate {name or getattr(pol, 'name', 'policy')}", enabled=show_progress)
    per_round = 0.0                                          # running mean of recent wall seconds per round
    size = share_classes(led.scale) if led.scale.dtype.kind == "f" else led.scale.astype(np.float64)
    holds: list[GpuHold] | None = [] if record_holds else None
    # starts="events": a policy whose scheduler plans at events plans the rest of the round at each arrival and
    # finish (between its plans, jobs start on idle GPUs as with starts="idle"); the others run as with
    # starts="idle" (the run's config still says "events")
    reacts = cfg.starts == "events" and bool(getattr(pol, "replans_on_events", False))
    sees_running = bool(getattr(pol, "sees_running_jobs", False))
    run_cfg = replace(cfg, starts="idle") if cfg.starts == "events" else cfg
    between = run_cfg.starts == "idle" or holds is not None
    arrivals = led.arrival[order]                           # ascending
    round_end = t + cfg.round_length                         # with events: the end of the current round
    while n_finished < n_all and (cfg.max_rounds is None or len(rounds) < cfg.max_rounds) and watch_left != 0:
        if cfg.until is not None and t >= cfg.until:
            break
        while nxt < n_all and led.arrival[order[nxt]] <= t:
            if np.isnan(led.finish[order[nxt]]):  # not already finished between rounds
                active[order[nxt]] = True
                n_active += 1
                led.admit(int(order[nxt]), t, cfg)
            nxt += 1
        if not n_active:
            t = float(led.arrival[order[nxt]])
            round_end = t + cfg.round_length
            continue
        t_round = time.perf_counter()
        act = np.flatnonzero(active)  # trace order: deterministic tie-breaking
        length = round_end - t if reacts else cfg.round_length
        jobs = led.jobs(act, t, length)
        t_pol = time.perf_counter()
        model = build_model(led.problem(act, gpus, pairs.get(act), cfg, length, sees_running))
        alloc = pol.allocate(led.round_state(model, act, t, length))
        plan = _as_run(alloc, model.problem)
        solver_s = time.perf_counter() - t_pol
        moved = None
        if nodes:  # the second stage: node ids and GPU indices; a job whose GPUs changed restarts
            before = {} if binding is None else binding.gpus_of()
            binding = bind(alloc, nodes, binding)
            now = binding.gpus_of()
            moved = np.array([(j in before and j in now and set(now[j][1]) != set(before[j][1]))
                              for j in (led.ids[i] for i in act)], dtype=bool)
        out = _execute_round(plan, jobs, run_cfg, moved)
        if reacts:  # the plan runs until the next arrival or finish, but at least event_spacing
            event = min(float(arrivals[nxt]) if nxt < n_all else math.inf,
                        float(out.end[out.finished].min()) if out.finished.any() else math.inf)
            cut = max(event, t + cfg.event_spacing)
            if t < cut < round_end:
                jobs = led.jobs(act, t, cut - t)
                out = _execute_round(plan, jobs, run_cfg, moved)
        late = None
        if between:
            last = int(np.searchsorted(arrivals, t + jobs.plan_length(cfg), side="left"))
            arriving = order[nxt:last] if run_cfg.starts == "idle" else order[:0]
            out, late = _between_rounds(led, jobs, plan, out, run_cfg, gpus, size, arriving, holds)
        moves = _moves(jobs, out)
        gone = led.book(act, out)
        if late is not None:
            gone = np.concatenate([gone, led.book_late(late, cfg)])
        n_finished += len(gone)
        if watched is not None and watch_left is not None:
            watch_left -= int(watched[gone].sum())
        if len(gone):
            n_active -= int(active[gone].sum())  # jobs that started and ended between rounds were not active
            active[gone] = False
        ran = jobs.plan_length(cfg)
        rounds.append(_round_record(len(rounds), jobs, ran, alloc, out, capacity, solver_s,
                                    binding if nodes else None, moves))
        if not reacts:
            t += cfg.round_length
        elif ran < length:  # cut at an event: the rest of the round is planned next
            t += ran
        else:
            t = round_end
            round_end = t + cfg.round_length
        spent = time.perf_counter() - t_round
        per_round = spent if len(rounds) == 1 else 0.9 * per_round + 0.1 * spent
        if bar.due():
            bar.update(*_progress(led, t, t0, capacity, cfg, per_round, len(rounds), n_active, n_finished))
    bar.close(f"({len(rounds)} rounds, simulated {(t - t0) / 3600:.1f} h)")
    return SimulationResult(name or str(getattr(pol, "name", policy)), led.records(t), tuple(rounds), cfg,
                            time.perf_counter() - t_wall, gpus, dict(policy_options or {}),
                            catalog_provenance(cat, led.models, led.scale, tuple(gpus)), tuple(holds or ()))


def check_run(trace: Trace, cluster: Cluster | str | Mapping[str, int] | Sequence[Any], catalog: Catalog | None = None,
              config: SimConfig | Mapping[str, Any] | None = None) -> None:
    """Raise :class:`InvalidInputError` for what :func:`simulate` would refuse before its first round.

    The cluster (its GPU types must be in the catalog), every job (a gang larger than any type, a model with
    no data at its scale on the cluster's types) and the run's length (:data:`ROUND_LIMIT`). A command line
    calls it once before starting worker processes.
    """
    cfg = SimConfig.coerce(config)
    gpus = Cluster.parse(cluster).require_gpu("cluster").by_type()
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
