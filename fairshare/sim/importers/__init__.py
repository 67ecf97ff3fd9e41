"""Import real cluster traces: built-in formats (Philly, Alibaba PAI 2020, Alibaba GPU 2023) and any CSV.

A real trace records when each job was submitted, how many GPUs it asked for, how long it ran and sometimes
the GPU type, user and queue, but no model and no iteration count. :func:`import_trace` reads the source with
the reader of its format (:data:`READERS`, one module each) and turns it into a
:class:`~fairshare.sim.traces.Trace` by one deterministic rule (:mod:`~fairshare.sim.importers.rule`): jobs that
never ran or fit no catalog scale are left out and counted by reason; arrivals count from the first kept
submission (or a window's start); each job gets a catalog scale, a model (the source's, or one chosen by a
hash of its class or id) and the work it did at that model's throughput; a suggested cluster comes from the
machine list or the peak use. The rule in full is in ``docs/traces.md``, "Importing a real trace".
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

from fairshare.errors import InvalidInputError
from fairshare.sim.catalog import Catalog, load_catalog
from fairshare.sim.catalog.scaleout import derive_scale_out
from fairshare.sim.importers import generic, openb2023, pai2020, philly
from fairshare.sim.importers.base import (
    GPU_ALIASES,
    GPU_UNITS,
    TIME_UNITS,
    CsvColumns,
    ImportResult,
    WindowBound,
    _check_window,
    _Raw,
    _read_bytes,
)
from fairshare.sim.importers.rule import apply_rule, assign_model

__all__ = ["FORMATS", "GPU_ALIASES", "GPU_UNITS", "READERS", "TIME_UNITS", "CsvColumns", "ImportResult",
           "assign_model", "import_trace"]

READERS: dict[str, Callable[[Sequence[tuple[str, bytes]], CsvColumns | None], _Raw]] = {
    "philly": philly.read,
    "pai2020": pai2020.read,
    "openb2023": openb2023.read,
    "csv": generic.read,
}
"""Reader of each source format: the source's files as ``(name, bytes)`` and the column mapping (``csv`` only)
to the jobs as read. ``philly``: Microsoft's ``cluster_job_log`` JSON, optionally its ``cluster_machine_list``
CSV; ``pai2020``: Alibaba ``cluster-trace-gpu-v2020`` (``pai_job_table`` and ``pai_task_table`` CSV, with or
without their header line, optionally ``pai_machine_spec``); ``openb2023``: Alibaba ``cluster-trace-gpu-v2023``
(``openb_pod_list_*.csv``, optionally ``openb_node_list_*.csv``); ``csv``: any CSV with a header, mapped by
:class:`CsvColumns`."""

FORMATS = tuple(READERS)
"""Source formats :func:`import_trace` reads."""

UNDATED_FORMATS = ("pai2020", "openb2023")
"""Formats whose times are seconds from the trace's start, not dates: their windows are in hours."""


def import_trace(paths: Sequence[str | os.PathLike[str]], fmt: str, *, catalog: Catalog | None = None,
                 columns: CsvColumns | None = None, fractional: str = "share",
                 gpu_type_map: Mapping[str, str] | None = None, models: Sequence[str] | None = None,
                 gpu_types: Sequence[str] | None = None, window: Sequence[WindowBound] | None = None,
                 carry_in: bool = False, tenant: str | None = None) -> ImportResult:
    """Import a real cluster trace by the rule of ``docs/traces.md`` ("Importing a real trace").

    Parameters
    ----------
    paths : sequence of path
        The source files (see :data:`READERS` for each format; the order does not matter).
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
        the trace names its GPU types; when it names none, the catalog's types with data for at least half of
        its workloads, :func:`~fairshare.sim.importers.rule.common_gpu_types`; else every catalog type).
    window : (FROM, TO), optional
        Keep only the jobs submitted from ``FROM`` (inclusive) to ``TO`` (exclusive); ``None`` leaves that side
        open. Both bounds are hours after the source's first submission, or both are dates and times
        (``datetime`` or ISO 8601 strings such as ``"2017-11-01"`` or ``"2017-11-01T08:00"``; without an
        offset, UTC), for sources whose times are dates (``philly``, and ``csv`` with dates or Unix times). The
        others are counted in ``skipped``.
    carry_in : bool
        With a window that has a start: also keep the jobs submitted before it that were not done at its start,
        waiting or running (their first start plus their run time is after it). Each arrives at the window's
        start with the run time it had left (``metadata["carried_in"]``), and arrivals are counted from the
        window's start.
    tenant : str, optional
        The source field that becomes each job's tenant: ``"user"`` (default), or a field the format keeps
        in the metadata, such as Philly's ``"vc"`` (its virtual cluster) or, in a CSV, an unmapped column
        (``CsvColumns.tenant`` maps one too).

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
    if span is not None and span.dates and fmt in UNDATED_FORMATS:
        raise InvalidInputError("window", list(window or ()), f"the {fmt} format gives times as seconds from the "
                                "trace's start (its dates are not published): give the window in hours")
    if carry_in and (span is None or span.lo is None):
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
    raw = READERS[fmt](files, columns)
    if raw.gpus and max(raw.gpus) > max(cat.scales) and not any(s.name == "derived:scale-out-v1" for s in cat.sources):
        cat = derive_scale_out(cat)       # gangs beyond the catalog's scales: derived, labelled (docs/catalog.md)
    return apply_rule(raw, cat, fmt, files, columns, fractional, user_map, models, gpu_types, span, carry_in,
                      tenant)
