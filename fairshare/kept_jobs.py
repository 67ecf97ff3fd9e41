"""The jobs and co-location candidates of a live engine, validated once and kept between plans.

A scheduler that plans every round, or again at every event, sends mostly the same jobs each time. A
:class:`KeptJobs` holds each job's round-document object as last validated (its ``id``, ``scale``,
``throughput``, ``weight``, ``priority``, ``shortfall_price``, ``restart_seconds`` and ``current``) with its
numbers, and each candidate pair likewise. :meth:`KeptJobs.sync` compares the jobs and pairs of a new plan with
the kept ones and validates only those that are new or changed, with the checks and messages of a round
document (``jobs[3].scale``, naming the position in the list given); :meth:`KeptJobs.problem` assembles the
round from the kept numbers. The round is the one :meth:`fairshare.problem.RoundProblem.from_dict` builds
from the same document, with the jobs in the order given.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fairshare._validate import clip
from fairshare.cluster import MAX_GPUS
from fairshare.documents import CURRENT_KEYS, reject_unknown_keys, round_problem_from_dict
from fairshare.errors import InvalidInputError
from fairshare.problem import RoundProblem, check_weight_ratio
from fairshare.running import Running

__all__ = ["KeptJobs"]

_JOB_FIELD = re.compile(r"^jobs\[(\d+)\]")
_PAIR_FIELD = re.compile(r"^colocation\[(\d+)\]")


@dataclass(frozen=True, slots=True)
class _Job:
    doc: dict[str, Any]  # the job object as validated, without ``current`` (nested objects copied)
    scale: float
    weight: float
    priority: float
    price: float
    restart: float
    throughput: np.ndarray  # (G,)
    gpu: int  # current type, -1: not running
    partner: str | None
    current: Any = None  # the ``current`` object as validated (a copy), compared apart from ``doc``


@dataclass(frozen=True, slots=True)
class _Pair:
    doc: dict[str, Any]
    a: str
    b: str
    gpu: int
    throughput: tuple[float, float]


def _copy(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a job or pair object deep enough that the caller's later changes do not reach it."""
    out = dict(obj)
    for k, v in out.items():
        t = type(v)
        if t is str or t is float or t is int or v is None:
            continue
        if t is dict or (t is not list and isinstance(v, Mapping)):
            out[k] = dict(v)
        elif isinstance(v, list):
            out[k] = list(v)
    return out


class KeptJobs:
    """Validated jobs and candidate pairs of a round, kept by id between plans (mutable).

    Parameters
    ----------
    gpu_types : sequence of str
        The cluster's GPU types, in order (a round with other types needs a new object).
    """

    def __init__(self, gpu_types: Sequence[str]) -> None:
        self.gpu_types = tuple(gpu_types)
        self._jobs: dict[str, _Job] = {}
        self._pairs: dict[tuple[object, ...], _Pair] = {}
        self.validated = 0  # job and pair objects validated by the last sync
        self.placed = 0  # jobs whose ``current`` alone changed (checked without validating the rest again)
        self._staged: tuple[Any, ...] | None = None  # a change apply() made, until accept()
        self.nowhere: list[tuple[int, str]] = []  # (position, id) of the jobs that can run nowhere (sync's capacity)

    def copy(self) -> KeptJobs:
        """An independent copy (the kept objects are immutable and shared)."""
        out = KeptJobs(self.gpu_types)
        out._jobs, out._pairs = dict(self._jobs), dict(self._pairs)
        return out

    def sync(self, jobs: Sequence[Mapping[str, Any]], colocation: Sequence[Mapping[str, Any]],
             ignore: frozenset[str] = frozenset(), capacity: np.ndarray | None = None) -> tuple[str, ...]:
        """Keep exactly ``jobs`` and ``colocation`` (round-document objects); returns the job ids in order.

        Only objects that differ from the kept ones are validated (``ignore``: job keys that are not part of the
        round document, such as the engine's rule inputs; any other unknown key is an error). Raises
        :class:`~fairshare.errors.InvalidInputError` naming ``jobs[i]...`` or ``colocation[p]...`` as in the
        lists given; the kept state is unchanged after an error. With ``capacity`` (GPUs per type), the jobs
        that can run nowhere (:meth:`cannot_run`) are found first and the candidate pairs that name one of them
        are dropped unread, as a round without those jobs would have them (:attr:`nowhere` lists them).
        """
        ids: list[str] = []
        fresh: list[tuple[int, dict[str, Any], Any]] = []
        moved: list[tuple[int, _Job, Any]] = []
        kept = self._jobs
        seen: set[str] = set()
        for i, job in enumerate(jobs):
            if type(job) is not dict and not isinstance(job, Mapping):
                raise InvalidInputError(f"jobs[{i}]", clip(job), "must be an object")
            jid = job.get("id")
            if type(jid) is not str or not jid:
                raise InvalidInputError(f"jobs[{i}].id", clip(jid), "missing" if jid is None else
                                        "must be a non-empty string")
            if jid in seen:
                raise InvalidInputError(f"jobs[{i}].id", jid, "duplicate job id")
            seen.add(jid)
            ids.append(jid)
            doc = {k: v for k, v in job.items() if k not in ignore}
            cur = doc.pop("current", None)
            old = kept.get(jid)
            if old is None or old.doc != doc:
                fresh.append((i, doc, cur))
            elif old.current != cur:  # only where it runs changed: the rest stays validated
                moved.append((i, old, cur))
        new_jobs = self._validate_jobs(fresh)
        placed = {old.doc["id"]: self._placed(i, old, cur) for i, old, cur in moved}
        jobs_now = {**{j: kept[j] for j in ids if j not in new_jobs}, **placed, **new_jobs}
        self.nowhere = [] if capacity is None else _cannot_run([jobs_now[j] for j in ids], ids, capacity)
        skip = {j for _, j in self.nowhere}
        keys: list[tuple[object, ...]] = []  # (job a, job b, type, repeat) or (position,), in the order given
        fresh_pairs: list[tuple[int, Mapping[str, Any]]] = []
        repeats: dict[tuple[object, ...], int] = {}
        found: dict[tuple[object, ...], _Pair] = {}
        for p, entry in enumerate(colocation):
            if skip and type(entry) is dict and type(entry.get("jobs")) is list \
                    and any(j in skip for j in entry["jobs"] if type(j) is str):
                continue
            key = _pair_key(entry, repeats) or (p,)
            keys.append(key)
            old_pair = self._pairs.get(key)
            if old_pair is not None and old_pair.doc == entry and old_pair.a not in new_jobs \
                    and old_pair.b not in new_jobs:
                found[key] = old_pair
            else:
                fresh_pairs.append((p, entry))
        try:
            checked = self._validate_pairs(fresh_pairs, jobs_now, ids)
        except InvalidInputError:  # a round document reports its jobs' weights before its pairs
            check_weight_ratio(np.array([jobs_now[j].weight for j in ids]))
            raise
        for p, pair in checked:
            found[keys[p]] = pair
        pairs = {key: found[key] for key in keys}
        self._jobs = {j: jobs_now[j] for j in ids}
        self._pairs = pairs
        self.validated = len(fresh) + len(fresh_pairs)
        self.placed = len(moved)
        return tuple(ids)

    def apply(self, *, departed: Sequence[str] = (), arrived: Sequence[Mapping[str, Any]] = (),
              changed: Sequence[Mapping[str, Any]] = (), placed: Mapping[str, Any] | None = None,
              colocation: Sequence[Mapping[str, Any]] = (), ignore: frozenset[str] = frozenset(),
              capacity: np.ndarray | None = None) -> tuple[str, ...]:
        """Change the kept jobs by an event, without comparing the others; returns the job ids in order.

        ``departed`` ids leave (with their candidate pairs); ``changed`` objects replace the kept jobs of their
        ids and ``arrived`` objects join at the end (both validated, errors naming ``changed[k]`` or
        ``arrived[k]``); ``placed`` maps ids to their new ``current`` object (``None``: not running);
        ``colocation`` pairs are added (validated, errors naming ``colocation[p]``). ``ignore`` and ``capacity``
        as for :meth:`sync`. The change is staged: it takes effect with :meth:`accept` (so that a caller can
        check what else the event needs first); the kept state is unchanged until then, and after an error.
        """
        gone = set(departed)
        fresh: list[tuple[int, dict[str, Any], Any]] = []
        for name, objs in (("changed", changed), ("arrived", arrived)):
            start = len(fresh)
            for k, job in enumerate(objs):
                if not isinstance(job, Mapping):
                    raise InvalidInputError(f"{name}[{k}]", clip(job), "must be an object")
                doc = {key: v for key, v in job.items() if key not in ignore}
                fresh.append((k, doc, doc.pop("current", None)))
            if name == "changed":
                new_changed = self._validate_jobs(fresh, "changed")
                fresh = []
            else:
                new_arrived = self._validate_jobs(fresh[start:], "arrived")
        seen: set[str] = set()
        for k, job in enumerate(arrived):  # validated above: each has a string id
            jid = str(job.get("id"))
            if jid in seen or (jid in self._jobs and jid not in gone):
                raise InvalidInputError(f"arrived[{k}].id", jid, "duplicate job id")
            seen.add(jid)
        jobs: dict[str, _Job] = {}
        for jid, kept_job in self._jobs.items():
            if jid in gone:
                continue
            jobs[jid] = new_changed.get(jid, kept_job)
        for i, (jid, cur) in enumerate((placed or {}).items()):
            if jid in jobs:
                jobs[jid] = self._placed(i, jobs[jid], cur)
        jobs.update(new_arrived)
        ids = tuple(jobs)
        nowhere = [] if capacity is None else _cannot_run(list(jobs.values()), ids, capacity)
        skip = {j for _, j in nowhere} | gone
        stale = set(new_changed)  # pairs of a changed job are checked again
        pairs: dict[tuple[object, ...], _Pair] = {}
        recheck: list[tuple[int, Mapping[str, Any]]] = []
        for key, pair in self._pairs.items():
            if pair.a in skip or pair.b in skip:
                continue
            if pair.a in stale or pair.b in stale:
                recheck.append((-1, pair.doc))
            else:
                pairs[key] = pair
        repeats: dict[tuple[object, ...], int] = {}
        for key in pairs:  # the next repeat number of each (job a, job b, type)
            if len(key) == 4:
                repeats[key[:3]] = max(repeats.get(key[:3], 0), int(key[3]) + 1)  # type: ignore[call-overload]
        try:
            checked = self._validate_pairs(recheck, jobs, ids)
        except InvalidInputError as err:
            raise InvalidInputError("changed", err.value, "a candidate pair of a changed job no longer holds: "
                                    + err.reason) from None
        added = [(p, e) for p, e in enumerate(colocation)
                 if not (isinstance(e, Mapping) and isinstance(e.get("jobs"), list)
                         and any(isinstance(j, str) and j in skip for j in e["jobs"]))]
        for p, pair in checked + self._validate_pairs(added, jobs, ids):
            pairs[_pair_key(pair.doc, repeats) or ("event", p, len(pairs))] = pair
        self._staged = (jobs, pairs, len(new_changed) + len(new_arrived) + len(recheck) + len(added),
                        len(placed or {}), nowhere)
        return ids

    def accept(self) -> None:
        """Make the change staged by :meth:`apply` the kept state."""
        if self._staged is None:
            raise RuntimeError("nothing staged: call apply() first")  # pragma: no cover - the engine's order
        self._jobs, self._pairs, self.validated, self.placed, self.nowhere = self._staged
        self._staged = None

    def problem(self, ids: Sequence[str], capacity: np.ndarray, deficit: np.ndarray, epsilon: float,
                fairness_weight: float, round_seconds: float) -> RoundProblem:
        """The round of the kept jobs ``ids`` (a subset, in this order) with these deficits and settings."""
        jobs = [self._jobs[j] for j in ids]
        n, g = len(jobs), len(self.gpu_types)
        index = {j: i for i, j in enumerate(ids)}
        throughput = np.array([j.throughput for j in jobs]).reshape(n, g)
        num = np.array([(j.scale, j.weight, j.priority, j.price, j.restart, j.gpu) for j in jobs]).reshape(n, 6)
        partner = np.array([-1 if j.partner is None else index.get(j.partner, -3) for j in jobs], np.int64)
        lost = np.flatnonzero(partner == -3)
        if lost.size:
            i = int(lost[0])
            raise InvalidInputError(f"jobs[{i}].current.partner", jobs[i].partner,
                                    "unknown job (a partner that left the round is no partner: give null)")
        pairs = [p for p in self._pairs.values() if p.a in index and p.b in index]
        pair_jobs = np.array([(index[p.a], index[p.b]) for p in pairs], np.int64).reshape(len(pairs), 2)
        pair_gpu = np.array([p.gpu for p in pairs], np.int64)
        pair_tput = np.array([p.throughput for p in pairs], np.float64).reshape(len(pairs), 2)
        if len(pairs) > 1:  # the same pair twice (in either order) on one type, as a round document refuses it
            lo, hi = pair_jobs.min(axis=1), pair_jobs.max(axis=1)
            key = (lo * n + hi) * g + pair_gpu
            order = np.argsort(key, kind="stable")
            dup = np.flatnonzero(key[order][1:] == key[order][:-1])
            if dup.size:
                q = pairs[int(order[dup[0] + 1])]
                raise InvalidInputError("colocation", [q.a, q.b, self.gpu_types[q.gpu]],
                                        "the same pair is listed twice for this GPU type")
        gpu = num[:, 5].astype(np.int64)
        running = Running.checked(n, g, gpu, partner, num[:, 4], round_seconds, ids) \
            if (gpu >= 0).any() else None
        problem = RoundProblem.from_trusted_arrays(
            self.gpu_types, capacity, tuple(ids), num[:, 0], throughput, num[:, 1], deficit, pair_jobs, pair_gpu,
            pair_tput, epsilon, fairness_weight, shortfall_price=num[:, 3], running=running)
        if (num[:, 2] != 1.0).any():
            problem = problem.with_prices(priority=num[:, 2])
        return problem

    def cannot_run(self, ids: Sequence[str], capacity: np.ndarray) -> list[tuple[int, str]]:
        """``(position, id)`` of the kept jobs ``ids`` that can run on no type of ``capacity`` (GPUs per type).

        A job can run on a type where its throughput is positive and that has at least ``max(1, scale)`` GPUs.
        """
        return _cannot_run([self._jobs[j] for j in ids], ids, capacity)

    # ------------------------------------------------------------------------------------------ internals
    def _validate_jobs(self, fresh: list[tuple[int, dict[str, Any], Any]], name: str = "jobs") -> dict[str, _Job]:
        if not fresh:
            return {}
        docs, partners, idle = [], [], []
        kept_docs = [_copy(doc) for _, doc, _ in fresh]
        for (_, _, cur), kept_doc in zip(fresh, kept_docs, strict=True):
            d = dict(kept_doc)  # changed below only by replacing keys: the kept copy stays as given
            d.pop("deficit", None)
            # a job with every throughput 0 can run nowhere: not an error here, the plan holds it out as it holds
            # out a job whose types have no GPUs now (cannot_run); validated with one throughput of 1
            tp = d.get("throughput")
            zero = isinstance(tp, dict) and bool(tp) and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and v == 0 for v in tp.values())
            if zero and isinstance(tp, dict):
                d["throughput"] = {**tp, next(iter(tp)): 1.0}
            idle.append(zero)
            partners.append(cur.get("partner") if isinstance(cur, Mapping) else None)
            if isinstance(cur, Mapping):
                d["current"] = {k: v for k, v in cur.items() if k != "partner"}
            elif cur is not None:
                d["current"] = cur  # refused by the round's checks
            docs.append(d)
        gpus = dict.fromkeys(self.gpu_types, MAX_GPUS)  # capacity is checked per plan (cannot_run)
        try:
            p = round_problem_from_dict({"gpus": gpus, "jobs": docs})
        except InvalidInputError as err:
            raise _renamed(err, _JOB_FIELD, name, [f[0] for f in fresh]) from None
        out: dict[str, _Job] = {}
        gpu = p.running.gpu if p.running is not None else np.full(len(docs), -1)
        restart = p.running.restart_seconds if p.running is not None else np.array(
            [float(d.get("restart_seconds", 0.0)) for d in docs])
        numbers = zip(p.scale.tolist(), p.weight.tolist(), p.priority.tolist(), p.shortfall_price.tolist(),
                      np.asarray(restart, np.float64).tolist(), np.asarray(gpu).tolist(), strict=True)
        throughput = np.array(p.throughput, np.float64)
        throughput[np.asarray(idle, bool)] = 0.0
        throughput.setflags(write=False)  # each job keeps a row
        for k, ((i, _, cur), kept_doc, partner, (sc, w, pr, pc, rs, gp)) in enumerate(
                zip(fresh, kept_docs, partners, numbers, strict=True)):
            if partner is not None and not isinstance(partner, str):
                raise InvalidInputError(f"{name}[{i}].current.partner", clip(partner), "unknown job (a partner that "
                                        "left the round is no partner: give null)")
            out[p.job_ids[k]] = _Job(kept_doc, sc, w, pr, pc, rs, throughput[k], int(gp), partner,
                                     dict(cur) if isinstance(cur, Mapping) else cur)
        return out

    def _placed(self, i: int, job: _Job, cur: Any) -> _Job:
        """``job`` running where ``cur`` (a ``current`` object or None) says, checked as a round document's."""
        where = f"jobs[{i}].current"
        if cur is None:
            return _Job(job.doc, job.scale, job.weight, job.priority, job.price, job.restart, job.throughput, -1,
                        None, None)
        if not isinstance(cur, Mapping):
            raise InvalidInputError(where, clip(cur), "must be an object {\"gpu\": type, \"partner\": job id or "
                                    "null}, or null (not running)")
        reject_unknown_keys(cur, CURRENT_KEYS, where + ".")
        g = cur.get("gpu")
        if not isinstance(g, str) or g not in self.gpu_types:
            raise InvalidInputError(where + ".gpu", clip(g), "GPU type is not in `gpus`")
        partner = cur.get("partner")
        if partner is not None and not isinstance(partner, str):
            raise InvalidInputError(where + ".partner", clip(partner), "unknown job (a partner that left the round "
                                    "is no partner: give null)")
        return _Job(job.doc, job.scale, job.weight, job.priority, job.price, job.restart, job.throughput,
                    self.gpu_types.index(g), partner, dict(cur))

    def _validate_pairs(self, fresh: list[tuple[int, Mapping[str, Any]]], jobs: Mapping[str, _Job],
                        order: Sequence[str]) -> list[tuple[int, _Pair]]:
        """``fresh`` pairs checked against the kept ``jobs``; a job's own error names its place in ``order``."""
        if not fresh:
            return []
        names: dict[str, None] = {}
        for _, entry in fresh:
            if isinstance(entry, Mapping) and isinstance(entry.get("jobs"), list):
                for j in entry["jobs"]:
                    if isinstance(j, str) and j in jobs:
                        names[j] = None
        # what a pair's checks read of its jobs (the rest of each job was validated when it was kept)
        job_docs = [{k: jobs[j].doc[k] for k in ("id", "scale", "throughput") if k in jobs[j].doc} for j in names]
        gpus = dict.fromkeys(self.gpu_types, MAX_GPUS)  # capacity is checked per plan (cannot_run)
        try:
            p = round_problem_from_dict({"gpus": gpus, "jobs": job_docs, "colocation": [e for _, e in fresh]})
        except InvalidInputError as err:
            m = _JOB_FIELD.match(err.field)
            if m is not None:  # a job named by a pair fails its own check: its throughput is 0 on every type
                jid = list(names)[int(m.group(1))]
                raise InvalidInputError(f"jobs[{list(order).index(jid)}]{err.field[m.end():]}", err.value,
                                        err.reason) from None
            raise _renamed(err, _PAIR_FIELD, "colocation", [i for i, _ in fresh]) from None
        ids = p.job_ids
        return [(i, _Pair(_copy(entry), ids[a], ids[b], g, (ta, tb)))
                for (i, entry), (a, b), g, (ta, tb) in zip(fresh, p.pair_jobs.tolist(), p.pair_gpu.tolist(),
                                                          p.pair_throughput.tolist(), strict=True)]


def _cannot_run(jobs: Sequence[_Job], ids: Sequence[str], capacity: np.ndarray) -> list[tuple[int, str]]:
    n = len(jobs)
    if not n:
        return []
    throughput = np.array([j.throughput for j in jobs]).reshape(n, len(capacity))
    need = np.maximum(1.0, np.array([j.scale for j in jobs]))
    runs = ((throughput > 0) & (np.asarray(capacity, np.float64)[None, :] >= need[:, None])).any(axis=1)
    return [(int(i), ids[int(i)]) for i in np.flatnonzero(~runs)]


def _pair_key(entry: object, repeats: dict[tuple[object, ...], int]) -> tuple[object, ...] | None:
    """``(job a, job b, type, k)`` for the ``k``-th candidate of these jobs and type met (``repeats`` counts)."""
    if type(entry) is not dict and not isinstance(entry, Mapping):
        return None
    pair, g = entry.get("jobs"), entry.get("gpu")
    if type(pair) is list and len(pair) == 2 and type(pair[0]) is str and type(pair[1]) is str \
            and type(g) is str:
        base = (pair[0], pair[1], g)
        k = repeats.get(base, 0)
        repeats[base] = k + 1
        return (*base, k)
    return None


def _renamed(err: InvalidInputError, pattern: re.Pattern[str], name: str, where: list[int]) -> InvalidInputError:
    """``err`` with the position in the validated sub-list replaced by the position in the caller's list."""
    m = pattern.match(err.field)
    if m is None or int(m.group(1)) >= len(where):
        return err
    return InvalidInputError(f"{name}[{where[int(m.group(1))]}]{err.field[m.end():]}", err.value, err.reason)
