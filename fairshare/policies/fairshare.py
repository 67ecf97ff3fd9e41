"""``fairshare``: the round MILP of spec round-problem.md (efficiency under spatiotemporal fairness).

maximise ``E - lambda * sum_j w_j sigma_j`` subject to one placement per job, capacity, whole gangs and
``rho_j + sigma_j >= (1 - epsilon) + D_j``, where ``D_j`` carries what a job was owed from earlier rounds
(the simulator supplies the deficits in the round, ``state.model.problem``). Modes ``fast`` (LP + rounding +
polish, the default) and ``exact`` (HiGHS to proven optimality or a time limit); see
:func:`fairshare.allocate`.

Priorities (spec section 7): ``priority`` names a rule of :mod:`fairshare.priority` (``"none"``, ``"remaining"``,
``"finish-time"``) or is a rule object or callable; each round the rule computes ``pi_j`` from the jobs' state
(remaining and done iterations, age) and the round is solved with them.

Ablation flag ``heterogeneity_aware=False``: the policy plans as if every GPU type were equally fast for a
job (each job's alone and co-located throughputs replaced by their mean over the types where it can run,
so fair shares, efficiency and fairness rows see no difference between types); the placement is then
executed, and reported, with the true throughputs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from fairshare.allocate import allocate, bind_round, solve_model
from fairshare.allocation import Allocation
from fairshare.fair_share import fair_share
from fairshare.formulation import RoundModel, build_model
from fairshare.methods.warm import WarmCache
from fairshare.policies.base import Placed, Policy, RoundState, _check_placement, register
from fairshare.priority import JobHistory, NoPriority, PriorityRule, rule_from_options
from fairshare.problem import RoundProblem
from fairshare.shortfall_price import NoPrice, ShortfallPriceRule, price_rule_from_options

__all__ = ["FairsharePolicy"]


POLICY_POLISH_SECONDS = 60.0
"""Safety time limit of ``fast``'s polish MILP in this policy, unless ``options`` sets ``polish_seconds``.

The polish is bounded by 200 branch-and-bound nodes, a limit of work; its time limit is only a guard. The
engine's default (1 s) bounds a live scheduler's round, but on a busy machine a polish MILP can reach it and
stop at another placement than on an idle one. In a simulation the same results on any machine matter more
than a round's time, so the guard is set far above what 200 nodes take (docs/performance.md, "Reproducible
simulations").
"""


@register("fairshare")
@dataclass(frozen=True)
class FairsharePolicy(Policy):
    """fairshare's own policy.

    Parameters
    ----------
    mode : {"fast", "exact"}
        The solve mode (:func:`fairshare.allocate`); reported as the allocation's ``mode``.
    epsilon : float, optional
        Overrides the round's epsilon (the simulator builds rounds with its own epsilon otherwise).
    heterogeneity_aware : bool
        False plans with type-blind throughputs (an ablation; see the module doc).
    options : dict
        :class:`~fairshare.allocate.SolveOptions` fields (``time_limit``, ``polish_seconds``, ...); in mode
        ``fast`` the polish's safety time limit is :data:`POLICY_POLISH_SECONDS` unless set here. With
        ``{"warm_start": True}`` (mode ``fast``) the policy keeps a :class:`~fairshare.methods.warm.WarmStart`
        between the rounds of a simulation, in a cache that is left out of comparison and repr, pickles
        empty (a copy in a worker process starts cold) and is reset when a round is not later than the
        previous one (a new run).
    priority : str, rule or callable
        The priority rule (:func:`fairshare.priority.priority_rule`). Default ``"remaining"`` (shortest
        remaining work first, the winner of docs/results-priority.md); ``"none"``: every ``pi_j = 1``.
    priority_exponent, priority_clip : optional
        Parameters of a named rule (``exponent``, ``clip``); ``None``: the rule's defaults.
    restart_aware : bool
        Plan with the running jobs' placements and restart costs when the simulator (or caller) gives them
        (spec section 11; default True). False plans as release 0.2 did, blind to restarts.
    shortfall_price : str, rule or callable
        The shortfall-price rule (:func:`fairshare.shortfall_price.price_rule`, spec section 10). Default
        ``"finish-time"``: a round of a job's shortfall priced in units of its fair finish time, so that a short
        job's delay weighs as much as its finish-time fairness says (docs/results-real-fairness.md measured it
        on two real traces and Gavel's recipe); ``"none"``: every ``f_j = 1``.
    shortfall_price_exponent, shortfall_price_clip, shortfall_price_basis : optional
        Parameters of a named price rule; ``None``: the rule's defaults.
    """

    mode: str = "fast"
    epsilon: float | None = None
    heterogeneity_aware: bool = True
    options: dict[str, Any] = field(default_factory=dict)
    priority: Any = "remaining"
    priority_exponent: float | None = None
    priority_clip: tuple[float, float] | None = None
    restart_aware: bool = True
    shortfall_price: Any = "finish-time"
    shortfall_price_exponent: float | None = None
    shortfall_price_clip: tuple[float, float] | None = None
    shortfall_price_basis: str | None = None
    replans_on_events: ClassVar[bool] = True
    _rule: PriorityRule = field(init=False, repr=False, compare=False, default=NoPriority())
    _price_rule: ShortfallPriceRule = field(init=False, repr=False, compare=False, default=NoPrice())
    _warm: WarmCache = field(init=False, repr=False, compare=False, default_factory=WarmCache)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_rule", rule_from_options(
            {"priority": self.priority, "priority_exponent": self.priority_exponent,
             "priority_clip": self.priority_clip}))
        object.__setattr__(self, "_price_rule", price_rule_from_options(
            {"shortfall_price": self.shortfall_price, "shortfall_price_exponent": self.shortfall_price_exponent,
             "shortfall_price_clip": self.shortfall_price_clip,
             "shortfall_price_basis": self.shortfall_price_basis}))

    @property
    def sees_running_jobs(self) -> bool:  # type: ignore[override]
        """Whether the simulator gives this policy the running jobs and their restart costs (``restart_aware``)."""
        return self.restart_aware

    @property
    def _solve_options(self) -> Any:
        """``options`` with the policy's polish guard (:data:`POLICY_POLISH_SECONDS`) in mode ``fast``."""
        if self.mode == "fast" and isinstance(self.options, Mapping) and "polish_seconds" not in self.options:
            return {**self.options, "polish_seconds": POLICY_POLISH_SECONDS}
        return self.options

    def allocate(self, state: RoundState) -> Allocation:
        """Solve the round in ``mode``: the mode's own allocation, with ``policy="fairshare"``.

        This is the one policy that does not use the template :meth:`Policy.allocate
        <fairshare.policies.base.Policy.allocate>`, because its result comes from a solve mode, not from a
        placement: it keeps what the mode reports beyond the placement (``mode``, the proven ``bound``, the
        ``mip_gap``, the ``relaxation`` and the mode's own build and solve times), and it is evaluated on the
        round as planned, with the ``epsilon`` override (so shortfall and next deficits use that epsilon). An
        allocation rebuilt from the placement by the template would lose the former and be evaluated on
        ``state.model``. The modes' placements are feasible by construction; the type-blind plan, carried
        over to the true round, is checked as the template checks a placement.

        Raises
        ------
        PolicyError
            If the type-blind plan does not carry over to a feasible placement (a bug).
        """
        # The round as planned: the simulator's model, or (with the epsilon override) a rebuilt one. Priorities
        # weigh only the columns' values, so they are set on a built model without building it again.
        model: RoundModel | None = state.model
        problem = state.model.problem
        if self.epsilon is not None and self.epsilon != problem.epsilon:
            problem, model = problem.replace(epsilon=self.epsilon), None
        priced = not isinstance(self._price_rule, NoPrice)
        if priced or not isinstance(self._rule, NoPriority):
            history = JobHistory(remaining_iterations=state.remaining_iterations, done_iterations=state.done_iterations,
                               age=np.maximum(0.0, state.time - state.arrival))
            priority = None if isinstance(self._rule, NoPriority) else self._rule.priorities(problem, history)
            price = None
            if priced:
                tfair = model.fair.fair_throughput if model is not None else fair_share(problem).fair_throughput
                price = self._price_rule.prices(problem, history, tfair)
            if model is not None:
                model = model.with_prices(priority=priority, shortfall_price=price)
                problem = model.problem
            else:
                problem = problem.with_prices(priority=priority, shortfall_price=price)
        if self.heterogeneity_aware:
            with self._warm.state(state.time) as warm:
                if model is not None:
                    solved = bind_round(solve_model(model, mode=self.mode, options=self._solve_options, warm=warm),
                                        problem.nodes)
                else:
                    solved = allocate(problem, mode=self.mode, options=self._solve_options, warm=warm)
            return dataclasses.replace(solved, report=dataclasses.replace(solved.report, policy=self.name))
        planned = solve_model(build_model(_type_blind(problem)), mode=self.mode, options=self._solve_options)
        real = model if model is not None else build_model(problem)
        x = _columns_of(real, planned)
        _check_placement(self.name, real, x)
        return Allocation.from_columns(real, x, status=planned.status, mode=self.mode, policy=self.name,
                                       solve_seconds=planned.report.solve_seconds,
                                       message=planned.report.message + " (type-blind plan)")

    def place(self, state: RoundState) -> Placed:
        """The placement of :meth:`allocate` as 0/1 values of the columns of ``state.model`` (integer modes)."""
        alloc = self.allocate(state)
        return Placed(_columns_of(state.model, alloc), alloc.status, alloc.report.message)


def _type_blind(problem: RoundProblem) -> RoundProblem:
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


def _columns_of(model: RoundModel, alloc: Allocation) -> np.ndarray:
    """0/1 column values of ``model`` for an integer allocation of the same round (same columns)."""
    c = model.columns
    x = np.zeros(c.num)
    gpu, partner = alloc.jobs.job_gpu, alloc.jobs.job_partner
    for k in range(c.num):
        a, b, g = int(c.job_a[k]), int(c.job_b[k]), int(c.gpu[k])
        if gpu[a] == g and (partner[a] == b if b >= 0 else partner[a] < 0):
            x[k] = 1.0
    return x
