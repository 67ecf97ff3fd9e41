"""The round-based simulator (spec simulator.md): replay a trace on a heterogeneous cluster with a policy.

Each round of length Δ (default 360 s):

1. Active jobs = arrived (``arrival <= t``) and unfinished. With none active, time jumps to the next arrival.
2. The round problem is built from arrays: alone throughputs from the catalog, co-location candidates among
   the active jobs (capped at ``max_pairs_per_job`` per job, top-k by combined normalised throughput),
   carried deficits, weights, ``epsilon`` and ``fairness_weight``.
3. The policy plans the round (its wall time is recorded).
4. Every placed job runs for Δ at its planned (alone or co-located) throughput, less ``restart_overhead``
   seconds when its placement (GPU type or partner) differs from the previous round's (starting from not
   running counts as a change). A job whose work runs out inside the round finishes at that exact time; its
   GPUs are idle for the rest of the round, and a co-located partner keeps its co-located throughput (the
   simulator does not re-plan inside a round).
5. Deficits are updated with the progress actually delivered, ``rho_j = (work done in the round / Δ) /
   Tfair_j`` (spec round-problem.md section 4), for jobs that are still active; finished jobs leave. With
   ``carry_deficits=False`` deficits stay 0 (spatial-only fairness, an ablation).

Deterministic: the same trace, cluster, policy and options give the same records (no randomness is used
here; policies break ties by job order, which is the trace's order).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fairshare.errors import InvalidInputError
from fairshare.formulation import build_model
from fairshare.policies.base import Policy, RoundState, get_policy
from fairshare.problem import RoundProblem
from fairshare.progress import Progress
from fairshare.records import JobRecord, RoundRecord

__all__ = ["SimulationResult", "parse_cluster", "simulate"]


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
            name, _, count = part.partition("=")
            try:
                items.append((name.strip(), int(count)))
            except ValueError:
                raise InvalidInputError(f"cluster.{name.strip()}", count, "must be an integer") from None
    out: dict[str, int] = {}
    for name, count in items:
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise InvalidInputError(f"cluster.{name}", count, "must be a non-negative integer")
        out[str(name)] = count
    if sum(out.values()) <= 0:
        raise InvalidInputError("cluster", spec, "the cluster has no GPU")
    return out


@dataclass(frozen=True)
class SimulationResult:
    """Records of one simulation run.

    Attributes
    ----------
    policy : str
        Display name of the policy (with its variant).
    jobs : tuple of JobRecord
    rounds : tuple of RoundRecord
    config : dict
        Cluster, round length and the other options of the run.
    wall_seconds : float
        Wall time of the whole run.
    """

    policy: str
    jobs: tuple[JobRecord, ...]
    rounds: tuple[RoundRecord, ...]
    config: dict[str, Any] = field(default_factory=dict)
    wall_seconds: float = 0.0

    def metrics(self):  # type: ignore[no-untyped-def]
        """:class:`fairshare.metrics.RunMetrics` of this run."""
        from fairshare.metrics import compute_metrics

        return compute_metrics(self.jobs, self.rounds)

    def to_dict(self) -> dict[str, Any]:
        return {"policy": self.policy, "config": self.config, "wall_seconds": self.wall_seconds,
                "jobs": [j.to_dict() for j in self.jobs], "rounds": [r.to_dict() for r in self.rounds]}

    def save_json(self, path: str | Path) -> None:
        """All per-job and per-round records as JSON (NaN written as null)."""
        def clean(v: Any) -> Any:
            if isinstance(v, float) and not np.isfinite(v):
                return None
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items()}
            if isinstance(v, list):
                return [clean(x) for x in v]
            return v

        Path(path).write_text(json.dumps(clean(self.to_dict()), indent=1))

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> SimulationResult:
        nan = float("nan")
        jobs = tuple(JobRecord(**{k: (nan if v is None else v) for k, v in j.items()}) for j in doc["jobs"])
        rounds = tuple(RoundRecord(**r) for r in doc["rounds"])
        return cls(doc["policy"], jobs, rounds, dict(doc.get("config", {})), doc.get("wall_seconds", 0.0))


def simulate(
    trace: Any,
    cluster: str | Mapping[str, int],
    policy: Policy | str,
    *,
    catalog: Any = None,
    round_length: float = 360.0,
    epsilon: float = 0.0,
    fairness_weight: float = 100.0,
    restart_overhead: float = 0.0,
    max_pairs_per_job: int | None = 4,
    colocation: bool = True,
    carry_deficits: bool = True,
    max_rounds: int | None = None,
    stop_when_finished: Iterable[str] | None = None,
    progress: bool | None = None,
    policy_options: Mapping[str, Any] | None = None,
    name: str | None = None,
) -> SimulationResult:
    """Replay ``trace`` on ``cluster`` with ``policy`` (see the module documentation).

    Parameters
    ----------
    trace : fairshare.traces.Trace
        Jobs with ``id``, ``arrival``, ``model``, ``scale``, ``iterations``, ``weight``, ``tenant``.
    cluster : str or mapping
        ``"V100=36,P100=36,K80=36"`` or ``{"V100": 36, ...}``.
    policy : Policy or str
        A policy object or a registered name (``policy_options`` are passed to its constructor).
    catalog : fairshare.catalog.Catalog, optional
        Throughput data (default: the built-in catalog).
    round_length : float
        Δ, seconds.
    epsilon, fairness_weight : float
        Fairness knobs of every round problem.
    restart_overhead : float
        Seconds lost by a job whose placement changed from the previous round.
    max_pairs_per_job : int or None
        Cap on co-location candidates per job (None: all).
    colocation : bool
        Offer co-location candidates at all.
    carry_deficits : bool
        Carry deficits across rounds (False: spatial-only fairness).
    max_rounds : int, optional
        Stop after this many rounds (unfinished jobs have ``finish = nan``).
    stop_when_finished : iterable of str, optional
        Job ids: stop at the end of the round in which the last of them finishes, however many other jobs are
        still active (they keep ``finish = nan``). This is how a steady-state window is measured on a
        continuous trace, e.g. Gavel's mean JCT of jobs 4000-5000 while later jobs keep arriving.
    progress : bool, optional
        Progress bar on stderr for runs longer than a few seconds (default on; False silences it).
    name : str, optional
        Display name of the policy in the result.

    Returns
    -------
    SimulationResult
    """
    from fairshare.catalog import load_catalog

    t_wall = time.perf_counter()
    if not (isinstance(round_length, (int, float)) and np.isfinite(round_length) and round_length > 0):
        raise InvalidInputError("round_length", round_length, "must be a positive number of seconds")
    if not (isinstance(restart_overhead, (int, float)) and 0 <= restart_overhead < round_length):
        raise InvalidInputError("restart_overhead", restart_overhead, "must be in [0, round_length)")
    if max_pairs_per_job is not None and (not isinstance(max_pairs_per_job, int) or max_pairs_per_job < 0):
        raise InvalidInputError("max_pairs_per_job", max_pairs_per_job, "must be a non-negative integer or None")
    gpus = parse_cluster(cluster)
    pol = get_policy(policy, **dict(policy_options or {})) if isinstance(policy, str) else policy
    if not isinstance(pol, Policy):
        raise InvalidInputError("policy", policy, "must be a registered name or an object with allocate(state)")
    cat = load_catalog() if catalog is None else catalog
    gpu_types = tuple(gpus)
    cap = np.array([gpus[g] for g in gpu_types], dtype=np.int64)
    G = len(gpu_types)

    ids = tuple(trace.id)
    models = tuple(trace.model)
    arrival = np.asarray(trace.arrival, dtype=np.float64)
    scale = np.asarray(trace.scale, dtype=np.int64)
    work = np.asarray(trace.iterations, dtype=np.float64)
    weight = np.asarray(trace.weight, dtype=np.float64)
    tenant = tuple(trace.tenant)
    n_all = len(ids)
    tput_all = cat.throughput_matrix(models, scale, gpu_types) if n_all else np.zeros((0, G))
    runnable = (tput_all > 0) & (scale[:, None] <= cap[None, :])
    nowhere = np.flatnonzero(~runnable.any(axis=1)) if n_all else np.zeros(0, np.int64)
    if nowhere.size:
        j = int(nowhere[0])
        raise InvalidInputError(f"trace[{j}]", f"{ids[j]} ({models[j]}, scale {scale[j]})",
                                f"this job can run on no GPU type of the cluster {gpus}")

    watch_left: int | None = None
    watched = np.zeros(n_all, dtype=bool)
    if stop_when_finished is not None:
        if isinstance(stop_when_finished, str):
            raise InvalidInputError("stop_when_finished", stop_when_finished, "must be a collection of job ids")
        index = {jid: i for i, jid in enumerate(ids)}
        for jid in stop_when_finished:
            if jid not in index:
                raise InvalidInputError("stop_when_finished", jid, "is not a job id of the trace")
            watched[index[jid]] = True
        watch_left = int(watched.sum())
        if watch_left == 0:
            raise InvalidInputError("stop_when_finished", stop_when_finished, "names no job")

    order = np.argsort(arrival, kind="stable")
    done = np.zeros(n_all)
    finish = np.full(n_all, np.nan)
    deficit = np.zeros(n_all)
    attained = np.zeros(n_all)
    received = np.zeros((n_all, G))
    tfair_time = np.zeros(n_all)
    active_time = np.zeros(n_all)
    prev_key = np.full((n_all, 2), -2, np.int64)  # (gpu, partner trace index) of the previous round
    active: list[int] = []
    nxt = 0
    t = float(arrival[order[0]]) if n_all else 0.0
    rounds: list[RoundRecord] = []
    pair_cache: tuple[bytes, Any] = (b"", None)
    bar = Progress(n_all, f"simulate {name or getattr(pol, 'name', 'policy')}", enabled=progress)
    n_finished = 0
    k = 0
    while n_finished < n_all and (max_rounds is None or k < max_rounds) and watch_left != 0:
        while nxt < n_all and arrival[order[nxt]] <= t:
            active.append(int(order[nxt]))
            nxt += 1
        if not active:
            t = float(arrival[order[nxt]])
            continue
        act = np.array(sorted(active), dtype=np.int64)  # trace order: deterministic tie-breaking
        if colocation and (max_pairs_per_job is None or max_pairs_per_job > 0):
            key_act = act.tobytes()
            if key_act != pair_cache[0]:  # candidates depend only on the active set: reuse between changes
                pair_cache = (key_act, cat.colocation_candidates([models[i] for i in act], scale[act], gpu_types,
                                                                 max_per_job=max_pairs_per_job))
            pj, pg, pt = pair_cache[1]
        else:
            pj, pg, pt = np.zeros((0, 2), np.int64), np.zeros(0, np.int64), np.zeros((0, 2))
        problem = RoundProblem(gpu_types=gpu_types, capacity=cap, job_ids=tuple(ids[i] for i in act),
                               scale=scale[act], throughput=tput_all[act], weight=weight[act],
                               deficit=deficit[act], pair_jobs=pj, pair_gpu=pg, pair_throughput=pt,
                               epsilon=epsilon, fairness_weight=fairness_weight)
        t_pol = time.perf_counter()
        model = build_model(problem)
        state = RoundState(problem, model, t, float(round_length), arrival[act], attained[act], received[act],
                           done[act], work[act] - done[act])
        alloc = pol.allocate(state)
        solver_s = time.perf_counter() - t_pol

        # execute the round
        tau = np.asarray(alloc.throughput, dtype=np.float64)
        gsel = np.asarray(alloc.job_gpu, dtype=np.int64)
        partner = np.asarray(alloc.job_partner, dtype=np.int64)
        placed = (gsel >= 0) & (tau > 0)
        partner_trace = np.where(partner >= 0, act[np.maximum(partner, 0)], -1)
        key = np.column_stack([np.where(placed, gsel, -1), np.where(placed, partner_trace, -1)])
        changed = placed & (key != prev_key[act]).any(axis=1)
        overhead = np.where(changed, float(restart_overhead), 0.0)
        remaining = work[act] - done[act]
        with np.errstate(divide="ignore", invalid="ignore"):
            need_time = np.where(placed, remaining / np.where(tau > 0, tau, 1.0), np.inf)
        run_time = np.where(placed, round_length - overhead, 0.0)
        # a job whose work runs out within floating-point noise of the round's end finishes with the round
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            slack = 1e-9 * np.where(tau > 0, work[act] / np.where(tau > 0, tau, 1.0), 0.0)
        finishes = placed & (need_time <= run_time * (1.0 + 1e-12) + slack)
        need_time = np.where(finishes, np.minimum(need_time, run_time), need_time)
        used = np.where(finishes, need_time, run_time)
        done_now = np.where(finishes, remaining, tau * used)
        busy = np.where(placed, overhead + used, 0.0)  # seconds the job's GPUs were held
        end = np.where(finishes, t + overhead + need_time, t + round_length)

        # GPU-seconds busy: a placement holds its GPUs until its last member stops
        busy_gpu_s = 0.0
        seen = np.zeros(len(act), dtype=bool)
        for i in np.flatnonzero(placed):
            if seen[i]:
                continue
            p = partner[i]
            hold = busy[i] if p < 0 else max(busy[i], busy[p])
            if p >= 0:
                seen[p] = True
            seen[i] = True
            busy_gpu_s += float(scale[act[i]]) * hold

        tfair = np.asarray(alloc.fair_throughput, dtype=np.float64)
        life = np.where(finishes, end - t, float(round_length))
        tfair_time[act] += tfair * life
        active_time[act] += life
        done[act] += done_now
        attained[act] += scale[act] * used
        np.add.at(received, (act[placed], gsel[placed]), used[placed])
        prev_key[act] = key
        if carry_deficits:
            rho = (done_now / round_length) / tfair
            deficit[act] = np.maximum(0.0, deficit[act] + (1.0 - epsilon) - rho)
        fin_idx = act[finishes]
        finish[fin_idx] = end[finishes]
        n_finished += len(fin_idx)
        if watch_left is not None:
            watch_left -= int(watched[fin_idx].sum())
        if len(fin_idx):
            gone = set(fin_idx.tolist())
            active = [i for i in active if i not in gone]
        rounds.append(RoundRecord(index=k, start=t, length=float(round_length), active_jobs=len(act),
                                  placed_jobs=int(placed.sum()), efficiency=float(alloc.utilization),
                                  busy_gpu_seconds=busy_gpu_s, capacity_gpu_seconds=float(cap.sum() * round_length),
                                  solver_seconds=solver_s, status=str(alloc.status)))
        k += 1
        t += round_length
        bar.update(n_finished, f"round {k}, {len(active)} active")
    bar.close(f"({k} rounds)")

    jobs = tuple(
        JobRecord(id=ids[i], model=models[i], tenant=tenant[i], scale=int(scale[i]), weight=float(weight[i]),
                  arrival=float(arrival[i]), finish=float(finish[i]), iterations=float(work[i]),
                  done_iterations=float(done[i]),
                  fair_throughput=float(tfair_time[i] / active_time[i]) if active_time[i] > 0 else float("nan"),
                  active_seconds=float(max(0.0, (finish[i] if np.isfinite(finish[i]) else t) - arrival[i])))
        for i in range(n_all))
    config = {"cluster": gpus, "round_length": round_length, "epsilon": epsilon, "fairness_weight": fairness_weight,
              "restart_overhead": restart_overhead, "max_pairs_per_job": max_pairs_per_job,
              "colocation": colocation, "carry_deficits": carry_deficits, "max_rounds": max_rounds,
              "stop_when_finished_jobs": int(watched.sum()),
              "policy_options": dict(policy_options or {})}
    return SimulationResult(name or getattr(pol, "name", str(policy)), jobs, tuple(rounds), config,
                            time.perf_counter() - t_wall)
