"""``allocate``: the one entry point that solves a round (spec section 5).

Modes
-----
``exact``
    The round MILP solved to proven optimality (or to ``time_limit``) by HiGHS. By default the array-built
    column formulation (spec section 5a, same optimum as section 3, far tighter bound) is passed to highspy;
    ``backend="pyomo"`` solves section 3's MILP as written in the readable Pyomo reference model instead.
``lp``
    The LP relaxation; shares are time fractions of the round. ``relaxation="section3"`` (default) is section
    3's relaxation, ``"tightened"`` the column one.
``fast``
    The tightened LP relaxation, rounded greedily with a fill step and polished when the certified gap is
    large (:mod:`fairshare.rounding`). Always feasible; status ``heuristic``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from fairshare.allocation import Allocation, Placement, Status
from fairshare.errors import InvalidInputError
from fairshare.formulation import RoundModel, build_model
from fairshare.problem import RoundProblem
from fairshare.rounding import greedy_round, improve, polish
from fairshare.solvers.highs import solve_highs

__all__ = ["MODES", "SolveOptions", "allocate", "solve_model"]

MODES = ("exact", "lp", "fast")
_DUAL_SIMPLEX_MAX_COLUMNS = 20_000  # measured: dual simplex wins up to about 4,096 jobs, IPM at 8,192
_LOCAL_SEARCH_MAX_COLUMNS = 1000  # the local search is O(M * placed); beyond this, greedy is within 0.1 %


@dataclass(frozen=True, slots=True)
class SolveOptions:
    """Options of :func:`allocate`.

    Parameters
    ----------
    time_limit : float, optional
        ``exact``: seconds before HiGHS stops with its incumbent (status ``time_limit``) or none
        (``no_solution``). ``None``: no limit.
    mip_rel_gap : float
        ``exact``: relative MIP gap at which HiGHS stops (default 1e-6), measured on ``objective - obj_null``.
    threads : int, optional
        HiGHS threads.
    seed : int
        HiGHS random seed.
    lp_algorithm : {"auto", "dual", "primal", "ipm", "choose", "pdlp"}
        LP method of ``lp`` and ``fast``. ``auto``: dual simplex, except interior point with crossover for the
        tightened LP above 20,000 placement columns (measured faster there, at 8,192 jobs).
    relaxation : {"section3", "tightened"}
        ``lp`` mode only.
    backend : {"highs", "pyomo"}
        ``exact`` and ``lp`` only: the array-built model on highspy, or the Pyomo reference model.
    polish_seconds : float
        ``fast``: safety time limit of the polish MILP, which is bounded by 200 branch-and-bound nodes so
        that results do not depend on machine load (0 disables polish).
    polish_gap : float, optional
        ``fast``: run the local search and the polish only when the certified relative gap to the LP bound
        exceeds this. Default (``None``): 1 % for rounds of at most 1,000 placement columns (where one
        misplaced gang costs efficiency), 2 % above (where the LP's own integrality gap dominates).
    verbose : bool
        Let HiGHS print its log.
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
    verbose: bool = False

    def __post_init__(self) -> None:
        if self.time_limit is not None and not (_num(self.time_limit) and self.time_limit > 0):
            raise InvalidInputError("time_limit", self.time_limit, "must be a positive number of seconds")
        if not (_num(self.mip_rel_gap) and 0 <= self.mip_rel_gap < 1):
            raise InvalidInputError("mip_rel_gap", self.mip_rel_gap, "must be in [0, 1)")
        if self.threads is not None and not (isinstance(self.threads, int) and self.threads >= 1):
            raise InvalidInputError("threads", self.threads, "must be a positive integer")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise InvalidInputError("seed", self.seed, "must be an integer")
        if self.lp_algorithm not in ("auto", "dual", "primal", "ipm", "choose", "pdlp"):
            raise InvalidInputError("lp_algorithm", self.lp_algorithm,
                                    "must be one of auto, dual, primal, ipm, choose, pdlp")
        if self.relaxation not in ("section3", "tightened"):
            raise InvalidInputError("relaxation", self.relaxation, "must be 'section3' or 'tightened'")
        if self.backend not in ("highs", "pyomo"):
            raise InvalidInputError("backend", self.backend, "must be 'highs' or 'pyomo'")
        if not (_num(self.polish_seconds) and self.polish_seconds >= 0):
            raise InvalidInputError("polish_seconds", self.polish_seconds, "must be >= 0")
        if self.polish_gap is not None and not (_num(self.polish_gap) and self.polish_gap >= 0):
            raise InvalidInputError("polish_gap", self.polish_gap, "must be >= 0")

    @classmethod
    def coerce(cls, options: SolveOptions | Mapping[str, Any] | None, **overrides: Any) -> SolveOptions:
        """Options from an instance, a mapping or ``None``, with keyword overrides; unknown keys are errors."""
        base = options if isinstance(options, SolveOptions) else cls(**_known(dict(options or {})))
        return replace(base, **_known(overrides)) if overrides else base


def _known(kw: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(SolveOptions)}
    for k, v in kw.items():
        if k not in names:
            raise InvalidInputError(f"options.{k}", v, f"unknown option (known: {', '.join(sorted(names))})")
    return kw


def _num(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def allocate(
    problem: RoundProblem | Mapping[str, Any] | str,
    *,
    mode: str = "fast",
    options: SolveOptions | Mapping[str, Any] | None = None,
    **option_overrides: Any,
) -> Allocation:
    """Solve one scheduling round.

    Parameters
    ----------
    problem : RoundProblem, mapping or str
        The round: a validated :class:`RoundProblem`, a round document (dict), or its JSON text.
    mode : {"fast", "exact", "lp"}
        See the module documentation.
    options : SolveOptions or mapping, optional
        Solver options; keyword arguments override single fields (``allocate(p, time_limit=5)``).

    Returns
    -------
    Allocation
        Status, objective, E, E/C, shortfall, gap, timings, placements and per-job results.

    Raises
    ------
    InvalidInputError
        For an invalid round or option (before any model is built).
    SolverError
        If HiGHS fails in a way that is not a status.

    Examples
    --------
    >>> doc = {"gpus": {"V100": 1, "K80": 1}, "jobs": [
    ...     {"id": "a", "scale": 1, "throughput": {"V100": 4.0, "K80": 1.0}},
    ...     {"id": "b", "scale": 1, "throughput": {"V100": 2.0, "K80": 1.0}}]}
    >>> alloc = allocate(doc, mode="exact")
    >>> str(alloc.status), [(p.jobs, p.gpu) for p in alloc.placements]
    ('optimal', [(('a',), 'V100'), (('b',), 'K80')])
    """
    if mode not in MODES:
        raise InvalidInputError("mode", mode, f"must be one of {', '.join(MODES)}")
    opts = SolveOptions.coerce(options, **option_overrides)
    if isinstance(problem, (str, bytes)):
        problem = RoundProblem.from_json(problem)
    elif isinstance(problem, Mapping):
        problem = RoundProblem.from_dict(problem)
    elif not isinstance(problem, RoundProblem):
        raise InvalidInputError("problem", type(problem).__name__, "must be a RoundProblem, a dict or JSON text")

    t0 = time.perf_counter()
    return solve_model(build_model(problem), mode=mode, options=opts, _t0=t0)


def solve_model(model: RoundModel, *, mode: str = "fast", options: SolveOptions | Mapping[str, Any] | None = None,
                _t0: float | None = None) -> Allocation:
    """Solve a round whose :class:`~fairshare.formulation.RoundModel` is already built.

    The same as :func:`allocate` for callers that build the model once and use it more than once (the
    simulator and the policies do); ``build_seconds`` then counts only the LP arrays.
    """
    if mode not in MODES:
        raise InvalidInputError("mode", mode, f"must be one of {', '.join(MODES)}")
    opts = SolveOptions.coerce(options)
    t0 = time.perf_counter() if _t0 is None else _t0
    problem = model.problem
    if problem.num_jobs == 0:
        return _result(model, np.zeros(0), Status.OPTIMAL, mode, 0.0, 0.0, time.perf_counter() - t0, 0.0,
                       "empty round", None)
    if mode == "exact" and opts.backend == "pyomo":
        from fairshare.solvers.pyomo_model import solve_pyomo

        return solve_pyomo(model, integer=True, opts=opts, t0=t0)
    if mode == "lp" and opts.backend == "pyomo":
        from fairshare.solvers.pyomo_model import solve_pyomo

        return solve_pyomo(model, integer=False, opts=opts, t0=t0)
    if mode == "lp" and opts.relaxation == "section3":
        lp = model.section3_lp()
    else:
        lp = model.tightened_lp()
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    if mode == "exact":
        # No starting incumbent is given: HiGHS 1.16 with setSolution returned the start as "optimal" with a
        # wrong objective on a 5-job round (tests/test_allocate.py::test_exact_regression_start_solution).
        out = solve_highs(lp, integer=True, time_limit=opts.time_limit, mip_rel_gap=opts.mip_rel_gap,
                          threads=opts.threads, seed=opts.seed, verbose=opts.verbose)
        solve_s = time.perf_counter() - t1
        if not out.has_solution or out.x is None:
            return _result(model, None, Status.NO_SOLUTION, mode, float("inf"), out.bound + model.obj_null,
                           build_s, solve_s, out.message, None)
        x = np.round(out.x)
        status = Status.OPTIMAL if out.optimal else Status.TIME_LIMIT
        value = float(model.value @ x)
        gap = _rel_gap(out.bound, value)
        return _result(model, x, status, mode, gap, out.bound + model.obj_null, build_s, solve_s, out.message,
                       None)
    algorithm = opts.lp_algorithm
    if algorithm == "auto":  # IPM pays off only on the large tightened LP (measured: slower on section 3's)
        tightened = lp.num_placement_cols == lp.cost.shape[0]
        algorithm = "ipm" if tightened and model.columns.num > _DUAL_SIMPLEX_MAX_COLUMNS else "dual"
    out = solve_highs(lp, integer=False, threads=opts.threads, seed=opts.seed, lp_algorithm=algorithm,
                      verbose=opts.verbose)
    if not out.optimal or out.x is None:
        from fairshare.errors import SolverError

        raise SolverError(f"HiGHS did not solve the LP relaxation ({out.message!r}); try lp_algorithm='ipm'")
    if mode == "lp":
        solve_s = time.perf_counter() - t1
        offset = 0.0 if opts.relaxation == "section3" else model.obj_null
        return _result(model, out.x[: lp.num_placement_cols], Status.OPTIMAL, mode, 0.0, out.bound + offset,
                       build_s, solve_s, out.message, opts.relaxation)
    x = greedy_round(model, out.x)
    small = model.columns.num <= _LOCAL_SEARCH_MAX_COLUMNS
    polish_gap = opts.polish_gap if opts.polish_gap is not None else (1e-2 if small else 2e-2)
    if small and _rel_gap(out.bound, float(model.value @ x)) > polish_gap:
        x = improve(model, x)
    x, bound, _ = polish(model, lp, out, x, seconds=opts.polish_seconds, gap=polish_gap, seed=opts.seed,
                         threads=opts.threads)
    solve_s = time.perf_counter() - t1
    gap = _rel_gap(bound, float(model.value @ x))
    return _result(model, x, Status.HEURISTIC, mode, gap, bound + model.obj_null, build_s, solve_s,
                   f"LP {out.message}; rounded", None)


def _rel_gap(bound: float, value: float) -> float:
    """Relative gap on the achievable improvement (``value`` and ``bound`` are gains over ``obj_null``)."""
    if not np.isfinite(bound):
        return float("inf")
    return max(0.0, bound - value) / max(abs(bound), 1e-9)


def _result(model: RoundModel, x: np.ndarray | None, status: Status, mode: str, gap: float | None,
            bound: float | None, build_s: float, solve_s: float, message: str,
            relaxation: str | None) -> Allocation:
    """Assemble an :class:`Allocation` from column values ``x`` (``None``: no solution)."""
    p, c = model.problem, model.columns
    n = p.num_jobs
    empty = x is None
    xv = np.zeros(c.num) if x is None else x
    ev = model.evaluate(xv)
    on = np.flatnonzero(xv > 1e-9)
    gpu_names = p.gpu_types
    ids = p.job_ids
    ja, jb, g, s = c.job_a[on].tolist(), c.job_b[on].tolist(), c.gpu[on].tolist(), c.size[on].tolist()
    shares = xv[on].tolist()
    integral = mode != "lp"
    placements = tuple(
        Placement((ids[a],) if b < 0 else (ids[a], ids[b]), gpu_names[gg], int(ss), 1.0 if integral else float(sh))
        for a, b, gg, ss, sh in zip(ja, jb, g, s, shares)
    )
    job_gpu = np.full(n, -1, np.int64)
    partner = np.full(n, -1, np.int64)
    best = np.zeros(n)
    for a, b, gg, sh in zip(ja, jb, g, shares):
        for j in (a, b) if b >= 0 else (a,):
            if sh > best[j]:
                best[j], job_gpu[j] = sh, gg
        if b >= 0 and integral:
            partner[a], partner[b] = b, a
    if mode == "exact" and gap is None:
        gap = 0.0
    objective = float("nan") if empty else float(ev["objective"])
    cap = p.total_gpus
    return Allocation(
        status=status, mode=mode, objective=objective, efficiency=float(ev["efficiency"]),
        utilization=float(ev["efficiency"]) / cap, shortfall=float(ev["shortfall"]), mip_gap=gap,
        bound=bound, obj_null=model.obj_null, relaxation=relaxation, build_seconds=build_s,
        solve_seconds=solve_s, message=message, placements=placements, job_ids=ids, gpu_types=gpu_names,
        fair_throughput=np.asarray(model.fair.throughput), throughput=ev["tau"], progress=ev["rho"],  # type: ignore[arg-type]
        job_shortfall=ev["sigma"], next_deficit=ev["next_deficit"], job_gpu=job_gpu,  # type: ignore[arg-type]
        job_partner=partner)


def allocate_json(text: str, **kwargs: Any) -> str:
    """Solve a round given as JSON text and return the output document as JSON text."""
    return json.dumps(allocate(text, **kwargs).to_dict())
