"""Exception hierarchy of fairshare.

Bad input raises :class:`InvalidInputError` (a :class:`ValueError`) before any model is built; its
message names the offending field and shows its value. Solver failures that are not an honest status
(infeasible rounds cannot happen, time limits are statuses) raise :class:`SolverError` with advice. A policy
that returns an infeasible placement raises :class:`PolicyError`: a bug in the policy, not bad input.
"""

from __future__ import annotations

__all__ = ["FairshareError", "InvalidInputError", "PolicyError", "SolverError"]


class FairshareError(Exception):
    """Base class of every error fairshare raises on purpose."""


class InvalidInputError(FairshareError, ValueError):
    """A round document, trace or option is invalid. The message names the field and the value."""

    def __init__(self, field: str, value: object, reason: str) -> None:
        self.field = field
        self.value = value
        self.reason = reason
        super().__init__(f"`{field}` = {value!r}: {reason}")

    def __reduce__(self) -> tuple[type[InvalidInputError], tuple[str, object, str]]:
        """Pickle with the three arguments (errors raised in a worker process reach the parent intact)."""
        return (type(self), (self.field, self.value, self.reason))


class SolverError(FairshareError, RuntimeError):
    """The solver failed in a way that is not a status (crash, numerical trouble)."""


class PolicyError(FairshareError, RuntimeError):
    """A policy produced an invalid placement (over capacity, a job placed twice, a split gang): a bug."""
