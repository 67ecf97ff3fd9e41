"""Import real cluster traces: built-in formats (Philly, Alibaba PAI 2020, Alibaba GPU 2023) and any CSV.

A real trace records when each job was submitted, how many GPUs it asked for, how long it ran and sometimes
the GPU type, user and queue, but no model and no iteration count. :func:`import_trace` turns it into a
:class:`~fairshare.sim.traces.Trace` by one deterministic, documented rule (``docs/traces.md``, "Importing a
real trace"):

1. **Jobs.** One per job of the source. Left out, and counted in :attr:`ImportResult.skipped` by reason:
   jobs without a GPU, jobs that never started, jobs whose end is before their start, jobs asking for more
   GPUs than any catalog workload has data for, and (``fractional="drop"``) requests that are not a whole
   number of GPUs.
2. **Arrival** = submit time minus the earliest submit time of the kept jobs (the first job arrives at 0).
   ``window=(FROM, TO)`` (hours) first keeps only the jobs submitted in ``[FROM, TO)`` hours after the
   source's first submission: the earliest submit time of any of its jobs, kept or left out (only a job
   with no submit time has no say). The others are counted as submitted before or after the window,
   whatever else would have left them out. Jobs submitted before the window are left out even if they were
   still running in it: the replay starts on an empty cluster, unless ``carry_in``: then those not done at
   the window's start (waiting or running: first start + run time after it; the first start is the submit
   time where the source gives none) are kept too, arriving at the window's start with the run time they
   had left, which sets their work (rule 6); arrivals are then counted from the window's start. A job so
   carried in can still be left out by the other rules, and is then counted under that reason. The window
   changes which jobs are kept, not their model or throughput (the cluster of step 9 is the whole
   source's).
3. **GPUs.** ``gpus`` keeps the request exactly as the source gives it (0.5 for half a GPU). A request of
   part of one GPU (``0 < gpus < 1``) becomes a fractional ``scale`` equal to the request
   (``fractional="share"``, the default: the job holds that share of one GPU); any other request is scheduled
   on whole GPUs, ``scale`` being the smallest catalog scale (1, 2, 4, 8 for Gavel's types) that holds
   ``ceil(gpus)``. ``fractional="whole"`` schedules part-of-a-GPU requests on one whole GPU too (the rule
   before fractional scales existed), ``"drop"`` leaves every non-integral request out.
4. **GPU type.** The source's name is mapped to a catalog name (:data:`GPU_ALIASES`, then ``gpu_type_map``;
   the first alias the catalog has wins). Types without a catalog name are reported in
   :attr:`ImportResult.unmapped`.
5. **Model.** If the source names a model of the catalog (``model`` column), that one. Otherwise the job gets
   ``pool[h(key) mod len(pool)]``: ``pool`` is the catalog's models with data at the job's scale on the
   target GPU types (``models`` narrows it; if the job's GPU type is known and some of the pool runs there,
   only those), in catalog order; ``key`` is the source's model/class name when there is one (so jobs of one
   class get one model) and the job id otherwise; ``h`` is the first 16 hex digits of SHA-256 of the key
   (independent of row order, other jobs, Python's hash seed and the platform).
6. **Work** = ``max(1, round(run time x T))``, ``T`` the model's alone throughput at that scale on the GPU
   type the job ran on, or on the fastest target type when that type is unknown or has no data. A fractional
   job's ``T`` is its share times the model's throughput on one whole GPU (the simulator's rule for shares;
   derived, not measured), and its model is chosen among those with data at scale 1.
7. **Censored.** Jobs still running when the source ends (per format, below) are marked ``censored``: their
   run time is counted up to the end of the source, so their work is a lower bound, and metrics leave them out
   of JCT.
8. **Metadata.** The source's other fields (user, queue, status, ...) are kept in ``metadata``; the user
   is also the job's ``tenant``.
9. **Cluster.** :attr:`ImportResult.suggested_cluster` counts the GPUs of each type: from the machine list
   when one is given, else the peak number of GPUs of that type in use at once in the whole source (jobs
   that ran; a window does not change it). Its types are the default target types of steps 5 and 6.

Source formats (:data:`FORMATS`): ``philly`` (Microsoft's ``cluster_job_log`` JSON, and optionally its
``cluster_machine_list`` CSV), ``pai2020`` (Alibaba ``cluster-trace-gpu-v2020``: ``pai_job_table`` and
``pai_task_table`` CSV, with or without their header line, and optionally ``pai_machine_spec``),
``openb2023`` (Alibaba ``cluster-trace-gpu-v2023``: ``openb_pod_list_*.csv`` and optionally
``openb_node_list_*.csv``) and ``csv`` (any CSV with a header, mapped column by column with
:class:`CsvColumns`).
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from fairshare.documents import read_json
from fairshare.errors import InvalidInputError
from fairshare.problem import MAX_GPUS
from fairshare.sim.catalog import Catalog, load_catalog
from fairshare.sim.traces import MAX_ARRIVAL, MAX_ITERATIONS, Trace

__all__ = ["FORMATS", "GPU_ALIASES", "TIME_UNITS", "CsvColumns", "ImportResult", "assign_model", "import_trace"]

FORMATS = ("philly", "pai2020", "openb2023", "csv")
"""Source formats :func:`import_trace` reads."""

TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "min": 60.0, "h": 3600.0}
"""Units of numeric times and durations in a generic CSV (seconds per unit)."""

GPU_UNITS = {"gpus": 1.0, "percent": 0.01, "milli": 0.001}
"""Units of a generic CSV's GPU request (GPUs per unit): whole GPUs, percent (PAI: 50 = half a GPU), milli."""

GPU_ALIASES: dict[str, tuple[str, ...]] = {
    "V100": ("V100",), "V100M16": ("V100-16GB", "V100"), "V100M32": ("V100-32GB",), "V100-16GB": ("V100-16GB", "V100"),
    "V100-32GB": ("V100-32GB",), "P100": ("P100",), "K80": ("K80",), "T4": ("T4",), "A10": ("A10",), "L4": ("L4",),
    "A100": ("A100-80GB",), "A100-40GB": ("A100-40GB",), "A100-80GB": ("A100-80GB",), "H100": ("H100",),
    "H200": ("H200",),
}
"""Source GPU type names and the catalog names they stand for, in order of preference (the first one the
catalog has is used). Alibaba's ``V100M16``/``V100M32`` are the 16 and 32 GB V100s; PAI's ``V100`` is the
16 GB one. Alibaba's ``MISC`` (older GPUs: K40m, K80, M60) and ``G1``-``G3`` (undisclosed) have no catalog
name: name them with ``gpu_type_map``."""

_HEADERS = {
    "pai_job_table": ("job_name", "inst_id", "user", "status", "start_time", "end_time"),
    "pai_task_table": ("job_name", "task_name", "inst_num", "status", "start_time", "end_time", "plan_cpu",
                       "plan_mem", "plan_gpu", "gpu_type"),
    "pai_machine_spec": ("machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu"),
}


@dataclass(frozen=True, slots=True)
class CsvColumns:
    """Column mapping of the generic ``csv`` format (``fairshare trace import --format csv``).

    Parameters
    ----------
    arrival : str
        Submit time: a number in ``time_unit`` or an ISO 8601 date and time (read as UTC).
    gpus : str
        GPUs asked for, in ``gpu_unit``.
    duration : str, optional
        Run time, a number in ``time_unit``. Give ``duration`` or ``end``.
    end : str, optional
        End time (as ``arrival``); run time = end - ``start`` (or end - arrival without ``start``).
    start : str, optional
        Start time (as ``arrival``); a row whose start is empty never started and is left out.
    gpu_type, user, id, model, status : str, optional
        GPU type it ran on; user (the tenant); job id (default: the data row number); model or class name;
        status.
    running : tuple of str
        Values of ``status`` that mean "still running at the end of the trace" (censored).
    censored : str, optional
        A column that is true (``1``, ``true``, ``yes``) for censored jobs.
    time_unit : str
        Unit of numeric times and durations (:data:`TIME_UNITS`), default seconds.
    gpu_unit : str
        Unit of ``gpus`` (:data:`GPU_UNITS`), default whole GPUs.
    """

    arrival: str
    gpus: str
    duration: str | None = None
    end: str | None = None
    start: str | None = None
    gpu_type: str | None = None
    user: str | None = None
    id: str | None = None
    model: str | None = None
    status: str | None = None
    running: tuple[str, ...] = ("Running",)
    censored: str | None = None
    time_unit: str = "s"
    gpu_unit: str = "gpus"

    def __post_init__(self) -> None:
        """Check the units and that the run time is given once."""
        if self.time_unit not in TIME_UNITS:
            raise InvalidInputError("time_unit", self.time_unit, f"must be one of {', '.join(TIME_UNITS)}")
        if self.gpu_unit not in GPU_UNITS:
            raise InvalidInputError("gpu_unit", self.gpu_unit, f"must be one of {', '.join(GPU_UNITS)}")
        if (self.duration is None) == (self.end is None):
            raise InvalidInputError("duration", self.duration, "give the run time column (duration) or the end "
                                    "time column (end), exactly one of them")
        if self.start is not None and self.end is None:
            raise InvalidInputError("start", self.start, "only used with end (run time = end - start)")


@dataclass(frozen=True, slots=True)
class _Raw:
    """Jobs as read from a source, before the rule: one entry per job, times in seconds."""

    id: list[str] = field(default_factory=list)
    submit: list[float] = field(default_factory=list)
    start: list[float] = field(default_factory=list)        # first start (the submit time if unknown)
    run: list[float] = field(default_factory=list)          # nan: never started
    censored: list[bool] = field(default_factory=list)
    gpus: list[float] = field(default_factory=list)
    gpu_type: list[str] = field(default_factory=list)       # source name, "" unknown
    user: list[str] = field(default_factory=list)
    model_key: list[str] = field(default_factory=list)      # source model/class name, "" none
    meta: list[dict[str, str]] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)   # left out where no submit time is known
    skipped_at: list[tuple[str, float]] = field(default_factory=list)  # (reason, submit time) of the others
    inventory: dict[str, int] = field(default_factory=dict)  # source GPU type -> GPUs (machine list)

    def skip(self, reason: str, submit: float) -> None:
        """Leave out a job submitted at ``submit`` (counted by :meth:`in_window`)."""
        self.skipped_at.append((reason, submit))

    def submit_times(self) -> np.ndarray:
        """Submit times of every job with one, added or left out (the window's clock starts at their minimum)."""
        return np.concatenate([np.array(self.submit, float), np.array([t for _, t in self.skipped_at], float)])

    def in_window(self, window: tuple[float | None, float | None] | None, carry_in: bool = False
                  ) -> tuple[np.ndarray, np.ndarray, float | None, Counter[str]]:
        """The added jobs to keep, those carried in, the window's start and every job left out, by reason.

        ``window`` is in hours after the source's first submission (of any job, added or left out). Jobs
        submitted outside it count as before or after the window, whatever else would have left them out,
        except, with ``carry_in``, the added jobs submitted before it that were not done at its start
        (first start + run time after it): those are kept and marked in the second mask. The window's start is
        returned in the source's seconds (``None`` without a start).
        """
        submit = np.array(self.submit, float)
        when = np.array([t for _, t in self.skipped_at], float)
        keep = np.ones(len(submit), dtype=bool)
        carried = np.zeros(len(submit), dtype=bool)
        kept_skips = np.ones(len(when), dtype=bool)
        out: Counter[str] = Counter(self.skipped)
        lo: float | None = None
        if window is not None and len(submit) + len(when):
            origin = float(self.submit_times().min())
            lo, hi = (None if b is None else origin + 3600.0 * b for b in window)
            if carry_in and lo is not None:
                end = np.array(self.start, float) + np.array(self.run, float)
                with np.errstate(invalid="ignore"):
                    carried = (submit < lo) & np.isfinite(end) & (end > lo) & (np.array(self.run, float) >= 0)
            for times, mask, also in ((when, kept_skips, None), (submit, keep, carried)):
                if lo is not None:
                    before = times < lo if also is None else (times < lo) & ~also
                    out["submitted before the window"] += int(before.sum())
                    mask &= ~before
                if hi is not None:
                    out["submitted after the window"] += int((mask & (times >= hi)).sum())
                    mask &= times < hi
        for (reason, _), inside in zip(self.skipped_at, kept_skips, strict=True):
            if inside:
                out[reason] += 1
        return keep, carried, lo, +out

    def add(self, jid: str, submit: float, run: float, censored: bool, gpus: float, gpu_type: str, user: str,
            model_key: str, meta: dict[str, str], start: float | None = None) -> None:
        self.id.append(jid)
        self.submit.append(submit)
        self.start.append(submit if start is None else start)
        self.run.append(run)
        self.censored.append(censored)
        self.gpus.append(gpus)
        self.gpu_type.append(gpu_type)
        self.user.append(user)
        self.model_key.append(model_key)
        self.meta.append({k: v for k, v in meta.items() if v not in ("", None)})


@dataclass(frozen=True)
class ImportResult:
    """What :func:`import_trace` produced.

    Attributes
    ----------
    trace : Trace
        The jobs, in arrival order (``censored``, ``gpus`` and ``metadata`` filled in).
    skipped : dict of str to int
        Source jobs left out, by reason.
    suggested_cluster : dict of str to int
        GPUs per catalog type: from the machine list if given, else the peak in use at once.
    unmapped : dict of str to int
        Source GPU types with no catalog name, with their GPUs counted as above.
    source : dict
        Format, files (name, bytes, sha256) and options: written as the trace's JSON ``meta``.
    """

    trace: Trace
    skipped: dict[str, int]
    suggested_cluster: dict[str, int]
    unmapped: dict[str, int]
    source: dict[str, Any]

    @property
    def cluster_spec(self) -> str:
        """``suggested_cluster`` as a ``--cluster`` value (``""`` if nothing is known)."""
        return ",".join(f"{g}={n}" for g, n in self.suggested_cluster.items())

    def summary(self) -> list[str]:
        """Lines for a person: counts, what was skipped, the arrivals' span (and window), the suggested cluster."""
        t = self.trace
        odd = t.gpus != np.floor(t.gpus)
        shares = odd & (t.scale < 1)
        part = sorted({int(s) for s in t.scale[odd & ~shares].tolist()})
        jobs = f"{len(t)} job{'s' if len(t) != 1 else ''}"
        lines = [f"imported {jobs} ({int(t.censored.sum())} censored: still running at the end of the "
                 f"source; {int(odd.sum())} asked for a fraction of GPUs: {int(shares.sum())} hold that share of "
                 f"one GPU, {int((odd & ~shares).sum())} scheduled on whole GPUs: scale "
                 f"{', '.join(map(str, part)) or '-'})"]
        if self.skipped:
            lines.append("skipped: " + ", ".join(f"{n} {why}" for why, n in self.skipped.items()))
        window = self.source.get("window")
        span = float(t.arrival.max()) / 3600.0
        where = (f"submitted in the window {_hours(window[0])}:{_hours(window[1])} h of the source"
                 if window else "a window keeps a part: --window FROM:TO")
        if self.source.get("carry_in"):
            where += f"; {self.source['carried_in']} carried in, not done at its start"
        lines.append(f"arrivals: 0 to {span:,.1f} h ({where})")
        if self.suggested_cluster:
            lines.append(f"suggested: --cluster {self.cluster_spec}")
        if self.unmapped:
            kinds = ", ".join(f"{k} ({n} GPUs)" for k, n in self.unmapped.items())
            lines.append(f"GPU types without a catalog name: {kinds}; name them with --gpu-type-map KIND=TYPE "
                         "(e.g. a type of the catalog 'modern')")
        return lines


# ------------------------------------------------------------------------------------------------ helpers
def _hours(value: float | None) -> str:
    return "" if value is None else f"{value:.12g}"


def _check_window(window: Sequence[float | None] | None) -> tuple[float | None, float | None] | None:
    if window is None:
        return None
    if isinstance(window, (str, bytes)) or len(window) != 2:
        raise InvalidInputError("window", window, "expected (FROM, TO) in hours, either may be None")
    bounds: list[float | None] = []
    for value in window:
        if value is None:
            bounds.append(None)
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise InvalidInputError("window", window, "bounds must be numbers of hours or None")
        if not math.isfinite(value) or value < 0:
            raise InvalidInputError("window", window, "bounds must be finite and >= 0 hours")
        bounds.append(float(value))
    lo, hi = bounds
    if lo is not None and hi is not None and hi <= lo:
        raise InvalidInputError("window", window, "TO must be after FROM")
    if hi is not None and hi <= 0:
        raise InvalidInputError("window", window, "TO must be > 0 hours (the first submission is at 0)")
    return (lo, hi) if (lo, hi) != (None, None) else None


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_bytes(path: str | os.PathLike[str], what: str) -> bytes:
    p = Path(path)
    if p.is_dir():
        raise InvalidInputError(what, str(path), "is a folder, not a file")
    try:
        return p.read_bytes()
    except OSError as exc:
        raise InvalidInputError(what, str(path), f"cannot be read ({exc.strerror or exc})") from None


def _text(data: bytes, path: str) -> str:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInputError("trace file", path,
                                f"not a UTF-8 text file ({exc.reason} at byte {exc.start})") from None
    if "\0" in text:
        raise InvalidInputError("trace file", path, "not a text file (it holds NUL characters)")
    return text


def _csv_rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in row] for row in csv.reader(io.StringIO(text)) if row and any(c.strip() for c in row)]


def _time(value: str, unit: float, where: str) -> float:
    """A time cell in seconds: a number in ``unit``, or an ISO 8601 date and time (naive: UTC)."""
    v = value.strip()
    try:
        x = float(v) * unit
    except ValueError:
        try:
            dt = datetime.fromisoformat(v)
        except ValueError:
            raise InvalidInputError(where, v, "neither a number nor an ISO 8601 date and time") from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        x = dt.timestamp()
    if not math.isfinite(x):
        raise InvalidInputError(where, v, "must be finite")
    return x


def _num(value: str, where: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise InvalidInputError(where, value, "not a number") from None
    if not math.isfinite(x):
        raise InvalidInputError(where, value, "must be finite")
    return x


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


# ------------------------------------------------------------------------------------------------ formats
def _philly(files: Sequence[tuple[str, bytes]]) -> _Raw:
    raw = _Raw()
    jobs_doc: Any = None
    for path, data in files:
        text = _text(data, path)
        if text.lstrip()[:1] == "[":
            if jobs_doc is not None:
                raise InvalidInputError("trace file", path, "a second job log: give one cluster_job_log")
            jobs_doc = read_json(text, what="cluster_job_log")
        else:                                                    # cluster_machine_list: machineId,GPUs,GPU mem
            for k, row in enumerate(_csv_rows(text)):
                if k == 0 and not row[1].replace(".", "").isdigit():
                    continue
                if len(row) < 3:
                    raise InvalidInputError(f"{Path(path).name}: row {k + 1}", ",".join(row),
                                            "expected machineId,number of GPUs,single GPU mem")
                kind = f"philly-{row[2].replace(' ', '')}"
                raw.inventory[kind] = raw.inventory.get(kind, 0) + int(_num(row[1], f"{path}: row {k + 1}"))
    if not isinstance(jobs_doc, list):
        raise InvalidInputError("trace file", [p for p, _ in files], "no cluster_job_log (a JSON list of jobs)")
    stamps: list[float] = []
    parsed = []
    for i, job in enumerate(jobs_doc):
        where = f"cluster_job_log[{i}]"
        if not isinstance(job, dict):
            raise InvalidInputError(where, type(job).__name__, "must be a job object")
        submit = job.get("submitted_time")
        if not isinstance(submit, str):
            raise InvalidInputError(f"{where}.submitted_time", submit, "must be a date and time")
        t_sub = _time(submit, 1.0, f"{where}.submitted_time")
        stamps.append(t_sub)
        attempts = job.get("attempts") or []
        if not isinstance(attempts, list):
            raise InvalidInputError(f"{where}.attempts", type(attempts).__name__, "must be a list")
        spans: list[tuple[float, float | None]] = []
        gpus = 0
        for k, att in enumerate(attempts):
            if not isinstance(att, dict):
                raise InvalidInputError(f"{where}.attempts[{k}]", att, "must be an object")
            st, en = att.get("start_time"), att.get("end_time")
            if st is None:
                continue
            t0 = _time(str(st), 1.0, f"{where}.attempts[{k}].start_time")
            t1 = None if en is None else _time(str(en), 1.0, f"{where}.attempts[{k}].end_time")
            stamps += [t0] + ([t1] if t1 is not None else [])
            spans.append((t0, t1))
            detail = att.get("detail") or []
            n = sum(len(d.get("gpus") or []) for d in detail if isinstance(d, dict))
            gpus = n or gpus
        parsed.append((i, job, t_sub, spans, gpus))
    end_of_trace = max(stamps) if stamps else 0.0
    for i, job, t_sub, spans, gpus in parsed:
        jid = str(job.get("jobid") or f"job{i}")
        if not spans:
            raw.skip("never started", t_sub)
            continue
        censored = spans[-1][1] is None                      # the last attempt has no end: still running
        run = sum(((e if e is not None else end_of_trace) - s) for s, e in spans)
        meta = {"vc": str(job.get("vc", "")), "status": str(job.get("status", "")), "attempts": str(len(spans))}
        raw.add(jid, t_sub, run, censored, float(gpus), "", str(job.get("user", "")), "", meta,
                start=min(t for t, _ in spans))
    return raw


def _pai2020(files: Sequence[tuple[str, bytes]]) -> _Raw:
    tables: dict[str, list[list[str]]] = {}
    for path, data in files:
        rows = _csv_rows(_text(data, path))
        if not rows:
            continue
        width = len(rows[0])
        name = next((n for n, h in _HEADERS.items() if len(h) == width), None)
        if name is None:
            raise InvalidInputError("trace file", path, f"{width} columns: not a pai_job_table (6), pai_task_table "
                                    "(10) or pai_machine_spec (5)")
        if name in tables:
            raise InvalidInputError("trace file", path, f"a second {name}")
        if tuple(rows[0]) == _HEADERS[name]:
            rows = rows[1:]
        bad = next((k for k, r in enumerate(rows) if len(r) != width), None)
        if bad is not None:
            raise InvalidInputError(f"{Path(path).name}: row {bad + 1}", ",".join(rows[bad]),
                                    f"expected {width} fields")
        tables[name] = rows
    if "pai_job_table" not in tables or "pai_task_table" not in tables:
        raise InvalidInputError("trace file", [p for p, _ in files], "pai2020 needs pai_job_table and pai_task_table")
    raw = _Raw()
    for r in tables.get("pai_machine_spec", []):
        cap = r[4]
        if cap:
            raw.inventory[r[1]] = raw.inventory.get(r[1], 0) + int(_num(cap, "pai_machine_spec.cap_gpu"))
    tasks: dict[str, list[list[str]]] = {}
    stamps: list[float] = []
    for k, r in enumerate(tables["pai_task_table"]):
        tasks.setdefault(r[0], []).append(r)
        for c in (4, 5):
            if r[c]:
                stamps.append(_num(r[c], f"pai_task_table row {k + 1}"))
    for k, r in enumerate(tables["pai_job_table"]):
        for c in (4, 5):
            if r[c]:
                stamps.append(_num(r[c], f"pai_job_table row {k + 1}"))
    end_of_trace = max(stamps) if stamps else 0.0
    for k, (name, inst, user, status, submit, end) in enumerate(tables["pai_job_table"]):
        where = f"pai_job_table row {k + 1}"
        if not submit:
            raw.skipped["no submit time"] += 1
            continue
        gpus, starts, ends = 0.0, [], []
        by_type: dict[str, float] = {}
        for t in tasks.get(name, []):
            n = _num(t[2], f"{where}: task inst_num") if t[2] else 1.0
            g = _num(t[8], f"{where}: task plan_gpu") / 100.0 if t[8] else 0.0
            gpus += n * g
            if n * g > 0:
                by_type[t[9] or ""] = by_type.get(t[9] or "", 0.0) + n * g
            if t[4]:
                starts.append(float(t[4]))
            if t[5]:
                ends.append(float(t[5]))
        t_sub = _num(submit, f"{where}.start_time")
        if gpus <= 0:
            raw.skip("no GPU", t_sub)
            continue
        if not starts:
            raw.skip("never started", t_sub)
            continue
        censored = status == "Running" or not (end or ends)
        stop = end_of_trace if censored else max([float(end)] if end else ends)
        gpu_type = max(by_type, key=lambda k: by_type[k]) if by_type else ""
        meta = {"status": status, "inst_id": inst, "tasks": str(len(tasks.get(name, []))),
                "gpu_types": "|".join(sorted(k for k in by_type if k)) if len(by_type) > 1 else ""}
        raw.add(name, t_sub, stop - min(starts), censored, gpus, gpu_type, user, "", meta, start=min(starts))
    return raw


def _openb2023(files: Sequence[tuple[str, bytes]]) -> _Raw:
    raw = _Raw()
    pods: list[dict[str, str]] | None = None
    for path, data in files:
        rows = _csv_rows(_text(data, path))
        if not rows:
            continue
        head = rows[0]
        if {"sn", "gpu", "model"} <= set(head):                      # node list
            for r in rows[1:]:
                d = dict(zip(head, r, strict=False))
                n = int(_num(d.get("gpu") or "0", f"{path}: gpu"))
                if n > 0:
                    raw.inventory[d.get("model") or "?"] = raw.inventory.get(d.get("model") or "?", 0) + n
        elif {"name", "num_gpu", "creation_time"} <= set(head):
            if pods is not None:
                raise InvalidInputError("trace file", path, "a second pod list")
            pods = []
            for k, r in enumerate(rows[1:]):
                if len(r) != len(head):
                    raise InvalidInputError(f"{Path(path).name}: row {k + 1}", ",".join(r),
                                            f"expected {len(head)} fields")
                pods.append(dict(zip(head, r, strict=True)))
        else:
            raise InvalidInputError("trace file", path, "neither an openb pod list nor an openb node list (header)")
    if pods is None:
        raise InvalidInputError("trace file", [p for p, _ in files], "openb2023 needs an openb_pod_list CSV")
    ends = [float(p["deletion_time"]) for p in pods if p.get("deletion_time")]
    end_of_trace = max(ends) if ends else 0.0
    used = {"name", "num_gpu", "gpu_milli", "gpu_spec", "creation_time", "deletion_time", "scheduled_time"}
    for k, p in enumerate(pods):
        where = f"pod row {k + 1}"
        num = _num(p.get("num_gpu") or "0", f"{where}.num_gpu")
        milli = _num(p["gpu_milli"], f"{where}.gpu_milli") if p.get("gpu_milli") else 1000.0
        gpus = num * milli / 1000.0
        t_sub = _num(p["creation_time"], f"{where}.creation_time")
        if gpus <= 0:
            raw.skip("no GPU", t_sub)
            continue
        if not p.get("scheduled_time"):
            raw.skip("never started", t_sub)
            continue
        start = _num(p["scheduled_time"], f"{where}.scheduled_time")
        stop = _num(p["deletion_time"], f"{where}.deletion_time") if p.get("deletion_time") else end_of_trace
        censored = not p.get("deletion_time") or stop >= end_of_trace
        spec = p.get("gpu_spec", "")
        meta = {c: v for c, v in p.items() if c not in used}
        meta["gpu_spec"] = spec
        raw.add(p["name"], t_sub, stop - start, censored, gpus, spec if spec and "|" not in spec else "", "", "",
                meta, start=start)
    return raw


def _generic(files: Sequence[tuple[str, bytes]], cols: CsvColumns) -> _Raw:
    if len(files) != 1:
        raise InvalidInputError("trace file", [p for p, _ in files], "the csv format reads one file")
    path, data = files[0]
    rows = _csv_rows(_text(data, path))
    if not rows:
        raise InvalidInputError("trace file", path, "empty")
    head, body = rows[0], rows[1:]
    names = {"arrival": cols.arrival, "gpus": cols.gpus, "duration": cols.duration, "end": cols.end,
             "start": cols.start, "gpu_type": cols.gpu_type, "user": cols.user, "id": cols.id, "model": cols.model,
             "status": cols.status, "censored": cols.censored}
    for opt, col in names.items():
        if col is not None and col not in head:
            raise InvalidInputError(f"--{opt.replace('_', '-')}", col, f"no such column in {Path(path).name} "
                                    f"(columns: {', '.join(head)})")
    mapped = {c for c in names.values() if c is not None}
    unit, gunit = TIME_UNITS[cols.time_unit], GPU_UNITS[cols.gpu_unit]
    raw = _Raw()
    for k, r in enumerate(body):
        where = f"{Path(path).name}, line {k + 2}"
        if len(r) != len(head):
            raise InvalidInputError(f"row {k + 1}", ",".join(r), f"expected {len(head)} fields ({where})")
        d = dict(zip(head, r, strict=True))

        def cell(opt: str, d: dict[str, str] = d) -> str:
            col = names[opt]
            return d[col] if col is not None else ""

        if not cell("arrival"):
            raw.skipped["no submit time"] += 1
            continue
        submit = _time(cell("arrival"), unit, f"row {k + 1}.{cols.arrival}")
        gpus = _num(cell("gpus") or "0", f"row {k + 1}.{cols.gpus}") * gunit
        if gpus <= 0:
            raw.skip("no GPU", submit)
            continue
        begin = submit                                      # unknown with --duration: the submit time
        if cols.duration is not None:
            if not cell("duration"):
                raw.skip("never started", submit)
                continue
            run = _num(cell("duration"), f"row {k + 1}.{cols.duration}") * unit
        else:
            if not cell("end") or (cols.start is not None and not cell("start")):
                raw.skip("never started", submit)
                continue
            begin = _time(cell("start"), unit, f"row {k + 1}.{cols.start}") if cols.start is not None else submit
            run = _time(cell("end"), unit, f"row {k + 1}.{cols.end}") - begin
        status = cell("status")
        censored = (bool(status) and status in cols.running) or cell("censored").lower() in ("1", "true", "yes")
        meta = {c: v for c, v in d.items() if c not in mapped}
        if status:
            meta["status"] = status
        raw.add(cell("id") or str(k + 1), submit, run, censored, gpus, cell("gpu_type"), cell("user"), cell("model"),
                meta, start=begin)
    return raw


# ------------------------------------------------------------------------------------------------ the rule
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


def import_trace(paths: Sequence[str | os.PathLike[str]], fmt: str, *, catalog: Catalog | None = None,
                 columns: CsvColumns | None = None, fractional: str = "share",
                 gpu_type_map: Mapping[str, str] | None = None, models: Sequence[str] | None = None,
                 gpu_types: Sequence[str] | None = None,
                 window: Sequence[float | None] | None = None, carry_in: bool = False) -> ImportResult:
    """Import a real cluster trace by the rule of the module documentation.

    Parameters
    ----------
    paths : sequence of path
        The source files (see the module documentation for each format; the order does not matter).
    fmt : {"philly", "pai2020", "openb2023", "csv"}
        Source format.
    catalog : Catalog, optional
        Where models, scales and throughputs come from (default: the default catalog; ``load_catalog("modern")``
        knows the modern GPU types).
    columns : CsvColumns, optional
        Column mapping; required for ``fmt="csv"``.
    fractional : {"share", "whole", "drop"}
        ``"share"`` (default): a request of part of one GPU keeps its fraction as the job's ``scale``; a
        non-integral count above 1 is scheduled on whole GPUs (``ceil(gpus)``, rounded up to a catalog scale).
        ``"whole"``: every non-integral request is scheduled on whole GPUs that way (part of a GPU on one
        GPU). ``"drop"``: non-integral requests are left out. ``gpus`` keeps the request in every case.
    gpu_type_map : mapping of str to str, optional
        Source GPU type -> catalog GPU type, for names :data:`GPU_ALIASES` does not know (``{"G2": "A100-80GB"}``).
    models : sequence of str, optional
        Models the rule may choose from (default: every catalog model).
    gpu_types : sequence of str, optional
        Target GPU types: the cluster the trace will replay on (default: the suggested cluster's types when
        the trace names its GPU types, else every catalog type).
    window : (float or None, float or None), optional
        Keep only the jobs submitted from ``FROM`` (inclusive) to ``TO`` (exclusive) hours after the source's
        first submission; ``None`` leaves that side open. The others are counted in ``skipped``.
    carry_in : bool
        With a window that has a start: also keep the jobs submitted before it that were not done at its start,
        waiting or running (their first start plus their run time is after it). Each arrives at the window's
        start with the run time it had left (``metadata["carried_in"]``), and arrivals are counted from the
        window's start.

    Returns
    -------
    ImportResult

    Raises
    ------
    InvalidInputError
        For an unreadable or malformed source file (naming the file, row and field), an unknown option value,
        or when no job is left.
    """
    if fmt not in FORMATS:
        raise InvalidInputError("format", fmt, f"unknown trace format (known: {', '.join(FORMATS)})")
    if fractional not in ("share", "whole", "drop"):
        raise InvalidInputError("fractional", fractional, "must be 'share', 'whole' or 'drop'")
    span = _check_window(window)
    if carry_in and (span is None or span[0] is None):
        raise InvalidInputError("carry_in", carry_in, "needs a window with a start (FROM): jobs are carried into it")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if not paths:
        raise InvalidInputError("paths", [], "no trace file given")
    if fmt == "csv" and columns is None:
        raise InvalidInputError("columns", None, "the csv format needs a column mapping (--arrival, --gpus, ...)")
    cat = load_catalog() if catalog is None else catalog
    user_map = dict(gpu_type_map or {})
    for src, dst in user_map.items():
        if dst not in cat.gpu_types:
            raise InvalidInputError(f"gpu_type_map.{src}", dst,
                                    f"not a GPU type of the catalog ({', '.join(cat.gpu_types)})")
    files = [(str(p), _read_bytes(p, "trace file")) for p in paths]
    if fmt == "philly":
        raw = _philly(files)
    elif fmt == "pai2020":
        raw = _pai2020(files)
    elif fmt == "openb2023":
        raw = _openb2023(files)
    else:
        assert columns is not None
        raw = _generic(files, columns)
    return _apply_rule(raw, cat, fmt, files, columns, fractional, user_map, models, gpu_types, span, carry_in)


def _apply_rule(raw: _Raw, cat: Catalog, fmt: str, files: list[tuple[str, bytes]], columns: CsvColumns | None,
                fractional: str, user_map: dict[str, str], models: Sequence[str] | None,
                gpu_types: Sequence[str] | None, window: tuple[float | None, float | None] | None,
                carry_in: bool = False) -> ImportResult:
    inside, carried, start, skipped = raw.in_window(window, carry_in)
    n = len(raw.id)
    submit, run, gpus = np.array(raw.submit, float), np.array(raw.run, float), np.array(raw.gpus, float)
    # a job carried into the window arrives at its start with the run time it had left (rule 2)
    todo_submit, todo_run = submit.copy(), run.copy()
    if carried.any():
        assert start is not None
        began = np.array(raw.start, float)[carried]
        todo_submit[carried] = start
        todo_run[carried] = np.minimum(run[carried], began + run[carried] - start)
    mapped = [_map_type(g, cat, user_map) for g in raw.gpu_type]
    # the suggested cluster: the machine list, else the peak in use per GPU type of the whole source's jobs
    # that ran (not the window's: the window must not change the target types, hence the work)
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
    if gpu_types is not None:
        targets = tuple(gpu_types)
        for g in targets:
            cat.gpu_index(g)
    else:
        targets = tuple(suggested) or cat.gpu_types
    if models is not None:
        for name in models:
            cat.model_index(name)
    allowed = cat.models if models is None else tuple(m for m in cat.models if m in set(models))
    scales = np.array(cat.scales)
    tput_cache: dict[int, np.ndarray] = {}

    def table(scale: int) -> np.ndarray:
        if scale not in tput_cache:
            mi = np.array([cat.model_index(m) for m in allowed], dtype=np.int64)
            tput_cache[scale] = cat.throughput_matrix(mi, np.full(len(mi), scale), cat.gpu_types)
        return tput_cache[scale]

    tgt = np.array([cat.gpu_index(g) for g in targets], dtype=np.int64)
    keep: list[int] = []
    out_model: list[str] = []
    out_scale: list[float] = []
    out_iter: list[float] = []
    seen: dict[str, int] = {}
    ids: list[str] = []
    for i in range(n):
        if not inside[i]:
            continue
        if not math.isfinite(todo_run[i]):
            skipped["never started"] += 1
            continue
        if todo_run[i] < 0:
            skipped["end before start"] += 1
            continue
        g = gpus[i]
        if g != math.floor(g) and fractional == "drop":
            skipped["part of a GPU (fractional=drop)"] += 1
            continue
        share = fractional == "share" and 0 < g < 1
        whole = max(1, math.ceil(g - 1e-9))
        fit = scales[scales >= whole]
        if not fit.size:
            skipped[f"more GPUs than any catalog scale (max {int(scales.max())})"] += 1
            continue
        scale = int(fit[0])  # a share runs at its fraction of the scale-1 throughput
        tp = table(scale) if not share else table(1) * g
        runs_on_target: np.ndarray = np.asarray((tp[:, tgt] > 0).any(axis=1))
        pool_idx = np.flatnonzero(runs_on_target)
        if not pool_idx.size:
            skipped[f"no model with data at scale {scale} on {', '.join(targets)}"] += 1
            continue
        key = raw.model_key[i]
        m: int
        if key and key in allowed and bool(runs_on_target[allowed.index(key)]):
            m = allowed.index(key)
        else:
            gtype = mapped[i]
            gi = cat.gpu_index(gtype) if gtype is not None else -1
            there = pool_idx[tp[pool_idx, gi] > 0] if gi >= 0 else pool_idx[:0]
            pool = there if there.size else pool_idx
            m = int(pool[_hash(key or raw.id[i]) % len(pool)])
        gtype = mapped[i]
        gi = cat.gpu_index(gtype) if gtype is not None else -1
        rate = tp[m, gi] if gi >= 0 and tp[m, gi] > 0 else float(tp[m, tgt].max())
        keep.append(i)
        out_model.append(allowed[m])
        out_scale.append(float(g) if share else scale)
        out_iter.append(min(MAX_ITERATIONS, max(1.0, float(np.rint(todo_run[i] * rate)))))
        jid = raw.id[i]
        if jid in seen:
            seen[jid] += 1
            jid = f"{jid}#{seen[jid]}"
        else:
            seen[jid] = 1
        ids.append(jid)
    if not keep:
        reasons = "; ".join(f"{v} {k}" for k, v in skipped.items()) or "the source has no job"
        if window is not None:
            when = raw.submit_times()
            span = (when.max() - when.min()) / 3600.0 if when.size else 0.0
            raise InvalidInputError("window", list(window), f"no job left to import ({reasons}); the source's "
                                    f"jobs were submitted from 0 to {span:,.1f} h")
        raise InvalidInputError("trace", [p for p, _ in files], f"no job left to import ({reasons})")
    k = np.array(keep)
    arrival = todo_submit[k] - (start if carry_in and start is not None else todo_submit[k].min())
    if arrival.max() > MAX_ARRIVAL:
        raise InvalidInputError("trace", [p for p, _ in files], f"spans more than {MAX_ARRIVAL:g} s")
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
    trace = Trace(id=tuple(ids), arrival=arrival, model=tuple(out_model), scale=np.array(out_scale),
                  iterations=np.array(out_iter), tenant=tuple(raw.user[i] for i in keep),
                  gpus=np.minimum(gpus[k], MAX_GPUS), censored=np.array([raw.censored[i] for i in keep], dtype=bool),
                  metadata=tuple(metas))
    source = {
        "format": fmt,
        "files": [{"name": Path(p).name, "bytes": len(b), "sha256": _sha(b)} for p, b in files],
        "rule": "fairshare.sim.importers (docs/traces.md, 'Importing a real trace')",
        "catalog": [s.name for s in cat.sources],
        "target_gpu_types": list(targets),
        "fractional": fractional,
        "gpu_type_map": user_map,
        "window": None if window is None else list(window),
        "carry_in": carry_in,
        "carried_in": int(carried[k].sum()),
        "models": None if models is None else list(models),
        "columns": None if columns is None else {f: getattr(columns, f) for f in columns.__dataclass_fields__},
        "jobs": len(trace), "censored": int(trace.censored.sum()), "skipped": dict(skipped),
        "suggested_cluster": suggested, "unmapped_gpu_types": unmapped,
    }
    return ImportResult(trace, dict(skipped), suggested, unmapped, source)
