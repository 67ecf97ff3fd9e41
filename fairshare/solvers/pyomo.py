"""The round MILP of spec section 3, written once in Pyomo as the readable reference model.

This is the only module that imports Pyomo. It states the formulation exactly as the spec does — one
variable per (job, type) and (candidate pair, type), shortfall variables and the three constraint families —
and is solved with HiGHS through Pyomo's ``highs`` interface. The array-built models of
:mod:`fairshare.formulation` are tested against it (same LP optimum for section 3's relaxation, same MILP
optimum for the tightened column formulation).

.. code-block:: text

    max   sum_j pi_j s_j tau_j / Tmax_j  -  lambda * sum_j w_j sigma_j      (priorities pi_j, default 1)
    s.t.  sum_g a[j,g] + sum_{p ∋ j, g} b[p,g] <= 1                    for every job j
          sum_j r_j a[j,g] + sum_p s_p b[p,g] <= C_g                    for every type g
          tau_j = sum_g T[j,g] a[j,g] + sum_{p ∋ j, g} T[j|p,g] b[p,g]
          tau_j / Tfair_j + sigma_j >= (1 - epsilon) + D_j
          a, b binary (in [0, 1] for the relaxation); sigma >= 0

with ``r_j = s_j`` for a gang of whole GPUs and, for a job that asks for part of one GPU (``0 < s_j < 1``),
its request rounded up to the share class ``1/2^k`` (``k = 0..4``), which keeps the capacity row exact (any
placement within it packs onto whole GPUs); the objective and ``Tfair_j`` use ``s_j`` as given, and pairs
never contain a fractional job.

Model building loops over the variables in Python: fine for a reference, too slow for the hot path, which is
why ``fast`` and the default ``exact`` build from arrays.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from fairshare.errors import SolverError
from fairshare.formulation import RoundModel
from fairshare.solvers.base import SolverOutcome, Termination
from fairshare.solvers.highs import scheduler

__all__ = ["build_pyomo_model", "solve_pyomo"]


def build_pyomo_model(model: RoundModel, *, integer: bool = True) -> Any:
    """The section 3 MILP (or its relaxation) as a ``pyomo.environ.ConcreteModel``.

    Variables ``x[c]`` are indexed by placement column (``model.columns``: alone columns ``a[j,g]`` first,
    then pair columns ``b[p,g]``), so the solution maps back to placements one to one.
    """
    import pyomo.environ as pyo

    p, c = model.problem, model.columns
    n = p.num_jobs
    m = pyo.ConcreteModel(name="fairshare_round_section3")
    m.J = pyo.RangeSet(0, n - 1)
    m.G = pyo.RangeSet(0, len(p.gpu_types) - 1)
    m.P = pyo.RangeSet(0, c.num - 1)
    m.x = pyo.Var(m.P, domain=pyo.Binary if integer else pyo.UnitInterval)
    m.sigma = pyo.Var(m.J, domain=pyo.NonNegativeReals)

    members: list[list[int]] = [[] for _ in range(n)]  # columns containing job j
    tput: list[dict[int, float]] = [{} for _ in range(n)]  # T of job j in column k
    for k in range(c.num):
        a, b = int(c.job_a[k]), int(c.job_b[k])
        members[a].append(k)
        tput[a][k] = float(c.tput_a[k])
        if b >= 0:
            members[b].append(k)
            tput[b][k] = float(c.tput_b[k])

    def tau(mm: Any, j: int) -> Any:
        return sum(tput[j][k] * mm.x[k] for k in members[j])

    m.one_placement = pyo.Constraint(m.J, rule=lambda mm, j: sum(mm.x[k] for k in members[j]) <= 1)
    m.capacity = pyo.Constraint(
        m.G, rule=lambda mm, g: sum(c.size[k].item() * mm.x[k] for k in range(c.num) if c.gpu[k] == g)
        <= int(p.capacity[g]) if (c.gpu == g).any() else pyo.Constraint.Skip)
    tfair, need, tmax = model.fair.fair_throughput, model.need, model.tmax
    m.fairness = pyo.Constraint(
        m.J, rule=lambda mm, j: tau(mm, j) / float(tfair[j]) + mm.sigma[j] >= float(need[j]))
    w, lam, s, pi = model.price, p.fairness_weight, p.scale, p.priority  # w_j f_j: priced weights
    m.objective = pyo.Objective(
        expr=sum(float(pi[j]) * float(s[j]) / float(tmax[j]) * tau(m, j) for j in range(n))
        - lam * sum(float(w[j]) * m.sigma[j] for j in range(n)),
        sense=pyo.maximize)
    return m


def solve_pyomo(model: RoundModel, *, integer: bool, time_limit: float | None = None,
                mip_rel_gap: float = 1e-6, threads: int | None = None, seed: int = 0,
                verbose: bool = False) -> SolverOutcome:
    """Build and solve the reference model with HiGHS through Pyomo.

    Returns the placement columns in ``x`` and section 3's objective and bound (no ``obj_null`` offset).
    """
    from pyomo.contrib.solver.common.factory import SolverFactory
    from pyomo.contrib.solver.common.results import SolutionStatus

    pm = build_pyomo_model(model, integer=integer)
    t0 = time.perf_counter()
    solver = SolverFactory("highs")
    if not solver.available():
        raise SolverError("Pyomo cannot find HiGHS: pip install highspy")
    options: dict[str, float | int] = {"mip_rel_gap": mip_rel_gap, "random_seed": seed}
    with scheduler(threads) as pool_threads:  # HiGHS's thread pool is shared with the highspy backend
        if pool_threads is not None:
            options["threads"] = pool_threads
        res = solver.solve(pm, time_limit=time_limit, solver_options=options, load_solutions=False,
                           raise_exception_on_nonoptimal_result=False, tee=verbose)
    seconds = time.perf_counter() - t0
    tc = res.termination_condition
    message = f"{tc.name} / {res.solution_status.name}"
    termination = _STATUS.get(tc.name, Termination.ERROR)
    if termination in (Termination.INFEASIBLE, Termination.UNBOUNDED, Termination.ERROR):
        raise SolverError(f"HiGHS via Pyomo stopped with {message}; a valid round is always feasible")
    bound = res.objective_bound if res.objective_bound is not None else float("nan")
    if res.solution_status not in (SolutionStatus.optimal, SolutionStatus.feasible):
        return SolverOutcome(None, float("nan"), float(bound), termination, message, seconds)
    res.solution_loader.load_vars()
    x = np.array([pm.x[k].value or 0.0 for k in range(model.columns.num)])
    objective = float(res.incumbent_objective) if res.incumbent_objective is not None else float("nan")
    gap = 0.0 if termination is Termination.OPTIMAL and not integer else float("nan")
    return SolverOutcome(x, objective, float(bound), termination, message, seconds, mip_gap=gap)


_STATUS: dict[str, Termination] = {
    "convergenceCriteriaSatisfied": Termination.OPTIMAL,
    "maxTimeLimit": Termination.TIME_LIMIT,
    "iterationLimit": Termination.LIMIT,
    "objectiveLimit": Termination.LIMIT,
    "minStepLength": Termination.LIMIT,
    "interrupted": Termination.INTERRUPTED,
    "provenInfeasible": Termination.INFEASIBLE,
    "locallyInfeasible": Termination.INFEASIBLE,
    "infeasibleOrUnbounded": Termination.UNBOUNDED,
    "unbounded": Termination.UNBOUNDED,
}
"""Name of a Pyomo ``TerminationCondition`` -> :class:`~fairshare.solvers.Termination`; others are ``ERROR``."""
