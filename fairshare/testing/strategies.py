r"""Hypothesis strategies that build random VALID round documents and :class:`~fairshare.problem.RoundProblem`\ s.

Shipped with the library so that users can property-test their own policies on the same rounds as
fairshare's own tests. Sizes are bounded (by default 0-12 jobs, 1-3 GPU types, 0-6 GPUs per type, gang
sizes 1, 2 and 4) so that the ``exact`` MILP of every example solves in milliseconds.

Every document drawn satisfies spec section 6 ("Valid input"):

* at least one GPU in the cluster (types with 0 GPUs occur);
* unique job ids; each job can run alone on at least one type (positive throughput and enough GPUs), while
  other types may be missing, 0, or too small for the gang;
* co-location candidates only between distinct jobs of the same scale that can both run alone on the
  candidate's type, each unordered pair at most once per type (listed in either order);
* optional weights (> 0), deficits (>= 0), ``epsilon`` in [0, 1) and ``fairness_weight`` (> 0).

Numbers are drawn on coarse grids (tenths) so that HiGHS sees well-scaled models.

This module needs ``hypothesis`` (a test dependency), which is imported here only.

Examples
--------
>>> from hypothesis import given
>>> @given(round_problems(max_jobs=4))
... def check(problem):
...     assert problem.num_jobs <= 4
>>> check()
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from fairshare.problem import RoundProblem

__all__ = ["GPU_NAMES", "round_documents", "round_problems"]

GPU_NAMES = ("V100", "P100", "K80", "A100", "H200")

_ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789-_"


def _tenths(lo: int, hi: int) -> st.SearchStrategy[float]:
    """Multiples of 0.1 in [lo / 10, hi / 10]."""
    return st.integers(lo, hi).map(lambda v: v / 10)


@st.composite
def round_documents(
    draw: st.DrawFn,
    *,
    min_jobs: int = 0,
    max_jobs: int = 12,
    max_types: int = 3,
    max_capacity: int = 6,
    scales: tuple[int, ...] = (1, 2, 4),
    colocation: bool = True,
    weights: bool = True,
    deficits: bool = True,
    epsilon: bool = True,
    fairness_weight: bool = True,
    shortfall_prices: bool = False,
    running: bool = False,
) -> dict[str, Any]:
    """A valid round document (spec section 6) as a plain ``dict``.

    Parameters
    ----------
    min_jobs, max_jobs : int
        Bounds on the number of jobs.
    max_types : int
        At most this many GPU types (1 to ``len(GPU_NAMES)``).
    max_capacity : int
        GPUs per type are drawn in ``[0, max_capacity]`` (at least one GPU in all).
    scales : tuple of int
        Gang sizes to draw from (those larger than every capacity are not used).
    colocation, weights, deficits, epsilon, fairness_weight : bool
        Whether the document may contain co-location candidates, weights, deficits, a non-default
        ``epsilon`` and a non-default ``fairness_weight``. Each optional field is sometimes left out so
        that the defaults are exercised too.
    shortfall_prices, running : bool
        Whether jobs may carry a ``shortfall_price`` (spec section 10) and a ``current`` placement with a
        ``restart_seconds`` (section 11; running pairs are drawn among the document's candidates, and the
        document may then set ``round_seconds``). Off by default, so that draws of earlier tests stay as
        they were.
    """
    if not 1 <= max_types <= len(GPU_NAMES):
        raise ValueError(f"`max_types` = {max_types!r}: must be in [1, {len(GPU_NAMES)}]")
    if max_capacity < 1:
        raise ValueError(f"`max_capacity` = {max_capacity!r}: must be >= 1")
    types = draw(st.lists(st.sampled_from(GPU_NAMES), min_size=1, max_size=max_types, unique=True))
    caps = draw(st.lists(st.integers(0, max_capacity), min_size=len(types), max_size=len(types)))
    if sum(caps) == 0:
        caps[draw(st.integers(0, len(types) - 1))] = draw(st.integers(1, max_capacity))
    gpus = dict(zip(types, caps))
    usable_scales = [s for s in scales if s <= max(caps)]
    if not usable_scales:
        usable_scales = [1]

    n = draw(st.integers(min_jobs, max_jobs))
    ids = draw(st.lists(st.text(_ID_ALPHABET, min_size=1, max_size=6), min_size=n, max_size=n, unique=True))
    jobs: list[dict[str, Any]] = []
    runnable: list[set[str]] = []
    for jid in ids:
        s = draw(st.sampled_from(usable_scales))
        fits = [g for g in types if gpus[g] >= s]
        home = draw(st.sampled_from(fits))
        tput: dict[str, float] = {}
        for g in types:
            if g == home:
                tput[g] = draw(_tenths(1, 1000))
            else:
                kind = draw(st.sampled_from(("missing", "zero", "positive", "positive")))
                if kind == "zero":
                    tput[g] = 0.0
                elif kind == "positive":
                    tput[g] = draw(_tenths(1, 1000))
        job: dict[str, Any] = {"id": jid, "scale": s, "throughput": tput}
        if weights and draw(st.booleans()):
            job["weight"] = draw(_tenths(1, 50))
        if deficits and draw(st.booleans()):
            job["deficit"] = draw(_tenths(0, 30))
        jobs.append(job)
        runnable.append({g for g, v in tput.items() if v > 0 and gpus[g] >= s})

    doc: dict[str, Any] = {"gpus": gpus, "jobs": jobs}
    if colocation:
        candidates = [(i, k, g) for i in range(n) for k in range(i + 1, n)
                      if jobs[i]["scale"] == jobs[k]["scale"] for g in sorted(runnable[i] & runnable[k])]
        if candidates:
            chosen = draw(st.lists(st.sampled_from(candidates), max_size=min(8, len(candidates)), unique=True))
            pairs = []
            for i, k, g in chosen:
                # slowed to 0-110 % of the alone throughput (interference; 0 and a speed-up are legal too)
                fi, fk = draw(st.integers(0, 11)) / 10, draw(st.integers(0, 11)) / 10
                ti, tk = round(jobs[i]["throughput"][g] * fi, 3), round(jobs[k]["throughput"][g] * fk, 3)
                if draw(st.booleans()):
                    pairs.append({"jobs": [ids[i], ids[k]], "gpu": g, "throughput": [ti, tk]})
                else:
                    pairs.append({"jobs": [ids[k], ids[i]], "gpu": g, "throughput": [tk, ti]})
            doc["colocation"] = pairs
        elif draw(st.booleans()):
            doc["colocation"] = []
    if shortfall_prices:
        for job in jobs:
            if draw(st.booleans()):
                job["shortfall_price"] = draw(st.sampled_from((0.05, 0.5, 1.0, 2.0, 20.0)))
    if running:
        _draw_running(draw, doc, runnable)
    if epsilon and draw(st.booleans()):
        doc["epsilon"] = draw(st.sampled_from((0.0, 0.05, 0.1, 0.25, 0.5, 0.9)))
    if fairness_weight and draw(st.booleans()):
        doc["fairness_weight"] = draw(st.sampled_from((0.5, 1.0, 10.0, 100.0, 1000.0)))
    return doc


def _draw_running(draw: st.DrawFn, doc: dict[str, Any], runnable: list[set[str]]) -> None:
    """Mark some jobs of ``doc`` as running (alone, or in pairs among its candidates) with restart costs."""
    jobs, busy = doc["jobs"], set()
    index = {job["id"]: i for i, job in enumerate(jobs)}
    for pair in doc.get("colocation", []):
        a, b = (index[j] for j in pair["jobs"])
        if a not in busy and b not in busy and draw(st.integers(0, 3)) == 0:
            busy |= {a, b}
            jobs[a]["current"] = {"gpu": pair["gpu"], "partner": jobs[b]["id"]}
            jobs[b]["current"] = {"gpu": pair["gpu"], "partner": jobs[a]["id"]}
    types = sorted(doc["gpus"])
    for i, job in enumerate(jobs):
        if i not in busy and draw(st.booleans()):
            # usually a type where it can run; sometimes one it cannot use any more (a node was lost)
            home = sorted(runnable[i]) if runnable[i] and draw(st.integers(0, 4)) > 0 else types
            job["current"] = {"gpu": draw(st.sampled_from(home)), "partner": None}
        if draw(st.booleans()):
            job["restart_seconds"] = draw(st.sampled_from((0.0, 30.0, 120.0, 360.0, 1000.0)))
    if draw(st.booleans()):
        doc["round_seconds"] = draw(st.sampled_from((60.0, 360.0, 600.0)))


def round_problems(**kwargs: Any) -> st.SearchStrategy[RoundProblem]:
    r"""Validated :class:`RoundProblem`\ s built from :func:`round_documents` (same keyword arguments)."""
    return round_documents(**kwargs).map(RoundProblem.from_dict)
