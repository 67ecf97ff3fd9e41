"""Job traces: reading, writing and generating the work a simulation replays.

A :class:`Trace` is one row per job: ``id``, ``arrival`` (s), ``model`` (a workload of the catalog),
``scale`` (GPUs), ``iterations`` (total work), ``weight`` (fairness weight, default 1), ``tenant`` (default
``""``), and, for traces imported from real clusters (:mod:`fairshare.sim.importers`), ``gpus`` (the GPUs the
job asked for in the source, possibly a fraction; default ``scale``), ``censored`` (the job was still running
when the source trace ended, so its work is a lower bound; default false) and free-form ``metadata``
(string values, e.g. the source's queue or user). Jobs are kept in arrival order (a stable sort: jobs
arriving at the same time keep their input order). Formats (``docs/traces.md``): CSV with header
``id,arrival,model,scale,iterations[,weight][,tenant][,gpus][,censored][,meta.KEY...]``, or JSON
``{"jobs": [{...}, ...]}`` / a bare list of job objects (metadata as ``"meta": {...}``).

:func:`generate_trace` follows Gavel's recipe (spec ``simulator.md``, section Trace): Poisson arrivals at
``jobs_per_hour`` (first job at t = 0), duration ``60 * 10**U(1.5, 3)`` s with probability 0.8 else
``60 * 10**U(3, 4)`` s (or sampled from the 33,192 Philly jobs), scale 1/2/4/8 with probability
70/10/15/5 %, model uniform over the catalog models that can run at that scale on ``gpu_types``, and
``iterations = round(duration * alone throughput on the fastest of gpu_types)``. Every attribute has its
own random stream spawned from ``seed``, so the same seed gives the same trace and the first ``n`` jobs do
not depend on how many jobs are generated.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import IO, Any

import numpy as np

from fairshare._io import read_input
from fairshare._validate import check_array, clip, is_real, readonly
from fairshare.documents import read_json
from fairshare.errors import InvalidInputError
from fairshare.problem import MAX_GPUS
from fairshare.sim.catalog import DATA_DIR, Catalog, load_catalog

__all__ = ["COLUMNS", "DEFAULT_TRACE", "MAX_ARRIVAL", "MAX_ITERATIONS", "MAX_TRACE_BYTES", "META_PREFIX",
           "SCALE_PROBABILITIES", "Trace", "format_trace", "generate_trace", "read_trace", "write_trace"]

COLUMNS = ("id", "arrival", "model", "scale", "iterations", "weight", "tenant", "gpus", "censored")
"""Columns of a trace; the first five are required. CSV metadata columns are named ``meta.KEY``."""
_REQUIRED = COLUMNS[:5]
META_PREFIX = "meta."
"""Prefix of a CSV column that holds metadata (``meta.queue``); JSON job objects use a ``"meta"`` object."""
MAX_TRACE_BYTES = 4 * 2**30
"""Largest trace file (or imported source file) read, in bytes: 4 GiB, several times the largest public trace."""

MAX_ARRIVAL = 1e12
"""Largest arrival time (s) a trace may hold (about 31,700 years): later ones are refused, not rounded."""
MAX_ITERATIONS = 1e18
"""Largest work (iterations) of one job."""
_TRUE, _FALSE = ("1", "true", "yes"), ("", "0", "false", "no")

SCALE_PROBABILITIES: dict[int, float] = {1: 0.70, 2: 0.10, 4: 0.15, 8: 0.05}
"""Gavel's distribution of job scales (GPUs per job) for multi-GPU traces."""

DEFAULT_TRACE = DATA_DIR / "default_trace.csv"
"""The built-in trace (see ``docs/traces.md`` for the call that generated it)."""

PHILLY_FILE = DATA_DIR / "philly_job_distribution.csv"

MIN_JOBS_PER_HOUR, MAX_JOBS_PER_HOUR = 1e-3, 1e9
"""Range of the generator's arrival rate (one job per 42 days to a billion per hour)."""


@dataclass(frozen=True, slots=True, eq=False)
class Trace:
    """A validated job trace, in arrival order (read-only arrays, tuple labels).

    Parameters
    ----------
    id : sequence of str
        Unique job identifiers.
    arrival : array of float, shape (N,)
        Arrival times in seconds, finite and >= 0.
    model : sequence of str
        Workload of each job (a catalog model name).
    scale : array of int or float, shape (N,)
        GPUs per job: a whole number >= 1 (a gang), or a fraction ``0 < s < 1`` (a share of one GPU). Stored
        as int64 when every job asks for whole GPUs, else float64.
    iterations : array of float, shape (N,)
        Total work of each job, finite and > 0.
    weight : array of float, shape (N,), optional
        Fairness weights, finite and > 0 (default 1).
    tenant : sequence of str, optional
        Tenant of each job (default ``""``).
    gpus : array of float, shape (N,), optional
        GPUs each job asked for in the source trace, finite and > 0; may be a fraction of one GPU (default
        ``scale``). The simulator schedules ``scale``.
    censored : array of bool, shape (N,), optional
        The job was still running when the source trace ended: its ``iterations`` are a lower bound, and
        metrics leave it out of JCT (default all false).
    metadata : sequence of mapping of str to str, optional
        Free-form fields of each job (default empty), carried into the job records.

    Raises
    ------
    InvalidInputError
        If a field is invalid; the message names ``jobs[i].<field>`` (0-based, input order) and the value.

    Examples
    --------
    >>> t = Trace(id=["b", "a"], arrival=[60.0, 0.0], model=["LM (batch size 20)"] * 2, scale=[1, 2],
    ...           iterations=[1000, 500])
    >>> t.id, t.scale.tolist(), t.weight.tolist()
    (('a', 'b'), [2, 1], [1.0, 1.0])
    """

    id: tuple[str, ...]
    arrival: np.ndarray
    model: tuple[str, ...]
    scale: np.ndarray
    iterations: np.ndarray
    weight: np.ndarray = None  # type: ignore[assignment]
    tenant: tuple[str, ...] = None  # type: ignore[assignment]
    gpus: np.ndarray = None  # type: ignore[assignment]
    censored: np.ndarray = None  # type: ignore[assignment]
    metadata: tuple[dict[str, str], ...] = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        """Validate every column and store the arrays read-only, in arrival order."""
        set_ = object.__setattr__
        ids = tuple(self.id)
        N = len(ids)
        models = tuple(self.model)
        tenants = ("",) * N if self.tenant is None else tuple(self.tenant)
        metas = tuple({} for _ in range(N)) if self.metadata is None else tuple(self.metadata)
        for name, seq in (("model", models), ("tenant", tenants), ("metadata", metas)):
            if len(seq) != N:
                raise InvalidInputError(name, len(seq), f"expected {N} values, one per job")
        for i, meta in enumerate(metas):
            if not (isinstance(meta, Mapping) and all(isinstance(k, str) and k and isinstance(v, str)
                                                      for k, v in meta.items())):
                raise InvalidInputError(f"jobs[{i}].metadata", clip(meta), "must map non-empty names to strings")
        metas = tuple({k: v for k, v in m.items() if v} for m in metas)   # an empty value is no value
        for i, v in enumerate(ids):
            if not (isinstance(v, str) and v):
                raise InvalidInputError(f"jobs[{i}].id", v, "must be a non-empty string")
        for i, v in enumerate(models):
            if not (isinstance(v, str) and v):
                raise InvalidInputError(f"jobs[{i}].model", v, "must be a non-empty string")
        for i, v in enumerate(tenants):
            if not isinstance(v, str):
                raise InvalidInputError(f"jobs[{i}].tenant", v, "must be a string")
        if len(set(ids)) != N:
            seen: set[str] = set()
            for i, v in enumerate(ids):
                if v in seen:
                    raise InvalidInputError(f"jobs[{i}].id", v, "duplicate job id")
                seen.add(v)
        arrival = _float_array(self.arrival, "arrival", N)
        _check(arrival, (arrival >= 0) & (arrival <= MAX_ARRIVAL), "arrival",
               f"must be finite and >= 0 (at most {MAX_ARRIVAL:g} s)")
        iterations = _float_array(self.iterations, "iterations", N)
        _check(iterations, (iterations > 0) & (iterations <= MAX_ITERATIONS), "iterations",
               f"must be finite and > 0 (at most {MAX_ITERATIONS:g})")
        weight = np.ones(N) if self.weight is None else _float_array(self.weight, "weight", N)
        _check(weight, weight > 0, "weight", "must be finite and > 0")
        scale_f = _float_array(self.scale, "scale", N)
        part = (scale_f > 0) & (scale_f < 1)
        _check(scale_f, ((scale_f >= 1) & (np.floor(scale_f) == scale_f) & (scale_f <= MAX_GPUS)) | part, "scale",
               f"must be a positive integer <= {MAX_GPUS} (2**31) or a fraction 0 < s < 1 (a share of one GPU)")
        gpus = scale_f.copy() if self.gpus is None else _float_array(self.gpus, "gpus", N)
        _check(gpus, (gpus > 0) & (gpus <= MAX_GPUS), "gpus", "must be finite, > 0 and <= 2**31")
        if self.censored is None:
            censored = np.zeros(N, dtype=bool)
        else:
            censored = np.asarray(self.censored).reshape(-1)
            if censored.shape != (N,) or censored.dtype != np.bool_:
                raise InvalidInputError("censored", clip(self.censored), f"expected {N} booleans, one per job")
        order = np.argsort(arrival, kind="stable")
        if np.any(order != np.arange(N)):
            ids, models, tenants, metas = (tuple(seq[i] for i in order) for seq in (ids, models, tenants, metas))
            arrival, iterations, weight, scale_f, gpus, censored = (
                a[order] for a in (arrival, iterations, weight, scale_f, gpus, censored))
        set_(self, "id", ids)
        set_(self, "model", models)
        set_(self, "tenant", tenants)
        set_(self, "metadata", metas)
        set_(self, "arrival", readonly(arrival))
        set_(self, "iterations", readonly(iterations))
        set_(self, "weight", readonly(weight))
        set_(self, "scale", readonly(scale_f if part.any() else scale_f.astype(np.int64)))
        set_(self, "gpus", readonly(gpus))
        set_(self, "censored", readonly(censored.copy()))

    def __len__(self) -> int:
        """Number of jobs."""
        return len(self.id)

    def __eq__(self, other: object) -> bool:
        """Equal columns, job by job."""
        if not isinstance(other, Trace):
            return NotImplemented
        return (self.id == other.id and self.model == other.model and self.tenant == other.tenant
                and self.metadata == other.metadata
                and all(np.array_equal(getattr(self, f), getattr(other, f))
                        for f in ("arrival", "scale", "iterations", "weight", "gpus", "censored")))

    __hash__ = None  # type: ignore[assignment]

    @property
    def num_jobs(self) -> int:
        """Number of jobs ``N``."""
        return len(self.id)

    def take(self, rows: Sequence[int] | np.ndarray) -> Trace:
        """The trace of the jobs in ``rows`` (re-sorted by arrival)."""
        r = np.asarray(rows, dtype=np.int64).reshape(-1)
        return Trace(id=tuple(self.id[i] for i in r), arrival=self.arrival[r],
                     model=tuple(self.model[i] for i in r), scale=self.scale[r], iterations=self.iterations[r],
                     weight=self.weight[r], tenant=tuple(self.tenant[i] for i in r), gpus=self.gpus[r],
                     censored=self.censored[r], metadata=tuple(self.metadata[i] for i in r))

    @property
    def has_extras(self) -> bool:
        """Whether a job has a fractional or different ``gpus``, is censored or carries metadata."""
        return bool(np.any(self.gpus != self.scale) or self.censored.any() or any(self.metadata))

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per job (the JSON job objects), in arrival order.

        ``gpus``, ``censored`` and ``meta`` appear only where they differ from their defaults, so a trace
        without them writes exactly as before they existed.
        """
        out = []
        for i in range(len(self)):
            rec: dict[str, Any] = {"id": self.id[i], "arrival": _plain_number(self.arrival[i]), "model": self.model[i],
                                   "scale": _plain_number(self.scale[i]),
                                   "iterations": _plain_number(self.iterations[i]),
                                   "weight": _plain_number(self.weight[i]), "tenant": self.tenant[i]}
            if self.gpus[i] != self.scale[i]:
                rec["gpus"] = _plain_number(self.gpus[i])
            if self.censored[i]:
                rec["censored"] = True
            if self.metadata[i]:
                rec["meta"] = dict(self.metadata[i])
            out.append(rec)
        return out


def _float_array(values: Any, name: str, n: int) -> np.ndarray:
    try:
        a = np.array(values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InvalidInputError(name, values, "must be numbers") from None
    if a.shape != (n,):
        raise InvalidInputError(name, a.shape, f"expected {n} values, one per job")
    return a


def _check(a: np.ndarray, ok: np.ndarray, name: str, reason: str) -> None:
    check_array(a, ok, lambda i: f"jobs[{i[0]}].{name}", reason)


def _plain_number(x: float) -> int | float:
    """A float as written to CSV/JSON: integral values as ints, others with their shortest exact repr."""
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 2**53 else x


# ---------------------------------------------------------------------- reading
def read_trace(path_or_file: str | os.PathLike[str] | IO[str] | IO[bytes], *,
               catalog: Catalog | None = None) -> Trace:
    r"""Read and validate a trace from a CSV or JSON file.

    The format is chosen by the suffix (``.csv`` / ``.json``); otherwise (or for a file object) by the
    content: JSON if the first non-blank character is ``{`` or ``[``, else CSV.

    Parameters
    ----------
    path_or_file : path or text/binary file object
        The trace.
    catalog : Catalog, optional
        If given, every model must be one of its models.

    Returns
    -------
    Trace
        Jobs in arrival order (stable: ties keep the file order).

    Raises
    ------
    InvalidInputError
        For a missing or unknown column, and for every invalid value; the field is ``row <r>.<column>``
        (``r`` = 1-based data row) and the message gives the value and the line of the file.

    Examples
    --------
    >>> import io
    >>> text = "id,arrival,model,scale,iterations\nj1,0,LM (batch size 20),1,5000\n"
    >>> read_trace(io.StringIO(text)).iterations.tolist()
    [5000.0]
    """
    if isinstance(path_or_file, (str, os.PathLike)):
        path = Path(path_or_file)
        name = path.name
        raw: str | bytes = read_input("path", path, MAX_TRACE_BYTES, allow_empty=True)
        suffix = path.suffix.lower()
    else:
        raw = path_or_file.read()
        name = Path(str(getattr(path_or_file, "name", "<stream>"))).name
        suffix = ""
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InvalidInputError("path", name, f"not a UTF-8 text file ({exc.reason} at byte {exc.start})") from None
    else:
        text = raw
    if "\0" in text:
        raise InvalidInputError("path", name, "not a text file (it holds NUL characters)")
    if suffix not in (".csv", ".json"):
        suffix = ".json" if text.lstrip()[:1] in ("{", "[") else ".csv"
    rows = _rows_from_json(text, name) if suffix == ".json" else _rows_from_csv(text, name)
    return _trace_from_rows(rows, catalog)


_Row = tuple[int, str, dict[str, Any], bool]     # (row number, where, values, values are text)


def _rows_from_csv(text: str, name: str) -> list[_Row]:
    reader = csv.reader(io.StringIO(text), skipinitialspace=True)
    header: list[str] | None = None
    rows: list[_Row] = []
    for cells in reader:
        if not cells or all(not c.strip() for c in cells):
            continue
        cells = [c.strip() for c in cells]
        line = reader.line_num
        if header is None:
            header = cells
            for col in header:
                if col not in COLUMNS and not (col.startswith(META_PREFIX) and len(col) > len(META_PREFIX)):
                    raise InvalidInputError("header", col, f"unknown column in {name}, line {line} (columns: "
                                            f"{', '.join(COLUMNS)}; name a column {META_PREFIX}{col} to keep it "
                                            "as metadata)")
                if header.count(col) > 1:
                    raise InvalidInputError("header", col, f"duplicate column in {name}, line {line}")
            for col in _REQUIRED:
                if col not in header:
                    raise InvalidInputError("header", ",".join(header),
                                            f"missing column {col!r} in {name}, line {line}")
            continue
        r = len(rows) + 1
        where = f"{name}, line {line}"
        if len(cells) != len(header):
            raise InvalidInputError(f"row {r}", ",".join(cells),
                                    f"expected {len(header)} fields, got {len(cells)} ({where})")
        rows.append((r, where, dict(zip(header, cells)), True))
    if header is None:
        raise InvalidInputError("header", "", f"{name} is empty (expected a header {','.join(_REQUIRED)})")
    return rows


def _rows_from_json(text: str, name: str) -> list[_Row]:
    try:
        doc = read_json(text, what="document")
    except InvalidInputError as exc:
        raise InvalidInputError("document", name, f"not valid JSON ({exc})") from None
    if isinstance(doc, Mapping):
        for key in doc:
            if key not in ("jobs", "meta"):
                raise InvalidInputError(key, "...", f"unknown top-level key in {name} (allowed: jobs, meta)")
        if "jobs" not in doc:
            raise InvalidInputError("jobs", None, f"missing in {name}")
        doc = doc["jobs"]
    if not isinstance(doc, list):
        raise InvalidInputError("jobs", type(doc).__name__, f"must be a list of job objects ({name})")
    rows: list[_Row] = []
    for i, job in enumerate(doc):
        where = f"{name}, jobs[{i}]"
        if not isinstance(job, Mapping):
            raise InvalidInputError(f"row {i + 1}", job, f"must be a job object ({where})")
        for key in job:
            if key not in COLUMNS and key != "meta":
                raise InvalidInputError(f"row {i + 1}.{key}", clip(job[key]), f"unknown column ({where}; columns: "
                                        f"{', '.join(COLUMNS)}, meta)")
        rows.append((i + 1, where, dict(job), False))
    return rows


def _trace_from_rows(rows: list[_Row], catalog: Catalog | None) -> Trace:
    N = len(rows)
    ids: list[str] = []
    seen: dict[str, int] = {}
    models: list[str] = []
    tenants: list[str] = []
    metas: list[dict[str, str]] = []
    arrival, iterations, weight = np.empty(N), np.empty(N), np.ones(N)
    scale = np.empty(N)
    gpus = np.empty(N)
    censored = np.zeros(N, dtype=bool)
    known = None if catalog is None else set(catalog.models)
    for i, (r, where, row, text) in enumerate(rows):
        def bad(col: str, value: object, reason: str) -> InvalidInputError:
            return InvalidInputError(f"row {r}.{col}", value, f"{reason} ({where})")  # noqa: B023

        for col in _REQUIRED:
            if col not in row or row[col] is None or (text and row[col] == ""):
                raise bad(col, row.get(col), "missing value")
        jid = row["id"]
        if not text and isinstance(jid, int) and not isinstance(jid, bool):
            jid = str(jid)
        if not (isinstance(jid, str) and jid):
            raise bad("id", jid, "must be a non-empty string")
        if jid in seen:
            raise bad("id", jid, f"duplicate id (first in row {seen[jid]})")
        seen[jid] = r
        ids.append(jid)
        arrival[i] = _number(row["arrival"], text, lambda x: 0 <= x <= MAX_ARRIVAL,
                             f"must be a finite number >= 0 (at most {MAX_ARRIVAL:g} s)", bad, "arrival")
        model = row["model"]
        if not (isinstance(model, str) and model):
            raise bad("model", model, "must be a non-empty string")
        if known is not None and model not in known:
            raise bad("model", model, "unknown model (not in the catalog)")
        models.append(model)
        s = _number(row["scale"], text, lambda x: (1 <= x <= MAX_GPUS and float(x).is_integer()) or 0 < x < 1,
                    f"must be a positive integer <= {MAX_GPUS} (2**31) or a fraction 0 < s < 1 (a share of one GPU)",
                    bad, "scale")
        scale[i] = s
        iterations[i] = _number(row["iterations"], text, lambda x: 0 < x <= MAX_ITERATIONS,
                                f"must be a finite number > 0 (at most {MAX_ITERATIONS:g})", bad, "iterations")
        g = row.get("gpus")
        gpus[i] = s if g is None or (text and g == "") else _number(
            g, text, lambda x: 0 < x <= MAX_GPUS, "must be a finite number > 0 (GPUs asked for)", bad, "gpus")
        c = row.get("censored")
        if c is not None:
            if text:
                if c.lower() not in (*_TRUE, *_FALSE):
                    raise bad("censored", c, f"must be one of {', '.join(repr(v) for v in (*_TRUE, *_FALSE[1:]))}"
                                             " or empty")
                censored[i] = c.lower() in _TRUE
            elif isinstance(c, bool):
                censored[i] = c
            else:
                raise bad("censored", c, "must be true or false")
        meta: dict[str, str] = {}
        if text:
            meta = {k[len(META_PREFIX):]: v for k, v in row.items() if k.startswith(META_PREFIX) and v != ""}
        elif "meta" in row:
            m = row["meta"]
            if not (isinstance(m, Mapping) and all(isinstance(v, str) for v in m.values())):
                raise bad("meta", clip(m), "must be an object of strings")
            meta = {str(k): v for k, v in m.items() if v != ""}
        metas.append(meta)
        w = row.get("weight")
        if w is not None and not (text and w == ""):
            weight[i] = _number(w, text, lambda x: x > 0, "must be a finite number > 0", bad, "weight")
        tenant = row.get("tenant")
        if tenant is None:
            tenant = ""
        if not isinstance(tenant, str):
            raise bad("tenant", tenant, "must be a string")
        tenants.append(tenant)
    return Trace(id=tuple(ids), arrival=arrival, model=tuple(models), scale=scale, iterations=iterations,
                 weight=weight, tenant=tuple(tenants), gpus=gpus, censored=censored, metadata=tuple(metas))


def _number(value: Any, text: bool, ok: Callable[[float], bool], reason: str,
            bad: Callable[[str, object, str], InvalidInputError], col: str) -> float:
    """``value`` as a float (parsed from text for CSV; must be a JSON number otherwise), checked by ``ok``."""
    if text:
        try:
            x = float(value)
        except (ValueError, OverflowError):
            raise bad(col, clip(value), "not a number") from None
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            x = float(value)
        except OverflowError:
            raise bad(col, clip(value), reason) from None
    else:
        raise bad(col, clip(value), "not a number")
    if not (math.isfinite(x) and ok(x)):
        raise bad(col, clip(value), reason)
    return x


# ---------------------------------------------------------------------- writing
def write_trace(trace: Trace, path: str | os.PathLike[str] | IO[str], *, format: str | None = None) -> None:
    """Write a trace as CSV or JSON (by the suffix of ``path``, or ``format="csv"|"json"``).

    CSV omits the ``weight`` column when every weight is 1 and ``tenant`` when every tenant is ``""``.
    Numbers are written exactly (integral values without a decimal point, others with their shortest
    round-trip representation), so :func:`read_trace` gives back an equal trace.

    Examples
    --------
    >>> import io
    >>> t = Trace(id=["a"], arrival=[0.0], model=["A3C"], scale=[1], iterations=[120.5])
    >>> buf = io.StringIO()
    >>> write_trace(t, buf, format="csv")
    >>> buf.getvalue().splitlines()
    ['id,arrival,model,scale,iterations', 'a,0,A3C,1,120.5']
    """
    fmt = format
    if fmt is None:
        if not isinstance(path, (str, os.PathLike)):
            raise InvalidInputError("format", None, "required when writing to a file object")
        fmt = Path(path).suffix.lower().lstrip(".")
    text = format_trace(trace, fmt)
    if isinstance(path, (str, os.PathLike)):
        Path(path).write_text(text, encoding="utf-8")
    else:
        path.write(text)


def format_trace(trace: Trace, fmt: str, *, meta: Mapping[str, Any] | None = None) -> str:
    """The text :func:`write_trace` writes: ``fmt`` is ``"csv"`` or ``"json"``.

    ``meta`` (JSON only) is written as the document's top-level ``"meta"`` object, which readers ignore: an
    importer records there where the trace came from and how it was converted.

    Examples
    --------
    >>> t = Trace(id=["a"], arrival=[0.0], model=["A3C"], scale=[1], iterations=[7], gpus=[0.5],
    ...           metadata=[{"queue": "q1"}])
    >>> format_trace(t, "csv").splitlines()
    ['id,arrival,model,scale,iterations,gpus,meta.queue', 'a,0,A3C,1,7,0.5,q1']
    """
    if fmt not in ("csv", "json"):
        raise InvalidInputError("format", fmt, "must be 'csv' or 'json' (or use a .csv / .json suffix)")
    if meta is not None and fmt != "json":
        raise InvalidInputError("meta", "...", "only a JSON trace has a place for it")
    return _to_csv(trace) if fmt == "csv" else _to_json(trace, meta)


def _to_csv(trace: Trace) -> str:
    cols = list(_REQUIRED)
    if np.any(trace.weight != 1.0):
        cols.append("weight")
    if any(trace.tenant):
        cols.append("tenant")
    if np.any(trace.gpus != trace.scale):
        cols.append("gpus")
    if trace.censored.any():
        cols.append("censored")
    keys = list(dict.fromkeys(k for m in trace.metadata for k in m))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(cols + [META_PREFIX + k for k in keys])
    for i, rec in enumerate(trace.to_records()):
        row = [rec.get(c, "") for c in cols]
        if "gpus" in cols:
            row[cols.index("gpus")] = _plain_number(trace.gpus[i])
        if "censored" in cols:
            row[cols.index("censored")] = "true" if trace.censored[i] else "false"
        writer.writerow(row + [trace.metadata[i].get(k, "") for k in keys])
    return buf.getvalue()


def _to_json(trace: Trace, meta: Mapping[str, Any] | None = None) -> str:
    jobs = [json.dumps(rec, ensure_ascii=False) for rec in trace.to_records()]
    head = "" if meta is None else '"meta": ' + json.dumps(meta, ensure_ascii=False) + ",\n "
    if not jobs:
        return "{" + head + '"jobs": []}\n'
    return "{" + head + '"jobs": [\n  ' + ",\n  ".join(jobs) + "\n]}\n"


# ---------------------------------------------------------------------- generating
def generate_trace(num_jobs: int | None = None, *, jobs_per_hour: float, seed: int,
                   catalog: Catalog | None = None, duration: float | None = None,
                   models: Sequence[str] | None = None, multi_gpu: bool = True, weighted_fraction: float = 0.0,
                   heavy_weight: float = 5.0, durations: str = "gavel", tenants: int = 0,
                   gpu_types: Sequence[str] = ("K80", "P100", "V100")) -> Trace:
    """Generate a synthetic trace with Gavel's recipe (see the module docstring and ``docs/traces.md``).

    Parameters
    ----------
    num_jobs : int, optional
        Number of jobs. At least one of ``num_jobs`` and ``duration`` is required; with both, at most
        ``num_jobs`` jobs that arrive before ``duration``.
    jobs_per_hour : float
        Poisson arrival rate, from 1e-3 to 1e9 jobs per hour. The first job arrives at t = 0.
    seed : int
        Seed of :func:`numpy.random.default_rng`; equal seeds give equal traces.
    catalog : Catalog, optional
        Default: ``load_catalog("default")``.
    duration : float, optional
        Generate the jobs arriving in ``[0, duration)`` seconds.
    models : sequence of str, optional
        Models to draw from (default: every catalog model that can run on ``gpu_types``; with the default
        GPU types these are Gavel's 26 workloads).
    multi_gpu : bool
        Draw scales 1/2/4/8 with probability 70/10/15/5 % (renormalised over the scales that have a model);
        False: every job has scale 1.
    weighted_fraction : float
        Probability in [0, 1] that a job has weight ``heavy_weight`` (others have 1). Spec: 0.2.
    heavy_weight : float
        Weight of heavy jobs (> 0). Spec: 5.
    durations : {"gavel", "philly"}
        ``"gavel"``: ``60 * 10**U(1.5, 3)`` s with probability 0.8 else ``60 * 10**U(3, 4)`` s;
        ``"philly"``: drawn uniformly from the 33,192 job durations of the Philly trace.
    tenants : int
        If > 0, each job gets a tenant ``"t0"`` ... ``"t{tenants-1}"`` uniformly at random.
    gpu_types : sequence of str
        GPU types of the target cluster: models must run on one of them, and work is computed on the
        fastest of them for the job.

    Returns
    -------
    Trace
        Jobs with ids ``"0"``, ``"1"``, ... in arrival order.

    Examples
    --------
    >>> t = generate_trace(5, jobs_per_hour=10, seed=1)
    >>> len(t), float(t.arrival[0]), t == generate_trace(5, jobs_per_hour=10, seed=1)
    (5, 0.0, True)
    """
    if num_jobs is None and duration is None:
        raise InvalidInputError("num_jobs", None, "give num_jobs, duration or both")
    if num_jobs is not None and not (isinstance(num_jobs, (int, np.integer)) and not isinstance(num_jobs, bool)
                                     and num_jobs >= 0):
        raise InvalidInputError("num_jobs", num_jobs, "must be a non-negative integer")
    if duration is not None and not (is_real(duration) and duration > 0):
        raise InvalidInputError("duration", duration, "must be a finite number > 0 (seconds)")
    if not (is_real(jobs_per_hour) and MIN_JOBS_PER_HOUR <= jobs_per_hour <= MAX_JOBS_PER_HOUR):
        raise InvalidInputError("jobs_per_hour", jobs_per_hour,
                                f"must be a number from {MIN_JOBS_PER_HOUR:g} to {MAX_JOBS_PER_HOUR:g}")
    if not (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0):
        raise InvalidInputError("seed", seed, "must be a non-negative integer")
    if not (is_real(weighted_fraction) and 0 <= weighted_fraction <= 1):
        raise InvalidInputError("weighted_fraction", weighted_fraction, "must be in [0, 1]")
    if not (is_real(heavy_weight) and heavy_weight > 0):
        raise InvalidInputError("heavy_weight", heavy_weight, "must be a finite number > 0")
    if durations not in ("gavel", "philly"):
        raise InvalidInputError("durations", durations, "must be 'gavel' or 'philly'")
    if not (isinstance(tenants, (int, np.integer)) and not isinstance(tenants, bool) and tenants >= 0):
        raise InvalidInputError("tenants", tenants, "must be a non-negative integer")
    cat = load_catalog() if catalog is None else catalog
    if isinstance(gpu_types, str) or not len(gpu_types):
        raise InvalidInputError("gpu_types", gpu_types, "must be a non-empty sequence of GPU type names")
    g = np.array([cat.gpu_index(x) for x in gpu_types], dtype=np.int64)
    allowed = _allowed_models(cat, models)

    scales = list(SCALE_PROBABILITIES) if multi_gpu else [1]
    pools = {s: [cat.model_index(m) for m in cat.runnable_models(s, gpu_types) if m in allowed] for s in scales}
    scales = [s for s in scales if pools[s]]
    if not scales:
        raise InvalidInputError("models", sorted(allowed), f"none can run on {tuple(gpu_types)}")

    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(int(seed)).spawn(6)]
    r_arrival, r_duration, r_scale, r_model, r_weight, r_tenant = streams
    arrival = _arrivals(r_arrival, 3600.0 / float(jobs_per_hour), num_jobs, duration)
    n = len(arrival)

    if durations == "gavel":
        u = r_duration.random((n, 2))
        long = u[:, 0] >= 0.8
        dur = 60.0 * 10.0 ** np.where(long, 3.0 + u[:, 1], 1.5 + 1.5 * u[:, 1])
    else:
        table = _philly_durations()
        dur = table[r_duration.integers(0, len(table), n)]

    probs = np.array([SCALE_PROBABILITIES[s] for s in scales])
    cum = np.cumsum(probs / probs.sum())
    cum[-1] = 1.0
    scale_idx = np.searchsorted(cum, r_scale.random(n), side="right") if len(scales) > 1 else np.zeros(n, int)
    scale = np.array(scales, dtype=np.int64)[scale_idx]
    u_model = r_model.random(n)
    model = np.empty(n, np.int64)
    for k, s in enumerate(scales):
        sel = scale_idx == k
        pool = np.array(pools[s], dtype=np.int64)
        model[sel] = pool[np.minimum((u_model[sel] * len(pool)).astype(np.int64), len(pool) - 1)]

    weight = np.where(r_weight.random(n) < weighted_fraction, float(heavy_weight), 1.0)
    tenant = ([f"t{k}" for k in r_tenant.integers(0, tenants, n).tolist()] if tenants else [""] * n)

    fastest = cat.throughput_matrix(model, scale, [cat.gpu_types[i] for i in g]).max(axis=1)
    iterations = np.maximum(1.0, np.rint(dur * fastest))
    return Trace(id=tuple(str(i) for i in range(n)), arrival=arrival, model=tuple(cat.models[m] for m in model),
                 scale=scale, iterations=iterations, weight=weight, tenant=tuple(tenant))


def _allowed_models(cat: Catalog, models: Iterable[str] | None) -> set[str]:
    if models is None:
        return set(cat.models)
    if isinstance(models, str):
        raise InvalidInputError("models", models, "must be a sequence of model names")
    names = list(models)
    for i, m in enumerate(names):
        if not isinstance(m, str) or m not in cat.models:
            raise InvalidInputError(f"models[{i}]", m, "unknown model (not in the catalog)")
    if not names:
        raise InvalidInputError("models", names, "must not be empty")
    return set(names)


def _arrivals(rng: np.random.Generator, mean_gap: float, num_jobs: int | None,
              duration: float | None) -> np.ndarray:
    """Poisson arrivals: 0, then cumulative exponential gaps; drawn in chunks so any prefix is stable."""
    if num_jobs is not None:
        t = np.concatenate([[0.0], np.cumsum(rng.exponential(mean_gap, max(num_jobs - 1, 0)))])[:num_jobs]
        return t if duration is None else t[t < duration]
    assert duration is not None
    gaps = np.zeros(0)
    chunk = int(duration / mean_gap) + 16
    while gaps.sum() < duration:
        gaps = np.concatenate([gaps, rng.exponential(mean_gap, chunk)])
    t = np.concatenate([[0.0], np.cumsum(gaps)])
    return t[t < duration]


@lru_cache(maxsize=1)
def _philly_durations() -> np.ndarray:
    data = np.loadtxt(PHILLY_FILE, delimiter=",", skiprows=1, ndmin=2)
    out = data[:, 0].copy()
    out.setflags(write=False)
    return out
