"""``allocate``: the one entry point that solves a round (spec section 5).

Three steps, as in ``scipy.optimize.milp``: check the input (the round and the options, before any model
is built), solve with the method of the mode (:data:`fairshare.methods.METHODS`), and assemble the
:class:`~fairshare.allocation.Allocation` in one place.

Modes
-----
``exact``
    The round MILP solved to proven optimality by HiGHS, or, with ``time_limit``, the best placement known
    when it expires: HiGHS's incumbent or fast's placement, whichever is better (:mod:`fairshare.methods.exact`).
    The limit counts from the call (reading the round included); docs/reliability.md states the margin.
``lp``
    The LP relaxation; shares are time fractions of the round (:mod:`fairshare.methods.lp`).
``fast``
    The tightened LP relaxation, rounded greedily with a fill step and polished when the certified gap is
    large (:mod:`fairshare.methods.fast`). Always feasible; status ``heuristic``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import replace
from typing import Any

import numpy as np

from fairshare.allocation import Allocation, Status
from fairshare.binding import bind
from fairshare.cluster import Binding, Node
from fairshare.errors import InvalidInputError
from fairshare.formulation import RoundModel, build_model
from fairshare.methods import METHODS, MODES, Mode, SolveOptions
from fairshare.methods.kept import KeptLP
from fairshare.methods.warm import WarmStart
from fairshare.problem import RoundProblem

__all__ = ["MODES", "Mode", "SolveOptions", "allocate", "bind_round", "solve_model"]

_LEAST_TIME = 1e-3  # seconds left to a method whose time limit was used up reading the round (it still places)


def allocate(
    problem: RoundProblem | Mapping[str, Any] | str | bytes,
    *,
    mode: str = "fast",
    options: SolveOptions | Mapping[str, Any] | None = None,
    previous_binding: Binding | Mapping[str, Any] | None = None,
    warm: WarmStart | KeptLP | None = None,
    executor: Executor | None = None,
    **option_overrides: Any,
) -> Allocation:
    """Solve one scheduling round.

    Parameters
    ----------
    problem : RoundProblem, mapping, str or bytes
        The round: a validated :class:`RoundProblem`, a round document (dict), or its JSON text.
    mode : {"fast", "exact", "lp"}
        See the module documentation.
    options : SolveOptions or mapping, optional
        Solver options; keyword arguments override single fields (``allocate(p, time_limit=5)``). An option
        that does not apply to ``mode`` is refused.
    previous_binding : Binding or its dict, optional
        A round that names its ``nodes``: the previous round's binding, so that placements that did not
        change keep their GPUs (:func:`fairshare.binding.bind`). Refused with mode ``lp`` (which binds
        nothing) and for a round without ``nodes``: an option that does not apply is refused, not ignored.
    warm : WarmStart or KeptLP, optional
        Mode ``fast``: the state its LP starts from and that it updates for the next round. A ``WarmStart``
        (with ``warm_start=True``) seeds a priced LP (:mod:`fairshare.methods.warm`); a ``KeptLP`` keeps the
        last round's LP in HiGHS and changes it into this round's (:mod:`fairshare.methods.kept`). Without it
        every round is solved cold. Other modes do not use it.
    executor : concurrent.futures.Executor, optional
        Mode ``fast`` with ``partitions > 1``: runs the parts of the split round (a process pool, a Dask
        ``Client.get_executor()``); without it they run one after another here. Other modes do not use it.

    Returns
    -------
    Allocation
        Status, objective, E, E/C, shortfall, gap, timings, placements and per-job results; with ``nodes``
        (modes ``exact`` and ``fast``) also the placements bound to nodes and GPUs (``binding``).

    Raises
    ------
    InvalidInputError
        For an invalid round, option, ``warm`` or ``executor`` (before any model is built).
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
    start = time.perf_counter()
    method = _mode(mode)
    opts = SolveOptions.coerce(options, **option_overrides).for_mode(method)
    _check_inputs(warm, executor)
    if previous_binding is not None and method is Mode.LP:
        raise InvalidInputError("previous_binding", _describe(previous_binding),
                                "applies to modes exact and fast, which bind placements to nodes; mode 'lp' "
                                "binds nothing")
    if isinstance(problem, (str, bytes)):
        problem = RoundProblem.from_json(problem)
    elif isinstance(problem, Mapping):
        problem = RoundProblem.from_dict(problem)
    elif not isinstance(problem, RoundProblem):
        raise InvalidInputError("problem", type(problem).__name__, "must be a RoundProblem, a dict or JSON text")
    if previous_binding is not None and not problem.nodes:
        raise InvalidInputError("previous_binding", _describe(previous_binding),
                                "applies to a round that names its `nodes`; this round has none")
    t0 = time.perf_counter()
    model = build_model(problem)
    alloc = _solve(model, method, opts, time.perf_counter() - t0, spent=time.perf_counter() - start, warm=warm,
                   executor=executor)
    return bind_round(alloc, problem.nodes, previous_binding)


def solve_model(model: RoundModel, *, mode: str = "fast", options: SolveOptions | Mapping[str, Any] | None = None,
                warm: WarmStart | KeptLP | None = None, executor: Executor | None = None,
                **option_overrides: Any) -> Allocation:
    """Solve a round whose :class:`~fairshare.formulation.RoundModel` is already built.

    The same as :func:`allocate` (``warm`` and ``executor`` too) for callers that build the model once and use
    it more than once (the simulator and the policies do); ``build_seconds`` then counts only the LP arrays.
    """
    method = _mode(mode)
    opts = SolveOptions.coerce(options, **option_overrides).for_mode(method)
    _check_inputs(warm, executor)
    return _solve(model, method, opts, 0.0, warm=warm, executor=executor)


def bind_round(alloc: Allocation, nodes: Sequence[Node],
               previous_binding: Binding | Mapping[str, Any] | None = None) -> Allocation:
    """The second stage of :func:`allocate`: ``alloc`` with its placements bound to node ids and GPU indices.

    Only for a round that names its ``nodes`` (those of its :class:`~fairshare.problem.RoundProblem`) and a
    mode that places jobs (``exact``, ``fast``); any other allocation is returned as it is (spec section 9).
    """
    if nodes and alloc.report.mode != Mode.LP.value:
        return replace(alloc, binding=bind(alloc, nodes, previous_binding))
    return alloc


def _describe(binding: object) -> str:
    """A short stand-in for a binding in a message (the value itself may be large)."""
    if isinstance(binding, Binding):
        return f"Binding of {len(binding.placements)} placements"
    return type(binding).__name__


def _mode(mode: object) -> Mode:
    if not isinstance(mode, str) or mode not in MODES:
        raise InvalidInputError("mode", mode, f"must be one of {', '.join(MODES)}")
    return Mode(mode)


def _check_inputs(warm: object, executor: object) -> None:
    if warm is not None and not isinstance(warm, (WarmStart, KeptLP)):
        raise InvalidInputError("warm", type(warm).__name__,
                                "must be a fairshare.methods.warm.WarmStart, a fairshare.methods.kept.KeptLP or None")
    if executor is not None and not callable(getattr(executor, "submit", None)):
        raise InvalidInputError("executor", executor, "must be a concurrent.futures.Executor (an object with submit)")


def _solve(model: RoundModel, mode: Mode, opts: SolveOptions, model_seconds: float, spent: float = 0.0, *,
           warm: WarmStart | KeptLP | None = None, executor: Executor | None = None) -> Allocation:
    """Solve with the mode's method; ``spent``: seconds of the call already used (taken off ``time_limit``)."""
    if opts.time_limit is not None and spent > 0:
        opts = replace(opts, time_limit=max(opts.time_limit - spent, _LEAST_TIME))
    if model.problem.num_jobs == 0:
        return Allocation.from_columns(model, np.zeros(0), status=Status.OPTIMAL, mode=mode.value, mip_gap=0.0,
                                       bound=0.0, build_seconds=model_seconds, message="empty round")
    r = METHODS[mode](model, opts, warm=warm, executor=executor)
    return Allocation.from_columns(model, r.x, status=r.status, mode=mode.value, mip_gap=r.mip_gap,
                                   bound=r.bound, relaxation=r.relaxation,
                                   build_seconds=model_seconds + r.build_seconds, solve_seconds=r.solve_seconds,
                                   message=r.message)
