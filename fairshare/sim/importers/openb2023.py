"""Reader of Alibaba GPU 2023 (``cluster-trace-gpu-v2023``): ``openb_pod_list`` and optionally ``openb_node_list``."""

from __future__ import annotations

from collections.abc import Sequence

from fairshare.errors import InvalidInputError
from fairshare.sim.importers.base import CsvColumns, _Raw, _Row, _Table

__all__ = ["POD_COLUMNS", "read"]


POD_COLUMNS = ("name", "num_gpu", "gpu_milli", "creation_time", "deletion_time", "scheduled_time")
"""Columns a pod list must have (without ``gpu_milli`` every part-of-a-GPU request would read as whole GPUs)."""


def read(files: Sequence[tuple[str, bytes]], columns: CsvColumns | None = None) -> _Raw:
    """The jobs of the GPU 2023 source ``files`` (name, bytes); ``columns`` is not used."""
    raw = _Raw()
    pods: list[_Row] | None = None
    for path, data in files:
        table = _Table(path, data)
        if not table.head:
            continue
        head = set(table.head)
        if {"sn", "gpu", "model"} <= head:                      # node list
            for row in table:
                n = row.count("gpu") if row.text("gpu") else 0
                if n > 0:
                    kind = row.text("model") or "?"
                    raw.inventory[kind] = raw.inventory.get(kind, 0) + n
        elif {"name", "num_gpu", "creation_time"} <= head:
            if pods is not None:
                raise InvalidInputError("trace file", path, "a second pod list")
            table.require(POD_COLUMNS, "an openb pod list")
            pods = list(table)
        else:
            raise InvalidInputError("trace file", path, "neither an openb pod list nor an openb node list (header)")
    if pods is None:
        raise InvalidInputError("trace file", [p for p, _ in files], "openb2023 needs an openb_pod_list CSV")
    ends = [row.number("deletion_time") for row in pods if row.text("deletion_time")]
    end_of_trace = max(ends) if ends else 0.0
    used = {"name", "num_gpu", "gpu_milli", "gpu_spec", "creation_time", "deletion_time", "scheduled_time"}
    for row in pods:
        num = row.number("num_gpu", minimum=0) if row.text("num_gpu") else 0.0
        milli = row.number("gpu_milli", minimum=0) if row.text("gpu_milli") else 1000.0
        gpus = num * milli / 1000.0
        t_sub = row.number("creation_time")
        if gpus <= 0:
            raw.skip("no GPU", t_sub)
            continue
        if not row.text("scheduled_time"):
            raw.skip("never started", t_sub)
            continue
        start = row.number("scheduled_time")
        stop = row.number("deletion_time") if row.text("deletion_time") else end_of_trace
        censored = not row.text("deletion_time") or stop >= end_of_trace
        spec = row.text("gpu_spec")
        meta = {c: v for c, v in row.cells.items() if c not in used}
        meta["gpu_spec"] = spec
        raw.add(row.text("name"), t_sub, stop - start, censored, gpus, spec if spec and "|" not in spec else "", "",
                "", meta, start=start, where=row.where("name"))
    return raw
