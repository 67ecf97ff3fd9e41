"""Invariant checks of placements, shared by the library, its tests and users testing their own policies.

Each function returns a list of human-readable violations (empty = valid), in the manner of networkx's
``is_matching`` validators, so that a test can assert ``== []`` and show what broke.
"""

from __future__ import annotations

import numpy as np

from fairshare.allocation import Allocation
from fairshare.fair_share import next_deficit
from fairshare.formulation import RoundModel
from fairshare.problem import RoundProblem

__all__ = ["allocation_violations", "placement_violations"]


def placement_violations(model: RoundModel, x: np.ndarray, *, integral: bool = True, tol: float = 1e-7) -> list[str]:
    """Violations of column values ``x``: capacity, one placement per job, bounds, integrality.

    Gangs are whole and placements runnable by construction of the columns (a column occupies exactly the
    gang size on one type where every member can run).
    """
    c, p = model.columns, model.problem
    out: list[str] = []
    x = np.asarray(x, dtype=np.float64)
    if x.shape != (c.num,):
        return [f"expected {c.num} column values, got shape {x.shape}"]
    if (x < -tol).any() or (x > 1 + tol).any():
        out.append("column values outside [0, 1]")
    if integral and (np.abs(x - np.round(x)) > tol).any():
        out.append("column values not integral")
    per_job = np.bincount(c.job_a, weights=x, minlength=p.num_jobs)
    pair = c.is_pair
    per_job += np.bincount(c.job_b[pair], weights=x[pair], minlength=p.num_jobs)
    for j in np.flatnonzero(per_job > 1 + tol)[:3]:
        out.append(f"job {p.job_ids[j]!r} is in {per_job[j]:g} placements")
    used = np.bincount(c.gpu, weights=c.size * x, minlength=len(p.capacity))
    for g in np.flatnonzero(used > p.capacity + tol).tolist():
        out.append(f"type {p.gpu_types[g]!r}: {used[g]:g} GPUs used of {p.capacity[g]}")
    return out


def allocation_violations(problem: RoundProblem, allocation: Allocation, *, tol: float = 1e-7) -> list[str]:
    """Violations of an :class:`Allocation` checked against the round itself (not against columns).

    Checks: capacity per type; each job in at most one placement (integer modes) or total share <= 1
    (``lp``); gangs whole (``gpus`` equals every member's scale); placements only where every member can run
    alone; co-located pairs are listed candidates; reported throughputs match the placements; shortfall and
    next deficits are consistent and never negative.
    """
    out: list[str] = []
    p = problem
    idx = {j: i for i, j in enumerate(p.job_ids)}
    gidx = {g: i for i, g in enumerate(p.gpu_types)}
    runnable = p.runnable
    counted = p.capacity_scale
    used = np.zeros(len(p.gpu_types))
    share = np.zeros(p.num_jobs)
    tau = np.zeros(p.num_jobs)
    pairs = {}
    for (a, b), g, (ta, tb) in zip(p.pair_jobs.tolist(), p.pair_gpu.tolist(), p.pair_throughput.tolist()):
        pairs[(a, b, g)] = (ta, tb)
        pairs[(b, a, g)] = (tb, ta)
    for pl in allocation.placements:
        if pl.gpu not in gidx:
            out.append(f"placement {pl.jobs} on unknown GPU type {pl.gpu!r}")
            continue
        unknown = [j for j in pl.jobs if j not in idx]
        if unknown:
            out.append(f"placement names unknown jobs {unknown}")
            continue
        g = gidx[pl.gpu]
        members = [idx[j] for j in pl.jobs]
        used[g] += counted[members[0]] * pl.share  # a fractional request counts its share class
        for j in members:
            share[j] += pl.share
            if p.scale[j] != pl.gpus:
                out.append(f"gang of {pl.jobs} not whole: {pl.gpus} GPUs for scale {p.scale[j]}")
            if not runnable[j, g]:
                out.append(f"job {p.job_ids[j]!r} placed on {pl.gpu!r} where it cannot run")
        if len(members) == 1:
            tau[members[0]] += pl.share * p.throughput[members[0], g]
        elif len(members) == 2:
            key = (members[0], members[1], g)
            if key not in pairs:
                out.append(f"{pl.jobs} co-located on {pl.gpu!r} but not a listed candidate")
            else:
                tau[members[0]] += pl.share * pairs[key][0]
                tau[members[1]] += pl.share * pairs[key][1]
        else:
            out.append(f"placement of {len(members)} jobs: {pl.jobs}")
    for t in np.flatnonzero(used > p.capacity + tol).tolist():
        out.append(f"type {p.gpu_types[t]!r}: {used[t]:g} GPUs used of {p.capacity[t]}")
    for j in np.flatnonzero(share > 1 + tol).tolist():
        out.append(f"job {p.job_ids[j]!r} placed {share[j]:g} times")
    if not np.allclose(tau, allocation.jobs.throughput, rtol=1e-7, atol=1e-9):
        out.append("reported throughputs do not match the placements")
    out += _shared_gpu_violations(p, allocation, tol)
    if (allocation.jobs.next_deficit < -tol).any() or (allocation.jobs.job_shortfall < -tol).any():
        out.append("negative deficit or shortfall")
    if len(allocation.jobs.progress) == p.num_jobs and len(allocation.jobs.next_deficit) == p.num_jobs:
        expect = next_deficit(p.deficit, p.epsilon, allocation.jobs.progress)
        if not np.allclose(expect, allocation.jobs.next_deficit, rtol=1e-7, atol=1e-9):
            out.append("next deficits differ from max(0, D + 1 - epsilon - rho)")
    return out


def _shared_gpu_violations(p: RoundProblem, allocation: Allocation, tol: float) -> list[str]:
    """The packing of fractional jobs: every placed one on exactly one shared GPU of its type, none over 1."""
    if not p.has_fractional or allocation.report.mode == "lp":
        return []
    out: list[str] = []
    counted = p.capacity_scale
    idx = {j: i for i, j in enumerate(p.job_ids)}
    want = {pl.jobs[0]: pl.gpu for pl in allocation.placements if len(pl.jobs) == 1 and p.fractional[idx[pl.jobs[0]]]}
    seen: dict[str, int] = {}
    gpus_of: dict[str, set[int]] = {}
    for s in allocation.shared_gpus:
        if s.index in gpus_of.setdefault(s.gpu, set()):
            out.append(f"shared GPU {s.gpu}[{s.index}] listed twice")
        gpus_of[s.gpu].add(s.index)
        load = sum(counted[idx[j]] for j in s.jobs if j in idx)
        if load > 1 + tol or sum(s.shares) > 1 + tol:
            out.append(f"shared GPU {s.gpu}[{s.index}] over 1: share classes sum to {load:g}")
        for j in s.jobs:
            seen[j] = seen.get(j, 0) + 1
            if want.get(j) != s.gpu:
                out.append(f"job {j!r} on shared GPU {s.gpu}[{s.index}] but not placed alone on {s.gpu!r}")
    for j in want:
        if seen.get(j, 0) != 1:
            out.append(f"fractional job {j!r} is on {seen.get(j, 0)} shared GPUs (must be 1)")
    return out

