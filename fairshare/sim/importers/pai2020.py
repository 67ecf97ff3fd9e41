"""Reader of Alibaba PAI 2020 (``cluster-trace-gpu-v2020``): job, task and machine tables (CSV)."""

from __future__ import annotations

from collections.abc import Sequence

from fairshare.errors import InvalidInputError
from fairshare.sim.importers.base import CsvColumns, _Raw, _Row, _Table

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
    tables: dict[str, list[_Row]] = {}
    for path, data in files:
        table = _Table(path, data, header=False)
        if not table.rows:
            continue
        width = len(table.rows[0][1])
        name = next((n for n, h in _HEADERS.items() if len(h) == width), None)
        if name is None:
            raise InvalidInputError("trace file", path, f"{width} columns: not a pai_job_table (6), pai_task_table "
                                    "(10) or pai_machine_spec (5)")
        if name in tables:
            raise InvalidInputError("trace file", path, f"a second {name}")
        if tuple(table.rows[0][1]) == _HEADERS[name]:
            table.rows = table.rows[1:]
        table.head = list(_HEADERS[name])
        tables[name] = list(table)
    if "pai_job_table" not in tables or "pai_task_table" not in tables:
        raise InvalidInputError("trace file", [p for p, _ in files], "pai2020 needs pai_job_table and pai_task_table")
    raw = _Raw()
    for row in tables.get("pai_machine_spec", []):
        if row.text("cap_gpu"):
            kind = row.text("gpu_type")
            raw.inventory[kind] = raw.inventory.get(kind, 0) + row.count("cap_gpu")
    tasks: dict[str, list[_Row]] = {}
    stamps: list[float] = []
    for row in tables["pai_task_table"]:
        tasks.setdefault(row.text("job_name"), []).append(row)
        stamps += [row.number(c) for c in ("start_time", "end_time") if row.text(c)]
    for row in tables["pai_job_table"]:
        stamps += [row.number(c) for c in ("start_time", "end_time") if row.text(c)]
    end_of_trace = max(stamps) if stamps else 0.0
    for row in tables["pai_job_table"]:
        name, status, end = row.text("job_name"), row.text("status"), row.text("end_time")
        if not row.text("start_time"):
            raw.skipped["no submit time"] += 1
            continue
        gpus, starts, ends = 0.0, [], []
        by_type: dict[str, float] = {}
        for t in tasks.get(name, []):
            n = t.number("inst_num", minimum=0) if t.text("inst_num") else 1.0
            g = t.number("plan_gpu", 0.01, minimum=0) if t.text("plan_gpu") else 0.0
            gpus += n * g
            if n * g > 0:
                by_type[t.text("gpu_type")] = by_type.get(t.text("gpu_type"), 0.0) + n * g
            if t.text("start_time"):
                starts.append(t.number("start_time"))
            if t.text("end_time"):
                ends.append(t.number("end_time"))
        t_sub = row.number("start_time")
        if gpus <= 0:
            raw.skip("no GPU", t_sub)
            continue
        if not starts:
            raw.skip("never started", t_sub)
            continue
        censored = status == "Running" or not (end or ends)
        stop = end_of_trace if censored else max([row.number("end_time")] if end else ends)
        gpu_type = max(by_type, key=lambda k: by_type[k]) if by_type else ""
        meta = {"status": status, "inst_id": row.text("inst_id"), "tasks": str(len(tasks.get(name, []))),
                "gpu_types": "|".join(sorted(k for k in by_type if k)) if len(by_type) > 1 else ""}
        raw.add(name, t_sub, stop - min(starts), censored, gpus, gpu_type, row.text("user"), "", meta,
                start=min(starts), where=row.where("job_name"))
    return raw
