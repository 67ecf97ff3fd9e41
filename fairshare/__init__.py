"""fairshare: efficient, spatiotemporally fair allocation of heterogeneous GPU clusters to training jobs.

The top level is the round engine. Simulation (traces, the simulator, metrics, sweeps, plots) is in
:mod:`fairshare.sim`; the policies (fairshare and its peers) are in :mod:`fairshare.policies`; Kubernetes in
and out (a ``kubectl`` snapshot planned, ``Binding`` and ``Eviction`` objects written) is :mod:`fairshare.kube`.

API index
---------
One round
    allocate            Solve one round (modes ``exact``, ``lp``, ``fast``); returns an :class:`Allocation`.
    solve_model         The same, for a :class:`RoundModel` already built.
    SolveOptions        Solver options (time limit, gap, threads, LP method, polish, ...).
    Mode, MODES         The solve modes.
    RoundProblem        The validated round: cluster, jobs, co-location candidates, fairness knobs.
    Allocation          The answer: status, objective, E, E/C, shortfall, gap, placements, per-job results.
    Placement, Status   One placement of an allocation; how the round was solved.
    SharedGpu           One GPU shared by part-of-a-GPU jobs (``Allocation.shared_gpus``).
Round after round
    Engine              Plans rounds, carries deficits, saves and loads its state atomically.
    EngineConfig        How an Engine plans every round (mode, slack, fairness weight, options, rules).
Fairness and the model
    fair_share          The fair share in space (weighted water-filling); :class:`FairShare` its result.
    next_deficit        The fairness carried in time: ``max(0, D + 1 - epsilon - rho)``.
    build_model         Fair shares, placement columns and coefficients of a round (:class:`RoundModel`).
Errors
    FairshareError      Base class; InvalidInputError (bad input, a ValueError), SolverError (the solver
                        failed), PolicyError (a policy returned an invalid placement).
"""

from __future__ import annotations

from fairshare.allocate import MODES, Mode, SolveOptions, allocate, solve_model
from fairshare.allocation import Allocation, Placement, SharedGpu, Status
from fairshare.engine import Engine
from fairshare.engine_config import EngineConfig
from fairshare.errors import FairshareError, InvalidInputError, PolicyError, SolverError
from fairshare.fair_share import FairShare, fair_share, next_deficit
from fairshare.formulation import RoundModel, build_model
from fairshare.problem import RoundProblem

__all__ = [
    "MODES", "Allocation", "Engine", "EngineConfig", "FairShare", "FairshareError", "InvalidInputError", "Mode",
    "Placement", "PolicyError", "RoundModel", "RoundProblem", "SharedGpu", "SolveOptions", "SolverError", "Status",
    "allocate", "build_model", "fair_share", "next_deficit", "solve_model",
]
__version__ = "0.2.0"
