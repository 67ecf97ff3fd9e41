"""Solve modes and their options: :class:`Mode`, :class:`SolveOptions`.

Each option applies to some modes only (:data:`APPLIES_TO`); :meth:`SolveOptions.for_mode` refuses an
option set away from its default for a mode it does not apply to, so nothing a caller asks for is silently
dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from fairshare._compat import StrEnum
from fairshare._validate import is_real
from fairshare.errors import InvalidInputError
from fairshare.solvers import BACKENDS, Feature, backend

__all__ = ["APPLIES_TO", "MAX_PARTITIONS", "MAX_THREADS", "MODES", "Mode", "SolveOptions"]


class Mode(StrEnum):
    """How a round is solved: ``exact`` (MILP, proven by HiGHS), ``lp`` (relaxation), ``fast`` (LP + rounding)."""

    EXACT = "exact"
    LP = "lp"
    FAST = "fast"


MODES: tuple[str, ...] = tuple(m.value for m in Mode)
"""The mode names, in documentation order."""

MAX_THREADS = 256
"""Upper bound of ``threads`` (HiGHS sizes a global thread pool; absurd counts abort the interpreter)."""

MAX_PARTITIONS = 4096
"""Upper bound of ``partitions``."""


@dataclass(frozen=True, slots=True)
class SolveOptions:
    """Options of :func:`~fairshare.allocate`.

    Parameters
    ----------
    time_limit : float, optional
        ``exact``: seconds before HiGHS stops with its incumbent (status ``time_limit``) or none
        (``no_solution``). ``None``: no limit.
    mip_rel_gap : float
        ``exact``: relative MIP gap at which HiGHS stops (default 1e-6), measured on ``objective - obj_null``.
    threads : int, optional
        HiGHS threads (1 to :data:`MAX_THREADS`).
    seed : int
        HiGHS random seed.
    lp_algorithm : {"auto", "dual", "primal", "ipm", "choose", "pdlp"}
        ``lp`` and ``fast`` on HiGHS: the LP method. ``auto``: dual simplex, except interior point with
        crossover for the tightened LP above 20,000 placement columns (faster there: docs/performance.md),
        and without crossover from 150,000 columns (about 26,000 jobs; its bound certified by a Lagrangian
        bound at the interior point's duals: :func:`fairshare.methods.lp.solve_relaxation`). ``ipm``: interior
        point with crossover at every size.
    relaxation : {"section3", "tightened"}
        ``lp`` only: section 3's relaxation or the tightened column one (``tightened`` needs the HiGHS backend).
    backend : {"highs", "pyomo"}
        ``exact`` and ``lp`` only: the array-built model on highspy, or the Pyomo reference model.
    polish_seconds : float
        ``fast``: safety time limit of the polish MILP, which is bounded by 200 branch-and-bound nodes so
        that results do not depend on machine load (0 disables the MILP). On a heavily loaded machine the
        1 s default can bind, and the placement then depends on the load; the ``fairshare`` policy of the
        simulator sets 60 s for that reason (docs/performance.md, "Reproducible simulations").
    polish_gap : float, optional
        ``fast``: run the local search and the polish MILP when the certified relative gap to the LP bound
        exceeds this (or the efficiency gap exceeds ``polish_efficiency_gap``); the MILP stops at a relative gap
        of 0.1 %, or of ``polish_gap`` if smaller, or of ``0.1 * polish_efficiency_gap * E_LP / z_LP`` if smaller
        still (where E is small against the value: :func:`fairshare.methods.relax.polish_mip_gap`). Default
        (``None``): 0.5 %.
    polish_efficiency_gap : float, optional
        ``fast``: also improve the rounding when its efficiency ``E`` falls short of the LP solution's ``E`` by
        more than this fraction (default ``None``: 1 %). With a small fairness weight a small value gap can
        hide a large efficiency gap.
    polish : bool
        ``fast``: improve the greedy rounding when it is not good enough (the local search, then the polish
        MILP; see ``polish_gap``). ``False``: return the greedy rounding with its fill step as it is (still
        feasible, its gap to the LP bound still certified and reported); about 10 times less policy time per
        round in long simulations, where most rounds are polished otherwise, for a mean JCT 1-8 % higher on the
        main comparison's setting (docs/performance.md, "A simulation"). Default ``True``.
    warm_start : bool
        ``fast``: solve the tightened LP by pricing (a restricted set of columns, grown until no column prices
        out: the same optimum as the whole LP) and, when a :class:`~fairshare.methods.warm.WarmStart` is
        current (an :class:`~fairshare.engine.Engine` and the ``fairshare`` policy keep one between rounds),
        seed it from the previous round's duals and basis; with a long queue the jobs that do not compete for
        GPUs then stay out of the LP until a column of theirs prices out (:mod:`fairshare.methods.warm`). Default
        ``False``: the LP optimum is the cold one, but where the LP has several optima or the polish runs the
        placement can differ from the cold one. Not used by split rounds (``partitions > 1``).
    partitions : int
        ``fast``: split the round into this many random parts (jobs and GPUs of each type dealt out evenly),
        solve each part the fast way and merge the placements (:mod:`fairshare.methods.partition`). Default
        1: no split. For rounds whose single LP is too slow (tens of thousands of jobs).
    verbose : bool
        Let HiGHS print its log.

    Examples
    --------
    >>> SolveOptions(time_limit=5).for_mode("exact").time_limit
    5
    >>> SolveOptions(time_limit=5).for_mode("fast")
    Traceback (most recent call last):
    ...
    fairshare.errors.InvalidInputError: `time_limit` = 5: applies to mode exact only, not to mode 'fast'
    """

    time_limit: float | None = None
    mip_rel_gap: float = 1e-6
    threads: int | None = None
    seed: int = 0
    lp_algorithm: str = "auto"
    relaxation: str = "section3"
    backend: str = "highs"
    polish_seconds: float = 1.0
    polish_gap: float | None = None
    polish_efficiency_gap: float | None = None
    polish: bool = True
    warm_start: bool = False
    partitions: int = 1
    verbose: bool = False

    def __post_init__(self) -> None:
        if self.time_limit is not None and not (is_real(self.time_limit) and self.time_limit > 0):
            raise InvalidInputError("time_limit", self.time_limit, "must be a positive number of seconds")
        if not (is_real(self.mip_rel_gap) and 0 <= self.mip_rel_gap < 1):
            raise InvalidInputError("mip_rel_gap", self.mip_rel_gap, "must be in [0, 1)")
        if self.threads is not None and not (isinstance(self.threads, int) and not isinstance(self.threads, bool)
                                             and 1 <= self.threads <= MAX_THREADS):
            raise InvalidInputError("threads", self.threads, f"must be an integer from 1 to {MAX_THREADS}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or not 0 <= self.seed < 2**31:
            raise InvalidInputError("seed", self.seed, "must be an integer in [0, 2**31)")
        if self.lp_algorithm not in ("auto", "dual", "primal", "ipm", "choose", "pdlp"):
            raise InvalidInputError("lp_algorithm", self.lp_algorithm,
                                    "must be one of auto, dual, primal, ipm, choose, pdlp")
        if self.relaxation not in ("section3", "tightened"):
            raise InvalidInputError("relaxation", self.relaxation, "must be 'section3' or 'tightened'")
        backend(self.backend)  # an unknown name is refused there
        if not (is_real(self.polish_seconds) and self.polish_seconds >= 0):
            raise InvalidInputError("polish_seconds", self.polish_seconds, "must be >= 0")
        if self.polish_gap is not None and not (is_real(self.polish_gap) and self.polish_gap >= 0):
            raise InvalidInputError("polish_gap", self.polish_gap, "must be >= 0")
        if self.polish_efficiency_gap is not None and not (is_real(self.polish_efficiency_gap)
                                                           and 0 <= self.polish_efficiency_gap <= 1):
            raise InvalidInputError("polish_efficiency_gap", self.polish_efficiency_gap, "must be in [0, 1]")
        if not (isinstance(self.partitions, int) and not isinstance(self.partitions, bool)
                and 1 <= self.partitions <= MAX_PARTITIONS):
            raise InvalidInputError("partitions", self.partitions, f"must be an integer from 1 to {MAX_PARTITIONS}")
        if not isinstance(self.polish, bool):
            raise InvalidInputError("polish", self.polish, "must be True or False")
        if not isinstance(self.warm_start, bool):
            raise InvalidInputError("warm_start", self.warm_start, "must be True or False")
        if not isinstance(self.verbose, bool):
            raise InvalidInputError("verbose", self.verbose, "must be True or False")

    @classmethod
    def coerce(cls, options: SolveOptions | Mapping[str, Any] | None, **overrides: Any) -> SolveOptions:
        """Options from an instance, a mapping or ``None``, with keyword overrides; unknown keys are errors."""
        if options is not None and not isinstance(options, (SolveOptions, Mapping)):
            raise InvalidInputError("options", type(options).__name__, "must be a SolveOptions or a mapping")
        base = options if isinstance(options, SolveOptions) else cls(**_known(dict(options or {})))
        return replace(base, **_known(overrides)) if overrides else base

    def for_mode(self, mode: str) -> SolveOptions:
        """These options, checked against ``mode``.

        An option away from its default that does not apply to ``mode`` (or to the chosen backend) raises
        :class:`~fairshare.errors.InvalidInputError` naming the option.
        """
        mode = Mode(mode).value
        default = _DEFAULT
        for name, modes in APPLIES_TO.items():
            value = getattr(self, name)
            if mode not in modes and value != getattr(default, name):
                raise InvalidInputError(name, value, f"applies to mode {' and '.join(modes)} only, "
                                                     f"not to mode {mode!r}")
        solver = backend(self.backend)
        if self.relaxation == "tightened" and not solver.supports(Feature.ARRAY_MODEL):
            raise InvalidInputError("relaxation", self.relaxation,
                                    f"the {solver.name} backend solves section 3's relaxation only")
        if self.lp_algorithm != default.lp_algorithm and not solver.supports(Feature.LP_ALGORITHM):
            able = " and ".join(b.name for b in BACKENDS.values() if b.supports(Feature.LP_ALGORITHM))
            raise InvalidInputError("lp_algorithm", self.lp_algorithm, f"applies to the {able} backend only")
        return self


APPLIES_TO: dict[str, tuple[str, ...]] = {
    "time_limit": ("exact",),
    "mip_rel_gap": ("exact",),
    "lp_algorithm": ("lp", "fast"),
    "relaxation": ("lp",),
    "backend": ("exact", "lp"),
    "polish_seconds": ("fast",),
    "polish_gap": ("fast",),
    "polish_efficiency_gap": ("fast",),
    "polish": ("fast",),
    "partitions": ("fast",),
    "warm_start": ("fast",),
}
"""Options that apply to some modes only; the others (threads, seed, verbose) apply to every mode."""

_DEFAULT = SolveOptions()


def _known(kw: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(SolveOptions)}
    for k, v in kw.items():
        if k not in names:
            raise InvalidInputError(f"options.{k}", v, f"unknown option (known: {', '.join(sorted(names))})")
    return kw
