"""Convert the measured source data into fairshare's catalog files (run once; the outputs are committed).

Reads the read-only copies in ``shared/data/`` (checking each file's sha256 first), writes
``catalog_gavel_simulation.json``, ``catalog_gavel_physical.json``, ``catalog_h200.json`` and a byte copy
of ``philly_job_distribution.csv`` both into ``models/`` and into ``fairshare/data/`` (identical bytes),
and copies the raw H200 file and both source READMEs into ``models/sources/``.

The conversion only re-arranges numbers: every throughput is written with Python's shortest round-trip
``repr``, so each value equals the source value exactly. What is dropped, and why:

* Gavel's ``*_unconsolidated`` GPU keys (placement-sensitivity variants of multi-GPU jobs);
* Gavel's pair entries for scale factors 2/4/8 (all ``[0.0, 0.0]``: not measured; asserted below);
* the second direction of each Gavel pair (``T[A][B] == T[B][A][::-1]``; asserted below).

Usage::

    python models/convert_sources.py [--source-dir ../shared/data]
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT_DIRS = (ROOT / "models", ROOT / "fairshare" / "data")

SHA256 = {
    "gavel/simulation_throughputs.json": "17111f7295f03265fd9e5118d7eba31e3dd9d6e50a2e215c13ad3d3f91f74381",
    "gavel/physical_cluster_throughputs.json": "4b5acfe389951edf734df26caf5bbaacbbba2df60e340758c4ed220cd65f963c",
    "gavel/philly_job_distribution.csv": "7efbbc9cf231a8b75fb0485d799959cb85b91697682858573310395c77e9212f",
    "h200/h200_colocation.json": "cadd2ba27ee4f308c46c08612e118c6bcdff82cc7da1047896ac14adf3eb8edf",
}

GAVEL_REPO = "https://github.com/stanford-futuredata/gavel"
GAVEL_COMMIT = "c4fa40097339e9608ab71fd64c8bdea96a5e4a4c"
GAVEL_NOTICE = "Copyright (c) 2020 Stanford Future Data Systems"
MIT_TEXT = """MIT License

Copyright (c) 2020 Stanford Future Data Systems

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""

GAVEL_UNITS = ("iterations (training steps) per second of the whole job, measured by Gavel's "
               "scheduler/scripts/profiling/measure_throughput.py (num_steps / execution_time); for a job of "
               "scale k (k GPUs, data parallel, consolidated on one server) the value is the sum over the k "
               "workers. 0.0 = not runnable / not measured.")
H200_UNITS = ("iterations (forward + backward + optimizer step on one batch) per second, same unit as Gavel's "
              "tables; one process per job, scale 1. Pairs: two processes time-sliced on one GPU (default "
              "CUDA time-slicing, no MPS, no MIG).")
GAVEL_GPUS = {"k80": "K80", "p100": "P100", "v100": "V100"}

H200_NEAREST = {  # from shared/data/h200/README.md, table "What was measured"
    "resnet18_cifar10": "ResNet-18 (batch size 128)",
    "resnet50_imagenet": "ResNet-50 (batch size 64)",
    "gpt2_small_lm": None,
    "dlrm_recsys": None,
    "gpt2_medium_lora": None,
    "cyclegan": "CycleGAN",
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def dump(doc: dict[str, Any]) -> str:
    """JSON with one ``alone``/``pairs`` record per line (easy to read, grep and diff)."""
    lines = ["{"]
    items = list(doc.items())
    for i, (key, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if key in ("alone", "pairs"):
            lines.append(f"  {json.dumps(key)}: [")
            rows = [json.dumps(row, ensure_ascii=False) for row in value]
            lines += [f"    {row}," for row in rows[:-1]] + [f"    {rows[-1]}"]
            lines.append(f"  ]{comma}")
        else:
            body = json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n  ")
            lines.append(f"  {json.dumps(key)}: {body}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def convert_gavel(path: Path, name: str, repo_path: str, description: str) -> dict[str, Any]:
    raw = json.loads(path.read_text())
    gpus = list(GAVEL_GPUS)
    keys = list(raw["v100"])
    assert all(list(raw[g]) == keys for g in gpus), "job types differ between GPU types"
    models: list[str] = []
    alone = []
    for key in keys:
        model, scale = ast.literal_eval(key)
        if model not in models:
            models.append(model)
        alone.append({"model": model, "scale": scale, **{GAVEL_GPUS[g]: raw[g][key]["null"] for g in gpus}})
    pairs = []
    for key in keys:
        model, scale = ast.literal_eval(key)
        for other in keys:
            other_model, other_scale = ast.literal_eval(other)
            if other_scale != scale:
                continue
            for g in gpus:
                assert raw[g][key][other] == raw[g][other][key][::-1], (g, key, other)
                if scale != 1:
                    assert raw[g][key][other] == [0.0, 0.0], (g, key, other)
            if scale == 1 and models.index(model) <= models.index(other_model):
                pairs.append({"a": model, "b": other_model, "scale": 1,
                              **{GAVEL_GPUS[g]: raw[g][key][other] for g in gpus}})
    return {
        "format": "fairshare-catalog/1",
        "name": name,
        "kind": "measured",
        "source": {
            "description": description,
            "repository": GAVEL_REPO,
            "commit": GAVEL_COMMIT,
            "path": repo_path,
            "sha256": SHA256[f"gavel/{path.name}"],
            "license": "MIT",
            "notice": GAVEL_NOTICE,
            "license_text": MIT_TEXT,
            "converted_by": "models/convert_sources.py (keeps consolidated entries and scale-1 pairs only)",
        },
        "units": GAVEL_UNITS,
        "notes": [
            "GPU keys k80/p100/v100 are written K80/P100/V100; *_unconsolidated keys are not kept.",
            ("Each unordered pair is written once (a listed before b in `models`, self-pairs included); the "
             "source stores both directions with the list swapped."),
            ("Pairs of scale 2/4/8 are not written: all are [0.0, 0.0] in the source (space sharing was "
             "measured for single-GPU jobs only)."),
            ("A pair [0.0, 0.0] was measured as not co-locatable (did not fit together); an alone value 0.0 "
             "means the job cannot run on that type."),
        ],
        "gpu_types": [GAVEL_GPUS[g] for g in gpus],
        "models": models,
        "alone": alone,
        "pairs": pairs,
    }


def convert_h200(path: Path) -> dict[str, Any]:
    raw = json.loads(path.read_text())
    assert raw["gpu"] == "H200" and not raw["errors"]
    workloads = raw["workloads"]
    info = {}
    for name, w in workloads.items():
        info[name] = {"description": w["description"], "batch_size": w["batch_size"],
                      **({"seq_len": w["seq_len"]} if "seq_len" in w else {}),
                      "nearest_gavel_type": H200_NEAREST[name],
                      "alone_iters_per_s_repeat": w["alone_iters_per_s_repeat"],
                      "peak_mem_gib": w["peak_mem_gib"]}
    return {
        "format": "fairshare-catalog/1",
        "name": "h200",
        "kind": "measured",
        "source": {
            "description": "Measured for fairshare on one NVIDIA H200 (2026-11-29) by a PyTorch profiling "
                           "script: each workload alone, then all 21 unordered pairs (self-pairs included) "
                           "co-located by default CUDA time-slicing. Synthetic data, random init, bf16 "
                           "autocast. See models/sources/h200_README.md for method and caveats.",
            "path": "shared/data/h200/h200_colocation.json (copy: models/sources/h200_colocation.json)",
            "sha256": SHA256["h200/h200_colocation.json"],
            "license": "measured for this project; distributed under the project's license (MIT)",
            "converted_by": "models/convert_sources.py (keeps alone_iters_per_s and the pairs' iters/s)",
        },
        "units": H200_UNITS,
        "notes": [
            ("These are different workloads from Gavel's (see model_info.*.nearest_gavel_type); they are kept "
             "as models of their own, with data on H200 only."),
            ("One run with short windows: the repeat alone measurement differs by up to about 13 %; read pair "
             "sums within about 0.15 of 2.0 as no measurable interference."),
            "In a self-pair, a and b are two processes of the same workload.",
        ],
        "gpu_types": ["H200"],
        "models": list(workloads),
        "model_info": info,
        "alone": [{"model": n, "scale": 1, "H200": w["alone_iters_per_s"]} for n, w in workloads.items()],
        "pairs": [{"a": p["a"], "b": p["b"], "scale": 1, "H200": [p["a_iters_per_s"], p["b_iters_per_s"]]}
                  for p in raw["pairs"]],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source-dir", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args(argv)
    src: Path = args.source_dir
    for rel, digest in SHA256.items():
        got = sha256(src / rel)
        if got != digest:
            raise SystemExit(f"{src / rel}: sha256 {got} != expected {digest}")
    docs = {
        "catalog_gavel_simulation.json": convert_gavel(
            src / "gavel/simulation_throughputs.json", "gavel-simulation",
            "scheduler/simulation_throughputs.json",
            "Gavel (OSDI 2020) measured throughputs used by all of the paper's simulations, K80/P100/V100."),
        "catalog_gavel_physical.json": convert_gavel(
            src / "gavel/physical_cluster_throughputs.json", "gavel-physical",
            "scheduler/physical_cluster_throughputs.json",
            "Gavel (OSDI 2020) throughputs used for the physical-cluster runs, K80/P100/V100 (146 entries "
            "differ from the simulation file)."),
        "catalog_h200.json": convert_h200(src / "h200/h200_colocation.json"),
    }
    for out in OUT_DIRS:
        out.mkdir(parents=True, exist_ok=True)
        for fname, doc in docs.items():
            (out / fname).write_text(dump(doc), encoding="utf-8")
        shutil.copyfile(src / "gavel/philly_job_distribution.csv", out / "philly_job_distribution.csv")
    sources = ROOT / "models" / "sources"
    sources.mkdir(exist_ok=True)
    shutil.copyfile(src / "h200/h200_colocation.json", sources / "h200_colocation.json")
    shutil.copyfile(src / "h200/README.md", sources / "h200_README.md")
    shutil.copyfile(src / "gavel/README.md", sources / "gavel_README.md")
    (ROOT / "models" / "LICENSE-gavel.txt").write_text(MIT_TEXT, encoding="utf-8")


if __name__ == "__main__":
    main()
