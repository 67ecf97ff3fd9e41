"""Reader of any CSV with a header, mapped column by column by a :class:`~fairshare.sim.importers.base.CsvColumns`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fairshare.errors import InvalidInputError
from fairshare.sim.importers.base import (
    GPU_UNITS,
    TIME_UNITS,
    CsvColumns,
    _csv_rows,
    _num,
    _Raw,
    _text,
    _time,
)

__all__ = ["read"]


def read(files: Sequence[tuple[str, bytes]], columns: CsvColumns | None = None) -> _Raw:
    """The jobs of one CSV file, its columns named by ``columns`` (required)."""
    if columns is None:
        raise InvalidInputError("columns", None, "the csv format needs a column mapping (--arrival, --gpus, ...)")
    cols = columns
    if len(files) != 1:
        raise InvalidInputError("trace file", [p for p, _ in files], "the csv format reads one file")
    path, data = files[0]
    rows = _csv_rows(_text(data, path))
    if not rows:
        raise InvalidInputError("trace file", path, "empty")
    head, body = rows[0], rows[1:]
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
        if cols.arrival_gaps:
            if submit < 0:
                raise InvalidInputError(f"row {k + 1}.{cols.arrival}", cell("arrival"), "a gap must be >= 0")
            clock += submit
            submit = clock
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
                meta, start=begin, tenant=None if cols.tenant is None else cell("tenant"))
    return raw
