"""Reader of Microsoft's Philly trace: ``cluster_job_log`` (JSON) and optionally ``cluster_machine_list``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fairshare.documents import read_json
from fairshare.errors import InvalidInputError
from fairshare.sim.importers.base import (
    CsvColumns,
    _csv_rows,
    _num,
    _Raw,
    _text,
    _time,
)

__all__ = ["read"]


def read(files: Sequence[tuple[str, bytes]], columns: CsvColumns | None = None) -> _Raw:
    """The jobs of the Philly source ``files`` (name, bytes); ``columns`` is not used."""
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

