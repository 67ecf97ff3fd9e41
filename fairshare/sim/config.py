"""The options of a simulation run (:class:`SimConfig`) and the limits they are checked against."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from fairshare._validate import clip, is_real
from fairshare.errors import InvalidInputError
from fairshare.sim.traces import MAX_ARRIVAL

__all__ = ["DEFAULT_EVENT_SPACING", "MAX_RESTART_OVERHEAD", "ROUND_LENGTH_RANGE", "ROUND_LIMIT", "STARTS", "SimConfig"]


ROUND_LENGTH_RANGE = (1e-3, 1e8)
"""Smallest and largest round length (s) a simulation accepts."""

ROUND_LIMIT = 1_000_000
"""Most rounds a run may be sure to need: a run whose longest job alone needs more rounds than this (its work
over its fastest throughput, divided by the round length) is refused before it starts unless a horizon
(``until``, ``max_rounds``) cuts it shorter. It would otherwise run for hours or days of wall time."""


STARTS = ("round", "idle", "events")
"""Values of :attr:`SimConfig.starts`: jobs start only at round boundaries, also on idle GPUs between them, or
(``events``) the policy plans again at arrivals and finishes where its published scheduler does."""

MAX_RESTART_OVERHEAD = 86400.0
"""Longest restart overhead a simulation accepts (a day)."""

DEFAULT_EVENT_SPACING = 30.0
"""Default :attr:`SimConfig.event_spacing`: at most one plan per 30 s of simulated time."""


def _is_count(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


@dataclass(frozen=True, slots=True)
class SimConfig:
    """Options of a simulation run (everything but the trace, the cluster and the policy).

    Parameters
    ----------
    round_length : float
        Δ, seconds per round (> 0).
    epsilon : float
        Fairness slack of every round problem, in ``[0, 1)``.
    fairness_weight : float
        ``lambda`` of every round problem (> 0).
    restart_overhead : float
        Seconds lost by a job whose placement changed from the previous plan (a checkpoint and reload), ``>= 0``
        and at most :data:`MAX_RESTART_OVERHEAD`. A restart longer than what is left of a round goes on into
        the next plan if the job keeps its placement. Default 0 here (a run that measures the policy alone);
        the command line and the published comparisons use 30 s.
    max_pairs_per_job : int or None
        Cap on co-location candidates per job (None: all).
    colocation : bool
        Offer co-location candidates at all.
    carry_deficits : bool
        Carry deficits across rounds (False: spatial-only fairness).
    wait_is_owed : bool
        A job is owed the fair progress of the time it waited before its first plan (``(1 - epsilon) * wait /
        round_length``, its deficit when it first joins a plan) and, with starts between rounds, of the part of
        its first round it did not get. False: a newcomer starts owing nothing (release 0.2's rule).
    max_rounds : int, optional
        Stop after this many rounds (unfinished jobs have ``finish = nan``).
    until : float, optional
        Horizon in simulated seconds: no round starts at or after this time (unfinished jobs have
        ``finish = nan`` and are counted as unfinished). Default: run until every job has finished.
    stop_when_finished : tuple of str, optional
        Job ids: stop at the end of the round in which the last of them finishes, however many other jobs are
        still active (they keep ``finish = nan``). This is how a steady-state window is measured on a
        continuous trace, e.g. Gavel's mean JCT of jobs 4000-5000 while later jobs keep arriving.
    starts : {"round", "idle", "events"}
        When a job may start. ``"events"`` (default): a policy that plans again at events
        (:attr:`~fairshare.policies.base.Policy.replans_on_events`: fairshare's) plans the rest of the round at
        every arrival and finish, no sooner than ``event_spacing`` after its last plan, with the running jobs'
        placements and ``restart_overhead`` in the round (a job moves only if it is worth its restart), and
        between its plans waiting jobs start on idle GPUs as with ``"idle"``; the other policies, whose
        published schedulers plan at round boundaries only, run as with ``"idle"``. ``"idle"``: at round
        boundaries, when the policy plans, and also between them: at every arrival or finish inside a round,
        waiting jobs start on idle GPUs that fit them (in arrival order, each alone on its fastest idle type)
        and run until the next boundary, where the policy re-plans every job as before (see :func:`simulate`).
        ``"round"``: only at round boundaries, the only rule of 0.1 (and of Gavel's simulator, which the Gavel
        cross-check keeps).
    event_spacing : float
        ``starts="events"``: the least simulated time between two plans, in ``[0, round_length]`` seconds.

    Raises
    ------
    InvalidInputError
        For an invalid option, naming it.

    Examples
    --------
    >>> cfg = SimConfig(round_length=1800, epsilon=0.1)
    >>> cfg.round_length, cfg.restart_overhead, SimConfig.coerce(cfg, epsilon=0.2).epsilon
    (1800.0, 0.0, 0.2)
    >>> SimConfig(restart_overhead=-1)
    Traceback (most recent call last):
    ...
    fairshare.errors.InvalidInputError: `restart_overhead` = -1: must be a number of seconds in [0, 86400]
    """

    round_length: float = 360.0
    epsilon: float = 0.0
    fairness_weight: float = 100.0
    restart_overhead: float = 0.0
    max_pairs_per_job: int | None = 4
    colocation: bool = True
    carry_deficits: bool = True
    wait_is_owed: bool = True
    max_rounds: int | None = None
    stop_when_finished: tuple[str, ...] | None = None
    until: float | None = None
    starts: str = "events"
    event_spacing: float = DEFAULT_EVENT_SPACING

    def __post_init__(self) -> None:
        """Validate every option; store the numbers as floats and ``stop_when_finished`` as a tuple."""
        set_ = object.__setattr__
        lo, hi = ROUND_LENGTH_RANGE
        if not (is_real(self.round_length) and lo <= self.round_length <= hi):
            raise InvalidInputError("round_length", clip(self.round_length),
                                    f"must be a positive number of seconds from {lo:g} to {hi:g}")
        set_(self, "round_length", float(self.round_length))
        if not (is_real(self.restart_overhead) and 0 <= self.restart_overhead <= MAX_RESTART_OVERHEAD):
            raise InvalidInputError("restart_overhead", clip(self.restart_overhead),
                                    f"must be a number of seconds in [0, {MAX_RESTART_OVERHEAD:.0f}]")
        set_(self, "restart_overhead", float(self.restart_overhead))
        if not (is_real(self.epsilon) and 0 <= self.epsilon < 1):
            raise InvalidInputError("epsilon", self.epsilon, "must be in [0, 1)")
        set_(self, "epsilon", float(self.epsilon))
        if not (is_real(self.fairness_weight) and self.fairness_weight > 0):
            raise InvalidInputError("fairness_weight", self.fairness_weight, "must be finite and > 0")
        set_(self, "fairness_weight", float(self.fairness_weight))
        if self.max_pairs_per_job is not None and not _is_count(self.max_pairs_per_job):
            raise InvalidInputError("max_pairs_per_job", self.max_pairs_per_job,
                                    "must be a non-negative integer or None")
        for name in ("colocation", "carry_deficits", "wait_is_owed"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidInputError(name, getattr(self, name), "must be True or False")
        if self.max_rounds is not None and not _is_count(self.max_rounds):
            raise InvalidInputError("max_rounds", self.max_rounds, "must be a non-negative integer or None")
        if self.until is not None:
            if not (is_real(self.until) and 0 < self.until <= MAX_ARRIVAL):
                raise InvalidInputError("until", clip(self.until),
                                        f"must be a number of seconds > 0 and <= {MAX_ARRIVAL:g}, or None")
            set_(self, "until", float(self.until))
        if self.starts not in STARTS:
            raise InvalidInputError("starts", clip(self.starts), f"must be one of {', '.join(map(repr, STARTS))}")
        if not (is_real(self.event_spacing) and 0 <= self.event_spacing <= self.round_length):
            raise InvalidInputError("event_spacing", clip(self.event_spacing),
                                    "must be a number of seconds in [0, round_length]")
        set_(self, "event_spacing", float(self.event_spacing))
        watch = self.stop_when_finished
        if watch is not None:
            if isinstance(watch, str) or not isinstance(watch, Iterable):
                raise InvalidInputError("stop_when_finished", watch, "must be a collection of job ids")
            watch = tuple(watch)
            if not watch:
                raise InvalidInputError("stop_when_finished", watch, "names no job")
            set_(self, "stop_when_finished", watch)

    @property
    def offers_pairs(self) -> bool:
        """Whether rounds get co-location candidates (``colocation`` and a cap that is not 0)."""
        return self.colocation and (self.max_pairs_per_job is None or self.max_pairs_per_job > 0)

    @classmethod
    def coerce(cls, config: SimConfig | Mapping[str, Any] | None = None, **overrides: Any) -> SimConfig:
        """A config from an instance, a mapping of fields or ``None`` (defaults), with keyword overrides.

        Raises
        ------
        InvalidInputError
            For an unknown option name or an invalid value.
        """
        if config is not None and not isinstance(config, (SimConfig, Mapping)):
            raise InvalidInputError("config", type(config).__name__, "must be a SimConfig or a mapping")
        base = config if isinstance(config, SimConfig) else cls(**_known_fields(dict(config or {})))
        return replace(base, **_known_fields(overrides)) if overrides else base

    def to_dict(self) -> dict[str, Any]:
        """The options as JSON-ready values (``stop_when_finished`` as a list or ``None``)."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.stop_when_finished is not None:
            d["stop_when_finished"] = list(self.stop_when_finished)
        return d

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> SimConfig:
        """The config of :meth:`to_dict` output; keys that are not options (``cluster``, ...) are ignored.

        A config without ``starts`` was written before the option existed, when jobs started only at round
        boundaries: it reads as ``starts="round"``, not as today's default.
        """
        names = {f.name for f in fields(cls)}
        return cls(**{"starts": "round", **{k: v for k, v in doc.items() if k in names}})


def _known_fields(kw: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(SimConfig)}
    for k, v in kw.items():
        if k not in names:
            raise InvalidInputError(k, v, f"unknown simulation option (known: {', '.join(sorted(names))})")
    return kw
