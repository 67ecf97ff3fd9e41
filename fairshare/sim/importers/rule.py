"""The import rule: a model, scale and work for each job read from a real trace (``docs/traces.md``)."""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fairshare._validate import clip
from fairshare.errors import InvalidInputError
from fairshare.problem import MAX_GPUS
from fairshare.sim.catalog import Catalog
from fairshare.sim.importers.base import GPU_ALIASES, CsvColumns, ImportResult, _Raw, _sha, _utc, _Window
from fairshare.sim.traces import MAX_ARRIVAL, MAX_ITERATIONS, Trace

__all__ = ["apply_rule", "assign_model"]


def _hash(key: str) -> int:
    """The rule's hash: the first 16 hex digits of SHA-256 of the UTF-8 key.

    >>> _hash("job-1")
    174151894793320618
    """
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:16], 16)


def assign_model(key: str, pool: Sequence[str]) -> str:
    """The model the rule gives a job: ``pool[h(key) mod len(pool)]`` (step 5 of the module documentation).

    >>> assign_model("job-1", ["A", "B", "C"])
    'B'
    """
    if not pool:
        raise InvalidInputError("pool", list(pool), "no model to choose from")
    return pool[_hash(key) % len(pool)]


def _map_type(name: str, cat: Catalog, user_map: Mapping[str, str]) -> str | None:
    if not name:
        return None
    if name in user_map:
        return user_map[name]
    for cand in GPU_ALIASES.get(name, (name,)):
        if cand in cat.gpu_types:
            return cand
    return None


def _peak_in_use(submit: np.ndarray, run: np.ndarray, gpus: np.ndarray, kinds: list[str]) -> dict[str, int]:
    """Peak number of GPUs of each kind in use at once (jobs counted from submit to submit + run)."""
    out: dict[str, int] = {}
    for kind in dict.fromkeys(kinds):
        sel = np.array([k == kind for k in kinds])
        ev_t = np.concatenate([submit[sel], submit[sel] + run[sel]])
        ev_g = np.concatenate([np.ceil(gpus[sel]), -np.ceil(gpus[sel])])
        order = np.lexsort((ev_g, ev_t))                      # ends before starts at the same time
        out[kind] = int(np.max(np.cumsum(ev_g[order]), initial=0))
    return out


def apply_rule(raw: _Raw, cat: Catalog, fmt: str, files: list[tuple[str, bytes]], columns: CsvColumns | None,
               fractional: str, user_map: dict[str, str], models: Sequence[str] | None,
               gpu_types: Sequence[str] | None, span: _Window | None,
               carry_in: bool = False, tenant: str | None = None) -> ImportResult:
    """The rule of ``docs/traces.md`` ("Importing a real trace") on the jobs read from a source, as a trace.

    The steps: the window (step 2), the suggested cluster and target types (step 9), a model, scale and work
    for each kept job (steps 1, 3-6), then the trace with its metadata (steps 7 and 8) and the source record.
    ``tenant`` names the source field that becomes the tenant (default: the user).
    """
    when = raw.submit_times()
    origin = float(when.min()) if when.size else 0.0
    window = None if span is None else span.hours(origin)
    inside, carried, start, skipped = raw.in_window(window, carry_in)
    submit, run, gpus = np.array(raw.submit, float), np.array(raw.run, float), np.array(raw.gpus, float)
    todo_submit, todo_run = _carried_in(raw, carried, start, submit, run)
    mapped = [_map_type(g, cat, user_map) for g in raw.gpu_type]
    suggested, unmapped = _suggested_cluster(raw, cat, user_map, submit, run, gpus)
    pool = _Pool.of(cat, models, gpu_types, suggested)
    tenants = _tenants(raw, tenant)
    keep: list[int] = []
    out_model: list[str] = []
    out_scale: list[float] = []
    out_iter: list[float] = []
    for i in np.flatnonzero(inside).tolist():
        if not math.isfinite(todo_run[i]):
            skipped["never started"] += 1
            continue
        if todo_run[i] < 0:
            skipped["end before start"] += 1
            continue
        got = pool.place(gpus[i], todo_run[i], raw.model_key[i], raw.id[i], mapped[i], fractional)
        if isinstance(got, str):
            skipped[got] += 1
            continue
        if got[2] > MAX_ITERATIONS:  # refused, not clipped: the source's run time is wrong or in another unit
            raise InvalidInputError(raw.where[i], clip(raw.id[i]), f"ran {todo_run[i]:.6g} s: {got[2]:.3g} "
                                    f"iterations of {got[0]!r}, above the {MAX_ITERATIONS:g} a trace may hold "
                                    "(is the time unit right?)")
        keep.append(i)
        out_model.append(got[0])
        out_scale.append(got[1])
        out_iter.append(got[2])
    if not keep:
        raise _no_job_left(raw, skipped, window, files, span)
    k = np.array(keep)
    arrival = todo_submit[k] - (start if carry_in and start is not None else todo_submit[k].min())
    if arrival.max() > MAX_ARRIVAL:
        raise InvalidInputError("trace", [p for p, _ in files], f"spans more than {MAX_ARRIVAL:g} s")
    ids, renamed = _unique_ids([raw.id[i] for i in keep])
    trace = Trace(id=ids, arrival=arrival, model=tuple(out_model),
                  scale=np.array(out_scale), iterations=np.array(out_iter), tenant=tuple(tenants[i] for i in keep),
                  gpus=np.minimum(gpus[k], MAX_GPUS), censored=np.array([raw.censored[i] for i in keep], dtype=bool),
                  metadata=_metadata(raw, keep, todo_run, run, carried))
    source = {
        "format": fmt,
        "files": [{"name": Path(p).name, "bytes": len(b), "sha256": _sha(b)} for p, b in files],
        "rule": "fairshare.sim.importers (docs/traces.md, 'Importing a real trace')",
        "catalog": [s.name for s in cat.sources],
        "target_gpu_types": list(pool.targets),
        "fractional": fractional,
        "gpu_type_map": user_map,
        "window": None if window is None else list(window),
        "window_utc": None if span is None or not span.dates else span.text(),
        "carry_in": carry_in,
        "carried_in": int(carried[k].sum()),
        "models": None if models is None else list(models),
        "columns": None if columns is None else {f: getattr(columns, f) for f in columns.__dataclass_fields__},
        "jobs": len(trace), "censored": int(trace.censored.sum()), "skipped": dict(skipped),
        "renamed_ids": renamed,
        "suggested_cluster": suggested, "unmapped_gpu_types": unmapped,
        "tenant": tenant or "user",
        "gpu_types_known": bool(suggested),
        "targets_from": "cluster" if gpu_types is not None else ("suggested" if suggested else "default"),
        "peak_gpus": sum(unmapped.values()) if raw.inventory else _peak_gpus(submit, run, gpus),
        "derived_scales": int(sum(1 for s in out_scale if s > _measured_max(cat))),
        "derived_above": _measured_max(cat),
    }
    return ImportResult(trace, dict(skipped), suggested, unmapped, source)


def _carried_in(raw: _Raw, carried: np.ndarray, start: float | None, submit: np.ndarray,
                run: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Submit and run times to replay (step 2).

    A job carried into the window arrives at its start with the run time it had left.
    """
    todo_submit, todo_run = submit.copy(), run.copy()
    if carried.any():
        assert start is not None
        began = np.array(raw.start, float)[carried]
        todo_submit[carried] = start
        todo_run[carried] = np.minimum(run[carried], began + run[carried] - start)
    return todo_submit, todo_run


def _suggested_cluster(raw: _Raw, cat: Catalog, user_map: dict[str, str], submit: np.ndarray, run: np.ndarray,
                       gpus: np.ndarray) -> tuple[dict[str, int], dict[str, int]]:
    """GPUs per catalog type and per source type without a catalog name (step 9).

    From the machine list, else the peak in use per GPU type of the whole source's jobs that ran (not the
    window's: the window must not change the target types, hence the work).
    """
    ran = np.isfinite(run) & (run >= 0)
    inv = raw.inventory or (_peak_in_use(submit[ran], run[ran], gpus[ran],
                                         [g or "" for g, r in zip(raw.gpu_type, ran) if r])
                            if any(g for g, r in zip(raw.gpu_type, ran) if r) else {})
    suggested: dict[str, int] = {}
    unmapped: dict[str, int] = {}
    for kind, count in inv.items():
        if count <= 0:
            continue
        name = _map_type(kind, cat, user_map)
        if name is None:
            if kind:
                unmapped[kind] = unmapped.get(kind, 0) + count
        else:
            suggested[name] = min(MAX_GPUS, suggested.get(name, 0) + count)
    return suggested, unmapped


@dataclass(frozen=True)
class _Pool:
    """The models the rule may give a job and the target GPU types (steps 5 and 6), with throughputs per scale."""

    cat: Catalog
    allowed: tuple[str, ...]
    targets: tuple[str, ...]
    tgt: np.ndarray
    scales: np.ndarray
    tables: dict[int, np.ndarray]

    @classmethod
    def of(cls, cat: Catalog, models: Sequence[str] | None, gpu_types: Sequence[str] | None,
           suggested: dict[str, int]) -> _Pool:
        """The pool of ``models`` (default every catalog model) on ``gpu_types``.

        Default target types: the suggested cluster's; when the source names no GPU type of the catalog, the
        catalog's common types (:func:`common_gpu_types`).
        """
        if gpu_types is not None:
            targets = tuple(gpu_types)
            for g in targets:
                cat.gpu_index(g)
        else:
            targets = tuple(suggested) or common_gpu_types(cat)
        if models is not None:
            for name in models:
                cat.model_index(name)
        allowed = cat.models if models is None else tuple(m for m in cat.models if m in set(models))
        return cls(cat, allowed, targets, np.array([cat.gpu_index(g) for g in targets], dtype=np.int64),
                   np.array(cat.scales), {})

    def table(self, scale: int) -> np.ndarray:
        """Alone throughputs of the allowed models at ``scale`` on every catalog type."""
        if scale not in self.tables:
            mi = np.array([self.cat.model_index(m) for m in self.allowed], dtype=np.int64)
            self.tables[scale] = self.cat.throughput_matrix(mi, np.full(len(mi), scale), self.cat.gpu_types)
        return self.tables[scale]

    def place(self, g: float, run: float, key: str, jid: str, gtype: str | None,
              fractional: str) -> str | tuple[str, float, float]:
        """``(model, scale, iterations)`` of a job (steps 3, 5 and 6), or why it is left out.

        The job asked for ``g`` GPUs and ran ``run`` seconds on ``gtype`` (catalog name; None: unknown).
        """
        if g != math.floor(g) and fractional == "drop":
            return "part of a GPU (fractional=drop)"
        share = fractional == "share" and 0 < g < 1
        whole = max(1, math.ceil(g - 1e-9))
        fit = self.scales[self.scales >= whole]
        if not fit.size:
            return f"more GPUs than any catalog scale (max {int(self.scales.max())})"
        scale = int(fit[0])  # a share runs at its fraction of the scale-1 throughput
        tp = self.table(scale) if not share else self.table(1) * g
        runs_on_target: np.ndarray = np.asarray((tp[:, self.tgt] > 0).any(axis=1))
        pool_idx = np.flatnonzero(runs_on_target)
        if not pool_idx.size:
            return f"no model with data at scale {scale} on {', '.join(self.targets)}"
        gi = self.cat.gpu_index(gtype) if gtype is not None else -1
        m: int
        if key and key in self.allowed and bool(runs_on_target[self.allowed.index(key)]):
            m = self.allowed.index(key)
        else:
            there = pool_idx[tp[pool_idx, gi] > 0] if gi >= 0 else pool_idx[:0]
            pool = there if there.size else pool_idx
            m = int(pool[_hash(key or jid) % len(pool)])
        rate = tp[m, gi] if gi >= 0 and tp[m, gi] > 0 else float(tp[m, self.tgt].max())
        work = float(run) * float(rate)  # iterations; inf for a run time too long for any trace (refused later)
        return self.allowed[m], (float(g) if share else scale), max(1.0, float(round(work)) if math.isfinite(work)
                                                                    else math.inf)


def common_gpu_types(cat: Catalog) -> tuple[str, ...]:
    """The catalog's GPU types that have data for at least half of its workloads (at some scale).

    The target types of an import whose source names no GPU type and that is given no cluster: the default
    catalog's K80, P100 and V100, not the H200, on which only the six H200 workloads have data.

    >>> from fairshare.sim.catalog import load_catalog
    >>> common_gpu_types(load_catalog())
    ('K80', 'P100', 'V100')
    """
    have = (cat.alone > 0).any(axis=1).sum(axis=0)
    common = tuple(g for g, n in zip(cat.gpu_types, have.tolist(), strict=True) if 2 * n >= len(cat.models))
    return common or cat.gpu_types


def _measured_max(cat: Catalog) -> int:
    """The largest scale with a figure not made by the scale-out rule (8 in the shipped catalogs)."""
    ours = [k for k, s in enumerate(cat.sources) if s.name == "derived:scale-out-v1"]
    keep = ~np.isin(cat.alone_source, ours) & (cat.alone > 0)
    scales = [s for si, s in enumerate(cat.scales) if keep[:, si, :].any()]
    return max(scales, default=max(cat.scales))


def _peak_gpus(submit: np.ndarray, run: np.ndarray, gpus: np.ndarray) -> int:
    """Peak number of GPUs in use at once over the whole source (jobs that ran, any GPU type)."""
    ran = np.isfinite(run) & (run >= 0)
    if not ran.any():
        return 0
    return _peak_in_use(submit[ran], run[ran], gpus[ran], [""] * int(ran.sum()))[""]


def _tenants(raw: _Raw, field: str | None) -> list[str]:
    """Each job's tenant (step 8).

    The CSV's ``tenant`` column where one was mapped; else the source field ``field`` (a field the reader kept
    in the metadata, such as Philly's ``vc``, or ``"user"``); else the user.
    """
    if field is None:
        return [u if t is None else t for t, u in zip(raw.tenant, raw.user, strict=True)]
    if field == "user":
        return list(raw.user)
    if not any(field in m for m in raw.meta):
        known = sorted({"user", *(k for m in raw.meta for k in m)})
        raise InvalidInputError("tenant", field, f"no such field in the source (fields: {', '.join(known)})")
    return [m.get(field, "") for m in raw.meta]


def _unique_ids(ids: list[str]) -> tuple[tuple[str, ...], dict[str, list[str]]]:
    """The kept jobs' ids, each repeat renamed ``ID#2``, ``ID#3``, ... in source order, and the renames.

    A name already taken (a source that also has a job ``j1#2``) is skipped: ``j1#3``. The renames map each
    repeated id to the new names of its repeats.
    """
    taken = set(ids)
    first: set[str] = set()
    count: dict[str, int] = {}
    renamed: dict[str, list[str]] = {}
    out = []
    for jid in ids:
        if jid not in first:
            first.add(jid)
            out.append(jid)
            continue
        k = count.get(jid, 1)
        while True:
            k += 1
            new = f"{jid}#{k}"
            if new not in taken:
                break
        count[jid] = k
        taken.add(new)
        renamed.setdefault(jid, []).append(new)
        out.append(new)
    return tuple(out), renamed


def _metadata(raw: _Raw, keep: list[int], todo_run: np.ndarray, run: np.ndarray,
              carried: np.ndarray) -> tuple[dict[str, str], ...]:
    """The kept jobs' metadata (step 8): the source's fields, its GPU type, run time, user, carried-in marks."""
    metas = []
    for i in keep:
        meta = dict(raw.meta[i])
        if raw.gpu_type[i]:
            meta["gpu_type"] = raw.gpu_type[i]
        meta["run_seconds"] = repr(float(todo_run[i]))
        if carried[i]:
            meta["carried_in"] = "true"
            meta["source_run_seconds"] = repr(float(run[i]))
        if raw.user[i]:
            meta["user"] = raw.user[i]
        metas.append(meta)
    return tuple(metas)


def _no_job_left(raw: _Raw, skipped: Counter[str], window: tuple[float | None, float | None] | None,
                 files: list[tuple[str, bytes]], dates: _Window | None = None) -> InvalidInputError:
    """The error when the rule keeps no job, with the reasons (and the source's span, with a window)."""
    reasons = "; ".join(f"{v} {k}" for k, v in skipped.items()) or "the source has no job"
    if window is not None:
        when = raw.submit_times()
        span = (when.max() - when.min()) / 3600.0 if when.size else 0.0
        if dates is not None and dates.dates and when.size:
            return InvalidInputError("window", dates.text(), f"no job left to import ({reasons}); the source's "
                                     f"jobs were submitted from {_utc(float(when.min()))} to "
                                     f"{_utc(float(when.max()))} UTC (its times read as seconds since "
                                     "1970-01-01 UTC)")
        return InvalidInputError("window", list(window), f"no job left to import ({reasons}); the source's "
                                 f"jobs were submitted from 0 to {span:,.1f} h")
    return InvalidInputError("trace", [p for p, _ in files], f"no job left to import ({reasons})")
