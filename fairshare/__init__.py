"""fairshare: efficient, spatiotemporally fair allocation of heterogeneous GPU clusters to training jobs.

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
    SharedGpu           One GPU shared by part-of-a-GPU jobs (``Allocation.shared_gpus``); pack_shares packs
                        fractional requests onto whole GPUs.
Round after round
    Engine              Plans rounds, carries deficits, saves and loads its state atomically.
    priority_rule       A priority rule by name (``"remaining"``, the default; ``"none"``, ``"finish-time"``).
Nodes and GPU indices
    bind                Binds a round's placements to nodes and GPU indices, sticky from the previous binding;
                        Node (one node), Binding and BoundPlacement (the result).
Fairness and the model
    fair_share          The fair share in space (weighted water-filling); :class:`FairShare` its result.
    next_deficit        The fairness carried in time: ``max(0, D + 1 - epsilon - rho)``.
    build_model         Fair shares, placement columns and coefficients of a round (:class:`RoundModel`).
Policies (fairshare and its peers)
    get_policy          A policy by registry name (``"gavel"``, ``"ftf"``, ...); policy_names lists them,
                        policy_options and policy_summary describe one.
    Policy, RoundState  The policy interface (a policy implements place(state) -> Placed) and what a policy
                        sees of a round; register adds a policy.
Simulation
    simulate            Replay a trace round by round with a policy; :class:`SimulationResult`.
    generate_trace, read_trace, write_trace, Trace
                        Traces: Gavel's recipe, files.
    import_trace        A public cluster trace (Philly, Alibaba PAI 2020, Alibaba GPU 2023, any CSV) as a
                        trace; CsvColumns maps a CSV's columns, ImportResult says what was kept and dropped.
    load_catalog        Measured and derived throughputs per workload and GPU type (:class:`Catalog`);
                        inspect_file checks a catalog file (:class:`CatalogFileInfo`).
    compute_metrics     JCT, finish-time fairness, utilization and more of a run (:class:`RunMetrics`);
                        metrics_by_duration_class splits them by job length.
    run_sweep, RunSpec  Many runs, on a process pool or a Dask cluster.
Errors
    FairshareError      Base class; InvalidInputError (bad input, a ValueError), SolverError (the solver
                        failed), PolicyError (a policy returned an invalid placement).

The simulation and policy names are imported on first use, so ``import fairshare`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

from fairshare.allocate import MODES, Mode, SolveOptions, allocate, solve_model
from fairshare.allocation import Allocation, Placement, SharedGpu, Status
from fairshare.engine import Engine
from fairshare.errors import FairshareError, InvalidInputError, PolicyError, SolverError
from fairshare.fair_share import FairShare, fair_share, next_deficit
from fairshare.formulation import RoundModel, build_model
from fairshare.problem import RoundProblem

_LAZY = {
    "Policy": "fairshare.policies", "RoundState": "fairshare.policies", "get_policy": "fairshare.policies",
    "policy_names": "fairshare.policies", "register": "fairshare.policies", "Placed": "fairshare.policies",
    "policy_options": "fairshare.policies", "policy_summary": "fairshare.policies",
    "simulate": "fairshare.sim", "SimulationResult": "fairshare.sim", "generate_trace": "fairshare.sim",
    "read_trace": "fairshare.sim", "write_trace": "fairshare.sim", "Trace": "fairshare.sim",
    "compute_metrics": "fairshare.sim", "RunMetrics": "fairshare.sim", "run_sweep": "fairshare.sim",
    "RunSpec": "fairshare.sim", "load_catalog": "fairshare.sim.catalog", "Catalog": "fairshare.sim.catalog",
    "import_trace": "fairshare.sim.importers", "CsvColumns": "fairshare.sim.importers",
    "ImportResult": "fairshare.sim.importers", "metrics_by_duration_class": "fairshare.sim.metrics",
    "inspect_file": "fairshare.sim.catalog", "CatalogFileInfo": "fairshare.sim.catalog",
    "bind": "fairshare.binding", "Node": "fairshare.binding", "Binding": "fairshare.binding",
    "BoundPlacement": "fairshare.binding", "pack_shares": "fairshare.packing", "priority_rule": "fairshare.priority",
}

__all__ = [
    "MODES", "Allocation", "Engine", "FairShare", "FairshareError", "InvalidInputError", "Mode", "Placement",
    "PolicyError", "RoundModel", "RoundProblem", "SharedGpu", "SolveOptions", "SolverError", "Status", "allocate",
    "build_model", "fair_share", "next_deficit", "solve_model", *sorted(_LAZY),
]
__version__ = "0.2.0"


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fairshare' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
