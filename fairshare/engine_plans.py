"""A plan an :class:`~fairshare.engine.Engine` made and has not yet committed, and how committing it moves deficits.

:class:`PendingPlan` is what a plan leaves for its commit: the allocation, the length of the round it was made
for, and what each job owed when it was made. :func:`settle` is the deficit update of spec section 4 for the part
of a round that ran, ``D_j <- (t / R) * max(0, D_j R / t + (1 - epsilon) - rho_j)``. :class:`PlanLog` remembers
the last plans committed or superseded, to say why a commit is refused.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from fairshare._validate import clip
from fairshare.allocation import Allocation, Status
from fairshare.engine_config import EngineConfig
from fairshare.engine_rounds import owed_on_arrival
from fairshare.engine_state import as_real
from fairshare.errors import InvalidInputError
from fairshare.fair_share import next_deficit
from fairshare.problem import MAX_VALUE, RoundProblem
from fairshare.running import MAX_SECONDS

__all__ = ["PendingPlan", "PlanLog", "describe", "pending_plan", "settle"]

_KEEP_RECENT = 4  # committed and superseded plans remembered to explain a refused commit


@dataclass(frozen=True)
class PendingPlan:
    """A plan waiting for its commit.

    Attributes
    ----------
    allocation : Allocation
        The plan.
    seconds : float
        Length of the round it was made for.
    fraction : float
        ``seconds`` over the engine's round length.
    epsilon : float
        The round's fairness slack.
    owed : mapping of str to float
        What each job of the round owed when the plan was made, in rounds of the engine's length, the jobs
        that could run nowhere (:attr:`held`) included.
    held : tuple of str
        Jobs left out because they could run on no GPU of the cluster; they count as having got nothing.
    """

    allocation: Allocation
    seconds: float
    fraction: float
    epsilon: float
    owed: Mapping[str, float]
    held: tuple[str, ...]


def pending_plan(allocation: Allocation, problem: RoundProblem, held: Mapping[str, float], *,
                 deficits: Mapping[str, float], config: EngineConfig, seconds: float) -> PendingPlan:
    """The pending plan of ``allocation``, solved for ``problem`` (a round of ``seconds``).

    Parameters
    ----------
    allocation : Allocation
        The plan.
    problem : RoundProblem
        The round it solved; its deficits are in units of a round of ``seconds``.
    held : mapping of str to float
        Id -> ``age_seconds`` of the jobs left out of ``problem`` because they can run nowhere; what they owe is
        taken from ``deficits`` (or their wait, for a job the engine has not seen) as for the jobs of the round.
    deficits : mapping of str to float
        The engine's carried deficits, in rounds of ``config.round_seconds``.
    config : EngineConfig
        The engine's settings (its round length and slack).
    seconds : float
        Length of the round planned.

    Returns
    -------
    PendingPlan
    """
    fraction = seconds / config.round_seconds
    owed = dict(zip(problem.job_ids, (problem.deficit * fraction).tolist()))
    for jid, age in held.items():  # what the round would carry for them, in the same units
        known = deficits.get(jid)
        start = owed_on_arrival(age, config.epsilon, config.round_seconds) if known is None else known
        owed[jid] = min(MAX_VALUE, start / fraction) * fraction
    return PendingPlan(allocation=allocation, seconds=seconds, fraction=fraction, epsilon=problem.epsilon,
                       owed=MappingProxyType(owed), held=tuple(held))


def settle(plan: PendingPlan, *, progress: Mapping[str, float] | None, seconds: float | None,
           round_seconds: float) -> dict[str, float]:
    """The deficits after ``plan`` ran: every job of its round, none other.

    Parameters
    ----------
    plan : PendingPlan
        The plan that ran.
    progress : mapping of str to float or None
        The progress (``rho_j``, finite and ``>= 0``) each listed job actually received; the others as planned
        (nothing for a plan without a solution or a held job).
    seconds : float or None
        How long the plan ran, if cut short (default: its length).
    round_seconds : float
        The engine's round length, the unit of the deficits.

    Returns
    -------
    dict
        Job id -> new deficit, ``>= 0``, in rounds of ``round_seconds``.

    Raises
    ------
    InvalidInputError
        ``progress``: not a mapping; ``progress.<id>``: a job not in the round or a bad value; ``seconds``:
        not in ``(0, MAX_SECONDS]``.
    """
    alloc = plan.allocation
    if alloc.status == Status.NO_SOLUTION:
        rho = dict.fromkeys(alloc.job_ids, 0.0)
    else:
        rho = dict(zip(alloc.job_ids, alloc.jobs.progress.tolist()))
    rho.update(dict.fromkeys(plan.held, 0.0))  # jobs that could run nowhere got nothing
    if progress is not None and not isinstance(progress, Mapping):
        raise InvalidInputError("progress", clip(progress), "must be a mapping of job id -> progress")
    for jid, r in (progress or {}).items():
        if jid not in rho:
            raise InvalidInputError(f"progress.{jid}", clip(r), "not a job of this round")
        value = as_real(r)
        if value is None or value < 0:
            raise InvalidInputError(f"progress.{jid}", clip(r), "must be a finite number >= 0")
        rho[jid] = value
    fraction = plan.fraction
    if seconds is not None:
        ran = as_real(seconds)
        if ran is None or not 0 < ran <= MAX_SECONDS:
            raise InvalidInputError("seconds", clip(seconds), f"must be a number of seconds in (0, {MAX_SECONDS:.0f}]")
        fraction = ran / round_seconds
    ids = list(rho)
    # what each job owed when the plan was made (a newcomer's wait included), in units of the part that ran
    start = np.minimum(MAX_VALUE, np.array([plan.owed.get(j, 0.0) for j in ids]) / fraction)
    nxt = fraction * next_deficit(start, plan.epsilon, np.array([rho[j] for j in ids]))
    return dict(zip(ids, nxt.tolist()))


class PlanLog:
    """The last plans committed or superseded, to say why a commit of one of them is refused."""

    def __init__(self) -> None:
        self._recent: deque[tuple[Allocation, str]] = deque(maxlen=_KEEP_RECENT)

    def add(self, allocation: Allocation, what: str) -> None:
        """Remember that ``allocation`` was ``"committed"`` or ``"superseded"``."""
        self._recent.append((allocation, what))

    @property
    def last_committed(self) -> bool:
        """Whether the newest plan remembered was committed."""
        return bool(self._recent) and self._recent[-1][1] == "committed"

    def why_not_pending(self, allocation: object) -> str:
        """Why ``allocation`` is not the pending plan, in words for the error."""
        if not isinstance(allocation, Allocation):
            return "must be the Allocation the last plan() returned"
        for seen, what in reversed(self._recent):
            if seen is allocation:
                if what == "committed":
                    return "already committed (each plan counts once; plan the next round first)"
                return ("an older plan: plan() was called again after it; commit the newest plan, with the "
                        "progress actually delivered as progress=")
        return ("not the pending plan of this engine (commit the allocation its last plan() returned, with "
                "the progress actually delivered as progress=)")


def describe(allocation: object) -> str:
    """A short description of what was given as an allocation, for an error."""
    if isinstance(allocation, Allocation):
        return f"<Allocation of {len(allocation.job_ids)} jobs, status {allocation.status}>"
    return type(allocation).__name__
