"""The round after an event (jobs arrived, finished or changed), for :meth:`~fairshare.engine.Engine.event`.

:func:`event_round` checks an event's arguments against the pending plan and the jobs it was made for, and
returns the jobs and candidate pairs of the rest of the round: the departed jobs and their pairs gone, the changed
objects in place, the arrived jobs at the end, and every job's ``current`` placement set from the plan that ran
(spec section 11), so that moving a running job must be worth its restart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fairshare._validate import clip
from fairshare.allocation import Allocation
from fairshare.engine_state import as_real
from fairshare.errors import InvalidInputError

__all__ = ["EventRound", "event_round", "with_current"]


@dataclass(frozen=True)
class EventRound:
    """The rest of a round after an event.

    Attributes
    ----------
    ran, rest : float
        Seconds of the pending plan's round that ran before the event, and that are left.
    jobs : list of mapping
        The job objects of the rest of the round, with their ``current`` placements.
    colocation : list of mapping
        Its candidate pairs: the last plan's that name no departed job, then the event's.
    departed : frozenset of str
        The jobs that left.
    arrived, changed : list of mapping
        The arrived objects (not running: no ``current``) and the changed ones (with their ``current``).
    placed : dict
        Id -> new ``current`` placement (``None``: not running) of the other jobs whose placement changed.
    """

    ran: float
    rest: float
    jobs: list[Mapping[str, Any]]
    colocation: list[Mapping[str, Any]]
    departed: frozenset[str]
    arrived: list[Mapping[str, Any]]
    changed: list[Mapping[str, Any]]
    placed: dict[str, Any]

    @property
    def read(self) -> set[str]:
        """The ids whose objects the event gave (arrived or changed): their rules' inputs are read again."""
        return {str(j.get("id")) for j in self.changed} | {str(j.get("id")) for j in self.arrived}


def event_round(plan: Allocation, length: float, jobs: Sequence[Mapping[str, Any]],
                pairs: Sequence[Mapping[str, Any]], *, seconds: float, arrived: Sequence[Mapping[str, Any]],
                departed: Sequence[str], changed: Sequence[Mapping[str, Any]],
                colocation: Sequence[Mapping[str, Any]]) -> EventRound:
    """The rest of the round of ``plan`` (made for ``length`` seconds, for ``jobs`` and ``pairs``) after an event.

    Parameters are those of :meth:`Engine.event <fairshare.engine.Engine.event>`.

    Raises
    ------
    InvalidInputError
        ``seconds`` not in ``(0, length)``; ``departed[k]`` or ``changed[k].id`` not a job of ``jobs``;
        ``arrived[k]`` not an object; an argument that is not a list.
    """
    ran = as_real(seconds)
    if ran is None or not 0 < ran < length:
        raise InvalidInputError("seconds", clip(seconds), f"must be a number of seconds in (0, {length:g}), the "
                                "time the pending plan ran (at its end, commit() and plan() the next round)")
    if isinstance(departed, (str, bytes)) or not isinstance(departed, Sequence):
        raise InvalidInputError("departed", clip(departed), "must be a list of job ids")
    known = {j.get("id") for j in jobs}
    for k, jid in enumerate(departed):
        if jid not in known:
            raise InvalidInputError(f"departed[{k}]", clip(jid), "not a job of the last plan")
    for what, given in (("arrived", arrived), ("changed", changed)):
        if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Sequence):
            raise InvalidInputError(what, clip(given), "must be a list of job objects")
    for k, job in enumerate(arrived):
        if not isinstance(job, Mapping):
            raise InvalidInputError(f"arrived[{k}]", clip(job), "must be an object")
    replace_by: dict[str, Mapping[str, Any]] = {}
    for k, job in enumerate(changed):
        name: Any = job.get("id") if isinstance(job, Mapping) else None
        if name not in known or name in departed:
            raise InvalidInputError(f"changed[{k}].id", clip(name), "not a job of the last plan")
        replace_by[name] = job
    if isinstance(colocation, (str, bytes, Mapping)) or not isinstance(colocation, Sequence):
        raise InvalidInputError("colocation", clip(colocation), "must be a list")
    gone = frozenset(departed)
    now, placed = _rest_of_round(plan, jobs, gone, replace_by)
    came = [with_current(j, None) for j in arrived]  # a job that arrives is not running yet
    cols = [c for c in pairs if gone.isdisjoint(c.get("jobs", ()))] if gone else list(pairs)
    now += came
    changed_now = [j for j in now if isinstance(j, Mapping) and j.get("id") in replace_by] if replace_by else []
    return EventRound(ran=ran, rest=length - ran, jobs=now, colocation=cols + list(colocation), departed=gone,
                      arrived=came, changed=changed_now, placed=placed)


def with_current(job: Mapping[str, Any], cur: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """``job`` with its ``current`` placement ``cur`` (``None``: not running); ``job`` itself if it has it."""
    if not isinstance(job, Mapping) or job.get("current") == cur:
        return job
    out = {k: v for k, v in job.items() if k != "current"}
    if cur is not None:
        out["current"] = cur
    return out


def _rest_of_round(plan: Allocation, jobs: Sequence[Mapping[str, Any]], gone: frozenset[str],
                   replace_by: Mapping[str, Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], dict[str, Any]]:
    """The jobs that stay, each with where ``plan`` runs it; and the new placements of the jobs not replaced."""
    where: dict[str, dict[str, str]] = {}
    for p in plan.placements:
        if len(p.jobs) == 2:
            where[p.jobs[0]] = {"gpu": p.gpu, "partner": p.jobs[1]}
            where[p.jobs[1]] = {"gpu": p.gpu, "partner": p.jobs[0]}
        else:
            for name in p.jobs:
                where[name] = {"gpu": p.gpu}
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
            job = with_current(job, cur)
            if key not in replace_by:
                placed[key] = cur
        now.append(job)
    return now, placed
