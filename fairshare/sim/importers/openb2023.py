"""Reader of Alibaba GPU 2023 (``cluster-trace-gpu-v2023``): ``openb_pod_list`` and optionally ``openb_node_list``."""

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


def read(files: Sequence[tuple[str, bytes]], columns: CsvColumns | None = None) -> _Raw:
    """The jobs of the GPU 2023 source ``files`` (name, bytes); ``columns`` is not used."""
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

