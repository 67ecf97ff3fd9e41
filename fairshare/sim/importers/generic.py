"""Reader of any CSV with a header, mapped column by column by a :class:`~fairshare.sim.importers.base.CsvColumns`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fairshare.errors import InvalidInputError
from fairshare.sim.importers.base import GPU_UNITS, TIME_UNITS, CsvColumns, _Raw, _Table

__all__ = ["read"]


def read(files: Sequence[tuple[str, bytes]], columns: CsvColumns | None = None) -> _Raw:
    """The jobs of one CSV file, its columns named by ``columns`` (required)."""
    if columns is None:
        raise InvalidInputError("columns", None, "the csv format needs a column mapping (--arrival, --gpus, ...)")
    cols = columns
    if len(files) != 1:
        raise InvalidInputError("trace file", [p for p, _ in files], "the csv format reads one file")
    path, data = files[0]
    table = _Table(path, data)
    if not table.head:
        raise InvalidInputError("trace file", path, "empty")
    head = table.head
    names = {"arrival": cols.arrival, "gpus": cols.gpus, "duration": cols.duration, "end": cols.end,
             "start": cols.start, "gpu_type": cols.gpu_type, "user": cols.user, "id": cols.id, "model": cols.model,
             "status": cols.status, "censored": cols.censored, "tenant": cols.tenant}
    for opt, col in names.items():
        if col is not None and col not in head:
            raise InvalidInputError(f"--{opt.replace('_', '-')}", col, f"no such column in {Path(path).name} "
                                    f"(columns: {', '.join(head)})")
    mapped = {c for c in names.values() if c is not None}
    unit, gunit = TIME_UNITS[cols.time_unit], GPU_UNITS[cols.gpu_unit]
    raw = _Raw()
    clock = 0.0                                         # arrival_gaps: the running sum of the gaps
    for n, row in enumerate(table, 1):
        if not row.text(cols.arrival):
            raw.skipped["no submit time"] += 1
            continue
        submit = row.time(cols.arrival, unit)
        if cols.arrival_gaps:
            if submit < 0:
                raise InvalidInputError(row.where(cols.arrival), row.text(cols.arrival), "a gap must be >= 0")
            clock += submit
            submit = clock
        gpus = row.number(cols.gpus, gunit) if row.text(cols.gpus) else 0.0
        if gpus <= 0:
            raw.skip("no GPU", submit)
            continue
        begin = submit                                      # unknown with --duration: the submit time
        if cols.duration is not None:
            if not row.text(cols.duration):
                raw.skip("never started", submit)
                continue
            run = row.number(cols.duration, unit)
        else:
            if not row.text(cols.end) or (cols.start is not None and not row.text(cols.start)):
                raw.skip("never started", submit)
                continue
            begin = row.time(cols.start, unit) if cols.start is not None else submit
            run = row.time(cols.end or "", unit) - begin
        status = row.text(cols.status)
        censored = (bool(status) and status in cols.running) or row.text(cols.censored).lower() in ("1", "true", "yes")
        meta = {c: v for c, v in row.cells.items() if c not in mapped}
        if status:
            meta["status"] = status
        raw.add(row.text(cols.id) or str(n), submit, run, censored, gpus, row.text(cols.gpu_type),
                row.text(cols.user), row.text(cols.model), meta, start=begin,
                tenant=None if cols.tenant is None else row.text(cols.tenant), where=row.where(cols.id or "row"))
    return raw
