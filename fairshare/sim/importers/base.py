"""What every trace reader shares: the jobs as read (:class:`_Raw`), the result of an import, units, cell parsers."""

from __future__ import annotations

import csv
import hashlib
import io
import math
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from fairshare._io import read_input
from fairshare.errors import InvalidInputError
from fairshare.sim.traces import MAX_TRACE_BYTES, Trace

__all__ = ["GPU_ALIASES", "GPU_UNITS", "TIME_UNITS", "CsvColumns", "ImportResult"]

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
        GPU type it ran on; user (the tenant unless ``tenant`` is given); job id (default: the data row
        number); model or class name; status.
    tenant : str, optional
        The tenant, e.g. a virtual cluster or team column (default: ``user``).
    arrival_gaps : bool
        The ``arrival`` column holds each row's time since the previous row's submission (rows in submission
        order), in ``time_unit``: the submit time is their running sum from 0.
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
    tenant: str | None = None
    arrival_gaps: bool = False
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
    tenant: list[str | None] = field(default_factory=list)  # a CSV's tenant column, None: not mapped
    meta: list[dict[str, str]] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)   # left out where no submit time is known
    skipped_at: list[tuple[str, float]] = field(default_factory=list)  # (reason, submit time) of the others
    inventory: dict[str, int] = field(default_factory=dict)  # source GPU type -> GPUs (machine list)
    where: list[str] = field(default_factory=list)          # where each job is in the source, for errors

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
            model_key: str, meta: dict[str, str], start: float | None = None, tenant: str | None = None,
            where: str = "") -> None:
        self.where.append(where or f"job {len(self.id) + 1}")
        self.id.append(jid)
        self.submit.append(submit)
        self.start.append(submit if start is None else start)
        self.run.append(run)
        self.censored.append(censored)
        self.gpus.append(gpus)
        self.gpu_type.append(gpu_type)
        self.user.append(user)
        self.model_key.append(model_key)
        self.tenant.append(tenant)
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
        renamed = self.source.get("renamed_ids") or {}
        if renamed:
            repeats = sum(len(v) for v in renamed.values())
            first, names = next(iter(renamed.items()))
            lines.append(f"{repeats} repeated job id{'s' if repeats != 1 else ''} renamed, first kept as it was "
                         f"(e.g. {first} -> {', '.join(names[:3])})")
        window = self.source.get("window")
        span = float(t.arrival.max()) / 3600.0
        where = (f"submitted in the window {_hours(window[0])}:{_hours(window[1])} h of the source"
                 if window else "a window keeps a part: --window FROM:TO, in hours or dates")
        if window and self.source.get("window_utc"):
            lo, hi = ("" if b is None else f"{b:,.2f}" for b in window)
            where = f"submitted in the window {self.source['window_utc']}: {lo}:{hi} h of the source"

        if self.source.get("carry_in"):
            where += f"; {self.source['carried_in']} carried in, not done at its start"
        lines.append(f"arrivals: 0 to {span:,.1f} h ({where})")
        targets = list(self.source.get("target_gpu_types") or [])
        if self.suggested_cluster:
            lines.append(f"suggested: --cluster {self.cluster_spec}")
        elif not self.source.get("gpu_types_known", True):
            how = ("the types of --cluster" if self.source.get("targets_from") == "cluster" else
                   "the catalog's common types; give --cluster to import for your cluster's types")
            named = "names none the catalog knows" if self.unmapped else "names none"
            lines.append(f"GPU types: the source {named}; each job's work is its run time at its model's speed on "
                         f"the fastest target type it has data for; targets {', '.join(targets)} ({how})")
            peak = int(self.source.get("peak_gpus") or 0)
            if peak and self.source.get("targets_from") != "cluster" and targets:
                each = max(1, -(-peak // len(targets)))
                whence = ("the GPUs of its machine list" if self.unmapped else "the most in use at once in the source")
                lines.append(f"suggested: a cluster of about {peak} GPUs ({whence}; types unknown), e.g. --cluster "
                             f"{','.join(f'{g}={each}' for g in targets)}")
        derived = int(self.source.get("derived_scales") or 0)
        if derived:
            above = self.source.get("derived_above", 8)
            lines.append(f"{derived} job{'s' if derived != 1 else ''} of more than {above} GPUs on derived scales "
                         "(rule scale-out-v1, labelled derived; docs/catalog.md): replays add --catalog scale-out")
        if self.unmapped:
            kinds = ", ".join(f"{k} ({n} GPUs)" for k, n in self.unmapped.items())
            lines.append(f"GPU types without a catalog name: {kinds}; name them with --gpu-type-map KIND=TYPE "
                         "(e.g. a type of the catalog 'modern')")
        return lines


def _hours(value: float | None) -> str:
    return "" if value is None else f"{value:.12g}"


WindowBound = float | datetime | str | None
"""A bound of an import window: hours after the source's first submission, or a date and time (a ``datetime``
or an ISO 8601 string; without an offset, UTC)."""


@dataclass(frozen=True, slots=True)
class _Window:
    """A checked import window: bounds in hours after the source's first submission, or dates.

    With ``dates``, the bounds are seconds since 1970-01-01 UTC; :meth:`hours` turns them into hours after the
    source's first submission (the source's times are then read as seconds since 1970-01-01 UTC).
    """

    lo: float | None
    hi: float | None
    dates: bool = False

    def hours(self, origin: float) -> tuple[float | None, float | None]:
        """The bounds in hours after ``origin`` (the source's first submission, s); a date before it is 0."""
        if not self.dates:
            return self.lo, self.hi
        lo, hi = (None if b is None else max(0.0, (b - origin) / 3600.0) for b in (self.lo, self.hi))
        return lo, hi

    def text(self) -> str:
        """The dates for a person (``2017-11-01 00:00 to 2017-11-02 00:00 UTC``); ``""`` for hours."""
        if not self.dates:
            return ""
        lo, hi = ("" if b is None else _utc(b) for b in (self.lo, self.hi))
        return f"{lo or 'the start'} to {hi or 'the end'} UTC"


def _utc(seconds: float) -> str:
    """``seconds`` since 1970-01-01 UTC as ``YYYY-MM-DD HH:MM`` (with ``:SS`` when not on the minute)."""
    dt = datetime.fromtimestamp(seconds, tz=timezone.utc)
    return dt.strftime("%Y-%m-%d %H:%M:%S" if dt.second or dt.microsecond else "%Y-%m-%d %H:%M")


def parse_date(value: str | datetime) -> float:
    """An ISO 8601 date, or date and time, as seconds since 1970-01-01 UTC (naive: UTC).

    >>> parse_date("2017-11-01"), parse_date("2017-11-01T08:00+08:00")
    (1509494400.0, 1509494400.0)
    """
    dt = value if isinstance(value, datetime) else datetime.fromisoformat(value.strip())
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def _check_window(window: Sequence[WindowBound] | None) -> _Window | None:
    if window is None:
        return None
    if isinstance(window, (str, bytes)) or len(window) != 2:
        raise InvalidInputError("window", window, "expected (FROM, TO): hours or dates, either may be None")
    bounds: list[float | None] = []
    kinds: set[bool] = set()
    for value in window:
        if value is None:
            bounds.append(None)
            continue
        if isinstance(value, (str, datetime)):
            try:
                bounds.append(parse_date(value))
            except ValueError:
                raise InvalidInputError("window", list(window), f"{value!r} is not an ISO 8601 date and time "
                                        "(e.g. 2017-11-01 or 2017-11-01T08:00)") from None
            kinds.add(True)
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise InvalidInputError("window", window, "bounds must be numbers of hours, dates or None")
        if not math.isfinite(value) or value < 0:
            raise InvalidInputError("window", window, "bounds must be finite and >= 0 hours")
        bounds.append(float(value))
        kinds.add(False)
    if len(kinds) > 1:
        raise InvalidInputError("window", list(window), "FROM and TO must both be hours or both be dates")
    lo, hi = bounds
    if lo is not None and hi is not None and hi <= lo:
        raise InvalidInputError("window", list(window), "TO must be after FROM")
    dates = kinds == {True}
    if hi is not None and hi <= 0 and not dates:
        raise InvalidInputError("window", window, "TO must be > 0 hours (the first submission is at 0)")
    return _Window(lo, hi, dates) if (lo, hi) != (None, None) else None


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_bytes(path: str | os.PathLike[str], what: str) -> bytes:
    return read_input(what, path, MAX_TRACE_BYTES, allow_empty=True)


def _text(data: bytes, path: str) -> str:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInputError("trace file", path,
                                f"not a UTF-8 text file ({exc.reason} at byte {exc.start})") from None
    if "\0" in text:
        raise InvalidInputError("trace file", path, "not a text file (it holds NUL characters)")
    return text


def _clip_cell(value: str) -> str:
    return value if len(value) <= 80 else f"{value[:60]}... ({len(value):,} characters)"


class _Table:
    """One CSV table of a source, read once: its header and its rows as :class:`_Row` (line numbers kept).

    The one reader of source cells: every error names the file, the line and the column. A header that
    repeats a column, and a row whose number of fields differs from the header's, are refused. ``header``
    False reads a file without a header line (PAI's tables), its columns named by ``names``.
    """

    def __init__(self, path: str, data: bytes, *, names: Sequence[str] | None = None, header: bool = True) -> None:
        self.name = Path(path).name
        text = _text(data, path)
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        reader = csv.reader(io.StringIO(text))
        rows: list[tuple[int, list[str]]] = []
        try:
            for row in reader:
                if row and any(c.strip() for c in row):
                    rows.append((reader.line_num, [c.strip() for c in row]))
        except csv.Error as exc:
            raise InvalidInputError(f"{self.name}, line {reader.line_num}", None,
                                    f"not a well-formed CSV line ({exc}; a cell may hold at most "
                                    f"{csv.field_size_limit():,} characters)") from None
        if header and rows:
            self.head = rows[0][1]
            rows = rows[1:]
        else:
            self.head = list(names or [])
        seen: set[str] = set()
        for col in self.head:
            if col in seen:
                raise InvalidInputError(f"{self.name}, header", col, "column given twice: which one holds the data "
                                        "is ambiguous")
            seen.add(col)
        self.rows = rows
        self._kinds: dict[str, tuple[str, int]] = {}  # column -> (number or date, first line)

    def __iter__(self) -> Iterator[_Row]:
        width = len(self.head)
        for line, cells in self.rows:
            if len(cells) != width:
                raise InvalidInputError(f"{self.name}, line {line}", _clip_cell(",".join(cells)),
                                        f"expected {width} fields ({', '.join(self.head)}), got {len(cells)}")
            yield _Row(self, line, dict(zip(self.head, cells, strict=True)))

    def require(self, columns: Sequence[str], what: str) -> None:
        """Refuse the table unless its header has every one of ``columns``."""
        missing = [c for c in columns if c not in self.head]
        if missing:
            raise InvalidInputError(f"{self.name}, header", ",".join(self.head),
                                    f"{what} needs the column{'s' if len(missing) > 1 else ''} {', '.join(missing)}")

    def kind(self, column: str, kind: str, line: int, value: str) -> None:
        """Record that ``column`` holds times of ``kind``; refuse a column mixing numbers and dates."""
        first = self._kinds.setdefault(column, (kind, line))
        if first[0] != kind:
            raise InvalidInputError(f"{self.name}, line {line}, {column}", value,
                                    f"{'a date' if kind == 'date' else 'a number'} in a column of "
                                    f"{first[0]}s (line {first[1]}): give every time of a column the same way")


@dataclass(frozen=True, slots=True)
class _Row:
    """One row of a :class:`_Table`: its cells by column, read by the methods that name file, line and column."""

    table: _Table
    line: int
    cells: dict[str, str]

    def where(self, column: str) -> str:
        """The field of an error about ``column`` in this row: ``"pods.csv, line 3, num_gpu"``."""
        return f"{self.table.name}, line {self.line}, {column}"

    def text(self, column: str | None) -> str:
        """The cell (``""`` for a column not mapped or empty)."""
        return self.cells.get(column, "") if column is not None else ""

    def number(self, column: str, unit: float = 1.0, *, minimum: float | None = None) -> float:
        """The cell as a finite number times ``unit`` (finite after the unit too), at least ``minimum``."""
        value = self.text(column)
        try:
            x = float(value)
        except ValueError:
            raise InvalidInputError(self.where(column), _clip_cell(value), "not a number") from None
        x *= unit
        if not math.isfinite(x):
            raise InvalidInputError(self.where(column), _clip_cell(value), "must be finite (in seconds or GPUs, "
                                    "after its unit)")
        if minimum is not None and x < minimum:
            raise InvalidInputError(self.where(column), value, f"must be >= {minimum:g}")
        return x

    def count(self, column: str) -> int:
        """The cell as a whole count ``>= 0`` (a GPU count: ``2.9`` and ``-1`` are refused, not truncated)."""
        x = self.number(column, minimum=0)
        if x != math.floor(x) or x > 2**31:
            raise InvalidInputError(self.where(column), self.text(column), "must be a whole number from 0 to 2**31")
        return int(x)

    def time(self, column: str, unit: float = 1.0) -> float:
        """The cell as a time in seconds: a number in ``unit`` or an ISO 8601 date and time (naive: UTC).

        One column holds one kind: a number in a column whose first time was a date (or the reverse) is refused.
        """
        value = self.text(column)
        x = _time(value, unit, self.where(column))
        try:
            float(value)
            kind = "number"
        except ValueError:
            kind = "date"
        self.table.kind(column, kind, self.line, value)
        return x


def _time(value: str, unit: float, where: str) -> float:
    """A time cell in seconds: a number in ``unit``, or an ISO 8601 date and time (naive: UTC)."""
    v = value.strip()
    try:
        x = float(v) * unit
    except OverflowError:
        x = math.inf
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
