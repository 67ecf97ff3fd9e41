"""Reader of Alibaba PAI 2020 (``cluster-trace-gpu-v2020``): job, task and machine tables (CSV)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fairshare.errors import InvalidInputError
from fairshare.sim.importers.base import (
    CsvColumns,
    _csv_rows,
    _num,
    _Raw,
    _text,
)

__all__ = ["read"]

_HEADERS = {
    "pai_job_table": ("job_name", "inst_id", "user", "status", "start_time", "end_time"),
    "pai_task_table": ("job_name", "task_name", "inst_num", "status", "start_time", "end_time", "plan_cpu",
                       "plan_mem", "plan_gpu", "gpu_type"),
    "pai_machine_spec": ("machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu"),
}
"""Header lines of the PAI tables (the files may come without them)."""

def read(files: Sequence[tuple[str, bytes]], columns: CsvColumns | None = None) -> _Raw:
    """The jobs of the PAI 2020 source ``files`` (name, bytes); ``columns`` is not used."""
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

