"""``fairshare``: the round MILP of spec round-problem.md (efficiency under spatiotemporal fairness).

maximise ``E - lambda * sum_j w_j sigma_j`` subject to one placement per job, capacity, whole gangs and
``rho_j + sigma_j >= (1 - epsilon) + D_j``, where ``D_j`` carries what a job was owed from earlier rounds
(the simulator supplies the deficits in ``state.problem``). Modes ``fast`` (LP + rounding + polish, the
default) and ``exact`` (HiGHS to proven optimality or a time limit); see :func:`fairshare.allocate`.

Ablation flag ``heterogeneity_aware=False``: the policy plans as if every GPU type were equally fast for a
job (each job's alone and co-located throughputs replaced by their mean over the types where it can run,
so fair shares, efficiency and fairness rows see no difference between types); the placement is then
executed, and reported, with the true throughputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fairshare.allocation import Allocation
from fairshare.policies.base import RoundState, allocation_from_columns, register


@register("fairshare")
@dataclass(frozen=True)
class FairsharePolicy:
    """fairshare's own policy.

    Parameters
    ----------
    mode : {"fast", "exact"}
    epsilon : float, optional
        Overrides the round's epsilon (the simulator builds rounds with its own epsilon otherwise).
    heterogeneity_aware : bool
        False plans with type-blind throughputs (an ablation; see the module doc).
    options : dict
        :class:`~fairshare.allocate.SolveOptions` fields (``time_limit``, ``polish_seconds``, ...).
    """

    mode: str = "fast"
    epsilon: float | None = None
    heterogeneity_aware: bool = True
    options: dict[str, Any] = field(default_factory=dict)
    name: str = "fairshare"

    def allocate(self, state: RoundState) -> Allocation:
        from fairshare.allocate import allocate, solve_model
        from fairshare.formulation import build_model

        problem = state.problem
        if self.epsilon is not None and self.epsilon != problem.epsilon:
            problem = problem.replace(epsilon=self.epsilon)
        if self.heterogeneity_aware:
            if problem is state.problem:
                return solve_model(state.model, mode=self.mode, options=self.options)
            return allocate(problem, mode=self.mode, options=self.options)
        blind = _type_blind(problem)
        planned = solve_model(build_model(blind), mode=self.mode, options=self.options)
        real = build_model(problem) if problem is not state.problem else state.model
        x = _columns_of(real, planned)
        return allocation_from_columns(real, x, mode=self.mode, seconds=planned.solve_seconds,
                                       status=planned.status, message=planned.message + " (type-blind plan)")


def _type_blind(problem):  # type: ignore[no-untyped-def]
    """The round with each job's throughputs replaced by their mean over the types where it can run."""
    run = problem.runnable
    t = np.where(run, problem.throughput, 0.0)
    mean = t.sum(axis=1) / np.maximum(run.sum(axis=1), 1)
    blind_t = np.where(run, mean[:, None], 0.0)
    pt = problem.pair_throughput.copy()
    if problem.num_pairs:
        a, b, g = problem.pair_jobs[:, 0], problem.pair_jobs[:, 1], problem.pair_gpu
        # keep each member's interference ratio, scaled to its type-blind alone throughput
        pt[:, 0] = pt[:, 0] / problem.throughput[a, g] * mean[a]
        pt[:, 1] = pt[:, 1] / problem.throughput[b, g] * mean[b]
    return problem.replace(throughput=blind_t, pair_throughput=pt)


def _columns_of(model, alloc: Allocation) -> np.ndarray:  # type: ignore[no-untyped-def]
    """0/1 column values of ``model`` for an integer allocation of the same round (same columns)."""
    c = model.columns
    x = np.zeros(c.num)
    gpu, partner = alloc.job_gpu, alloc.job_partner
    for k in range(c.num):
        a, b, g = int(c.job_a[k]), int(c.job_b[k]), int(c.gpu[k])
        if gpu[a] == g and (partner[a] == b if b >= 0 else partner[a] < 0):
            x[k] = 1.0
    return x
