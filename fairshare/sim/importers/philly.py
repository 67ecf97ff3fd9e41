"""Reader of Microsoft's Philly trace: ``cluster_job_log`` (JSON) and optionally ``cluster_machine_list``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fairshare._validate import clip
from fairshare.documents import read_json
from fairshare.errors import InvalidInputError
from fairshare.sim.importers.base import CsvColumns, _Raw, _Table, _text, _time

__all__ = ["read"]


def read(files: Sequence[tuple[str, bytes]], columns: CsvColumns | None = None) -> _Raw:
    """The jobs of the Philly source ``files`` (name, bytes); ``columns`` is not used."""
    raw = _Raw()
    jobs_doc: Any = None
    machines: list[tuple[str, bytes]] = []
    for path, data in files:
        text = _text(data, path)
        if text.lstrip()[:1] == "[":
            if jobs_doc is not None:
                raise InvalidInputError("trace file", path, "a second job log: give one cluster_job_log")
            jobs_doc = read_json(text, what="cluster_job_log")
        else:                                                    # cluster_machine_list: machineId,GPUs,GPU mem
            machines.append((path, data))
    if not isinstance(jobs_doc, list):
        raise InvalidInputError("trace file", [p for p, _ in files], "no cluster_job_log (a JSON list of jobs)")
    for path, data in machines:
        table = _Table(path, data, header=False, names=_MACHINE_COLUMNS)
        first = table.rows[0][1] if table.rows else []
        if first and (first[0].lower() == "machineid" or (len(first) > 1 and not first[1].isdigit())):
            table.rows = table.rows[1:]                      # its header line
        for machine in table:
            kind = f"philly-{machine.text('gpu_mem').replace(' ', '')}"
            raw.inventory[kind] = raw.inventory.get(kind, 0) + machine.count("gpus")
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
        backwards = False
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
            if t1 is not None and t1 < t0:
                backwards = True
            gpus = _gpus(att, f"{where}.attempts[{k}]") or gpus
        parsed.append((i, job, t_sub, spans, gpus, backwards))
    end_of_trace = max(stamps) if stamps else 0.0
    for i, job, t_sub, spans, gpus, backwards in parsed:
        jid = str(job.get("jobid") or f"job{i}")
        if not spans:
            raw.skip("never started", t_sub)
            continue
        if gpus <= 0:  # an attempt that started on no GPU the log names (``detail`` empty, ``gpus`` null)
            raw.skip("no GPU", t_sub)
            continue
        censored = spans[-1][1] is None                      # the last attempt has no end: still running
        run = sum(((e if e is not None else end_of_trace) - s) for s, e in spans)
        if backwards:  # an attempt that ended before it started: the job counts as "end before start"
            run = -1.0
        meta = {"vc": str(job.get("vc", "")), "status": str(job.get("status", "")), "attempts": str(len(spans))}
        raw.add(jid, t_sub, run, censored, float(gpus), "", str(job.get("user", "")), "", meta,
                start=min(t for t, _ in spans), where=f"cluster_job_log[{i}].jobid")
    return raw


_MACHINE_COLUMNS = ("machineId", "gpus", "gpu_mem")
"""Columns of ``cluster_machine_list``: machine id, number of GPUs, memory of one GPU."""


def _gpus(attempt: dict[str, Any], where: str) -> int:
    """GPUs an attempt ran on: the GPUs listed in its ``detail`` (0 when it lists none)."""
    detail = attempt.get("detail")
    if detail is None:
        return 0
    if not isinstance(detail, list):
        raise InvalidInputError(f"{where}.detail", clip(detail), "must be a list of {ip, gpus} objects")
    n = 0
    for d, machine in enumerate(detail):
        if not isinstance(machine, dict):
            raise InvalidInputError(f"{where}.detail[{d}]", clip(machine), "must be an {ip, gpus} object")
        listed = machine.get("gpus")
        if listed is None:
            continue
        if not isinstance(listed, list):
            raise InvalidInputError(f"{where}.detail[{d}].gpus", clip(listed), "must be a list of GPU names")
        n += len(listed)
    return n

