"""Simulation: traces, the workload catalog, the round-by-round simulator, records, metrics, sweeps, plots.

This layer sits above the policies: it builds one :class:`~fairshare.problem.RoundProblem` per round,
asks a policy for a placement and executes it.

Simulating (:mod:`~fairshare.sim.simulator`: the loop; one module per part of it)
    :func:`simulate`
        Replay a trace on a cluster with a policy, round by round.
    :func:`check_run`
        Everything :func:`simulate` would refuse before its first round, checked without running.
    :class:`SimConfig` (:mod:`~fairshare.sim.config`)
        The options of a run (round length, epsilon, restart overhead, co-location, stop rules).
    :class:`SimulationResult` (:mod:`~fairshare.sim.result`)
        What a run produced: job and round records, its config; JSON in and out.
    :func:`parse_cluster` (:mod:`~fairshare.sim.cluster_spec`)
        ``"V100=36,P100=36,K80=36"`` to ``{"V100": 36, ...}``; node specs too.
    :mod:`~fairshare.sim.execute`, :mod:`~fairshare.sim.idle_starts`, :mod:`~fairshare.sim.ledger`
        Executing one round's plan; starts on idle GPUs between rounds; the per-job arrays of a run.

Records (:mod:`~fairshare.sim.records`)
    :class:`JobRecord`, :class:`RoundRecord`
        One per job and one per round; metrics are computed from these alone.

Metrics (:mod:`~fairshare.sim.metrics`; definitions in ``docs/metrics.md``)
    :func:`compute_metrics`, :func:`metrics_by_tenant`, :func:`metrics_by_duration_class`, :class:`RunMetrics`
        JCT, makespan, finish-time fairness, Jain's index, utilization (E/C), GPU busy fraction, solver time;
        per tenant and per duration class; unfinished and censored jobs counted apart.
    :func:`results_table`, :class:`MetricColumn`, :data:`METRIC_COLUMNS`
        One row per policy, as Markdown or CSV, with the default or chosen columns.
    :func:`job_completion_times`, :func:`finish_time_fairness`, :func:`normalized_throughput`,
    :func:`jain_index`, :data:`UNFAIR_RHO`
        The per-job quantities behind the metrics.

Traces (:mod:`~fairshare.sim.traces`; formats in ``docs/traces.md``)
    :class:`Trace`, :func:`read_trace`, :func:`write_trace`, :func:`format_trace`, :func:`generate_trace`,
    :data:`DEFAULT_TRACE`
        The work a simulation replays: CSV/JSON files, or Gavel's synthetic recipe.

Importing real traces (:mod:`~fairshare.sim.importers`; the rule in ``docs/traces.md``)
    :func:`import_trace`, :class:`CsvColumns`, :class:`ImportResult`
        Philly, Alibaba PAI 2020, Alibaba GPU 2023 or any CSV to a :class:`Trace`, with a suggested cluster.

Catalog (:mod:`fairshare.sim.catalog`)
    :class:`~fairshare.sim.catalog.Catalog`, :func:`~fairshare.sim.catalog.load_catalog`
        Measured (and opt-in derived) throughputs of workloads on GPU types.

Sweeps (:mod:`~fairshare.sim.sweep`)
    :class:`RunSpec`, :func:`run_spec`, :func:`run_sweep`, :func:`grid`
        Many simulations in parallel through any ``concurrent.futures`` executor.

Figures (:mod:`~fairshare.sim.plots`; matplotlib is imported only when one is drawn)
    :func:`plot_jct_cdf`, :func:`plot_rho_cdf`, :func:`plot_utilization_over_time`,
    :func:`plot_solver_time_vs_jobs`

Progress bar (:mod:`~fairshare.sim.progress_bar`)
    :class:`ProgressBar`
        The progress bar of long runs, on stderr.
"""

from fairshare.sim.cluster_spec import parse_cluster
from fairshare.sim.config import SimConfig
from fairshare.sim.importers import CsvColumns, ImportResult, import_trace
from fairshare.sim.metrics import (
    METRIC_COLUMNS,
    UNFAIR_RHO,
    MetricColumn,
    RunMetrics,
    compute_metrics,
    finish_time_fairness,
    jain_index,
    job_completion_times,
    metrics_by_duration_class,
    metrics_by_tenant,
    normalized_throughput,
    results_table,
)
from fairshare.sim.plots import (
    plot_jct_cdf,
    plot_rho_cdf,
    plot_solver_time_vs_jobs,
    plot_utilization_over_time,
)
from fairshare.sim.progress_bar import ProgressBar
from fairshare.sim.records import JobRecord, RoundRecord
from fairshare.sim.result import SimulationResult
from fairshare.sim.simulator import check_run, simulate
from fairshare.sim.sweep import RunSpec, grid, run_spec, run_sweep
from fairshare.sim.traces import DEFAULT_TRACE, Trace, format_trace, generate_trace, read_trace, write_trace

__all__ = [
    "DEFAULT_TRACE",
    "METRIC_COLUMNS",
    "CsvColumns",
    "ImportResult",
    "UNFAIR_RHO",
    "JobRecord",
    "MetricColumn",
    "ProgressBar",
    "RoundRecord",
    "RunMetrics",
    "RunSpec",
    "SimConfig",
    "SimulationResult",
    "Trace",
    "check_run",
    "compute_metrics",
    "finish_time_fairness",
    "format_trace",
    "generate_trace",
    "grid",
    "import_trace",
    "jain_index",
    "job_completion_times",
    "metrics_by_duration_class",
    "metrics_by_tenant",
    "normalized_throughput",
    "parse_cluster",
    "plot_jct_cdf",
    "plot_rho_cdf",
    "plot_solver_time_vs_jobs",
    "plot_utilization_over_time",
    "read_trace",
    "results_table",
    "run_spec",
    "run_sweep",
    "simulate",
    "write_trace",
]
