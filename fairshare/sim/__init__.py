"""Simulation: traces, the workload catalog, the round-by-round simulator, records, metrics, sweeps, plots.

This layer sits above the policies: it builds one :class:`~fairshare.problem.RoundProblem` per round,
asks a policy for a placement and executes it.
"""
