"""Where a round's jobs run now, and what moving one costs (spec section 11).

A live scheduler plans again while jobs run. Moving a running job (to another GPU type, or away from the
partner it shares GPUs with) costs a restart: a checkpoint and a reload of ``restart_seconds`` during which the
job does no work. A :class:`Running` holds, per job of a round, its current type and partner and its restart
cost, and the length of the round being planned. In the round problem a column that moves a running job gives
that job ``(1 - restart_seconds / round_seconds)`` of its throughput there (at least 0), in the efficiency
term and in fair progress alike; a column that keeps it where it is, and leaving it out, cost nothing extra.
Jobs that do not run now (type ``-1``) are unaffected.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from fairshare._validate import check_array, check_shape, is_real, readonly
from fairshare.errors import InvalidInputError

__all__ = ["DEFAULT_ROUND_SECONDS", "MAX_SECONDS", "Running"]

#: Length of a round when a round document does not say (the simulator's default round).
DEFAULT_ROUND_SECONDS = 360.0
#: Longest restart cost and round length accepted (a year, in seconds).
MAX_SECONDS = 365 * 86400.0


@dataclass(frozen=True, slots=True)
class Running:
    """The current placement of a round's jobs and the cost of moving them.

    Parameters
    ----------
    gpu : int array (N,)
        Type index each job runs on now; ``-1``: not running (no restart cost applies).
    partner : int array (N,)
        Row of the job it shares GPUs with now; ``-1``: alone (or not running); ``-2``: a partner that is
        not in this round (any placement moves the job; sub-rounds use it).
    restart_seconds : float array (N,)
        Seconds of work a job loses when it is moved (``>= 0``).
    round_seconds : float
        Length of the round being planned (``> 0``).

    Raises
    ------
    InvalidInputError
        If an array has the wrong shape, a type or partner index is out of range, a partner relation is not
        mutual on one type, or a time is negative, not finite or over :data:`MAX_SECONDS`.
    """

    gpu: np.ndarray
    partner: np.ndarray
    restart_seconds: np.ndarray
    round_seconds: float

    @classmethod
    def checked(cls, n: int, num_types: int, gpu: Sequence[int] | np.ndarray, partner: Sequence[int] | np.ndarray,
                restart_seconds: Sequence[float] | np.ndarray, round_seconds: float,
                job_ids: Sequence[str] | None = None) -> Running:
        """A validated :class:`Running` for a round of ``n`` jobs and ``num_types`` GPU types."""
        g = np.asarray(gpu)
        k = np.asarray(partner)
        r = np.asarray(restart_seconds, dtype=np.float64)
        for key, arr in (("current.gpu", g), ("current.partner", k), ("restart_seconds", r)):
            check_shape(arr, (n,), key)
        field = _job_field
        check_array(g, np.isin(g, np.arange(-1, num_types)), field("current.gpu"), "unknown GPU type")
        check_array(k, np.isin(k, np.arange(-2, n)), field("current.partner"), "unknown job")
        g, k = g.astype(np.int64), k.astype(np.int64)
        check_array(r, r >= 0, field("restart_seconds"), "must be finite and >= 0")
        check_array(r, r <= MAX_SECONDS, field("restart_seconds"), f"longer than {MAX_SECONDS:.0f} s (a year)")
        if not (is_real(round_seconds) and 0 < float(round_seconds) <= MAX_SECONDS):
            raise InvalidInputError("round_seconds", round_seconds, f"must be > 0 and at most {MAX_SECONDS:.0f}")
        paired = np.flatnonzero(k >= 0)
        if paired.size:
            mate = k[paired]
            bad = (mate == paired) | (k[mate] != paired) | (g[mate] != g[paired]) | (g[paired] < 0)
            if bad.any():
                j = int(paired[np.argmax(bad)])
                mate_name: object = job_ids[int(k[j])] if job_ids is not None else int(k[j])
                raise InvalidInputError(f"jobs[{j}].current.partner", mate_name, "the partner must be another running "
                                        "job of the round that names this job as its partner on the same type")
        return cls(readonly(g), readonly(k), readonly(r), float(round_seconds))

    @property
    def num_jobs(self) -> int:
        """Number of jobs ``N``."""
        return len(self.gpu)

    @property
    def is_running(self) -> np.ndarray:
        """Boolean (N,): the job runs now."""
        return np.asarray(self.gpu >= 0)

    @property
    def kept_fraction(self) -> np.ndarray:
        """Per job, the share of a round's work it keeps when moved: ``max(0, 1 - restart / round)``."""
        return np.maximum(0.0, 1.0 - self.restart_seconds / self.round_seconds)

    def column_factor(self, job: np.ndarray, gpu: np.ndarray, partner: np.ndarray) -> np.ndarray:
        """The throughput factor of ``job`` in columns on type ``gpu`` beside ``partner`` (``-1``: alone).

        1 where the job does not run now or the column keeps it where it is; :attr:`kept_fraction` where the
        column moves it.
        """
        job = np.asarray(job, dtype=np.int64)
        moved = self.is_running[job] & ((self.gpu[job] != gpu) | (self.partner[job] != partner))
        return np.where(moved, self.kept_fraction[job], 1.0)

    def moved(self, job_gpu: np.ndarray, job_partner: np.ndarray) -> np.ndarray:
        """Boolean (N,): running jobs that a placement (type and partner per job, ``-1``: not placed) moves."""
        placed = np.asarray(job_gpu) >= 0
        return self.is_running & placed & ((self.gpu != job_gpu) | (self.partner != job_partner))

    def take(self, rows: np.ndarray) -> Running:
        """The running state of the sub-round of jobs ``rows`` (in that order); partners left out become -2."""
        rows = np.asarray(rows, dtype=np.int64)
        new = np.full(self.num_jobs, -2, np.int64)
        new[rows] = np.arange(len(rows))
        k = self.partner[rows]
        k = np.where(k >= 0, new[np.maximum(k, 0)], k)
        return Running(readonly(self.gpu[rows].copy()), readonly(k), readonly(self.restart_seconds[rows].copy()),
                       self.round_seconds)


def _job_field(name: str) -> Callable[[tuple[int, ...]], str]:
    return lambda i: f"jobs[{i[0]}].{name}"
