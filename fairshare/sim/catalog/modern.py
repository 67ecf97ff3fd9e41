"""Modern GPU types for every workload: the derivation rule ``modern-v1`` and its calibration.

Measured data covers Gavel's K80/P100/V100 (26 job types) and one H200 (six workloads). The named catalog
``"modern"`` adds T4, A10, L4, A100-40GB, A100-80GB, H100 and H200 for Gavel's job types, the same types and
V100 for the H200 workloads, and the two memory variants of the V100 (V100-16GB, V100-32GB). Every added
figure is **derived** by the rule below and shipped in the catalog file ``catalog_modern_derived.json``
(``kind: "derived"``), which :func:`derive_document` recomputes exactly (``tests/sim/catalog/test_catalog_modern.py``).

Rule ``modern-v1``
------------------
A workload keeps, on a target GPU type ``x``, its measured throughput on its reference type ``r`` (the V100
for Gavel's job types, the H200 for the H200 workloads) times a speed-up computed from the two GPUs'
published specifications (:data:`GPU_SPECS`, NVIDIA datasheets)::

    S(r -> x) = (B_x / B_r) ** (1 - alpha) * (C_x / C_r) ** alpha

with ``B`` the memory bandwidth and ``C`` the dense 16-bit tensor-core peak. ``alpha`` weighs compute
against memory bandwidth. It is calibrated (:func:`fit_alpha`) on the measured V100 -> H200 pairs of the same
model and batch size (ResNet-18 bs128, ResNet-50 bs64, CycleGAN) by least squares on the logarithms,
constrained to ``[0, 1]``. The unconstrained optimum is slightly negative, so ``alpha = 0``: the calibrated
rule scales with memory bandwidth alone. Its error on all six pairs and on published per-GPU benchmark
ratios is :func:`calibration` (and ``docs/catalog.md``).

* Every scale with reference data is scaled by the same factor (the total over the job's GPUs);
  interconnects (NVLink, PCIe) are not modelled.
* A workload runs on ``x`` only if it fits in its memory: H200 workloads need their measured peak memory
  plus :data:`MEMORY_MARGIN_GIB`; Gavel's job types ran on 16 GB V100s and every target has at least 16 GB.
* Co-location pairs (scale 1) keep the fraction of the alone throughput that each job kept next to its
  partner on the reference type: ``T_x(a|b) = T_x(a) * T_r(a|b) / T_r(a)``. Pairs are derived only within
  one reference type (Gavel with Gavel, H200 with H200).
* Measured figures are never replaced (the targets have no measured data for those workloads).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fairshare.errors import InvalidInputError
from fairshare.sim.catalog._catalog import Catalog

__all__ = ["ALPHA", "CALIBRATION_PAIRS", "GPU_SPECS", "MEMORY_MARGIN_GIB", "PUBLISHED_CHECKS", "RULE",
           "CalibrationRow", "GpuSpec", "calibration", "derive_document", "fit_alpha", "speedup"]

RULE = "modern-v1"
"""Name and version of the rule; the derived catalog's source is ``"derived:modern-v1"``."""

ALPHA = 0.0
"""The calibrated weight of compute against memory bandwidth (:func:`fit_alpha` on the same-model pairs)."""

MEMORY_MARGIN_GIB = 1.0
"""GiB added to a workload's measured peak memory (CUDA context, about 0.5 GiB, and allocator slack)."""


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """Published specifications of one GPU type (the figures the rule uses).

    Attributes
    ----------
    name : str
        The catalog's GPU type name.
    product : str
        The product the figures belong to (form factor included).
    tensor_tflops : float
        Dense FP16/BF16 tensor-core peak, TFLOPS (datasheets quote twice this "with sparsity" since Ampere).
    bandwidth_gbs : float
        Memory bandwidth, GB/s.
    memory_gb : float
        Memory, GB (10^9 bytes).
    source : str
        Where the figures are published.
    """

    name: str
    product: str
    tensor_tflops: float
    bandwidth_gbs: float
    memory_gb: float
    source: str

    @property
    def memory_gib(self) -> float:
        """Memory in GiB (2^30 bytes)."""
        return self.memory_gb * 1e9 / 2**30


_V100_SHEET = "NVIDIA Tesla V100 GPU Accelerator datasheet (SXM2: 125 TFLOPS tensor, 900 GB/s HBM2, 16 or 32 GB)"
GPU_SPECS: dict[str, GpuSpec] = {s.name: s for s in (
    GpuSpec("V100", "Tesla V100 SXM2 16 GB (the GPU of Gavel's measurements)", 125.0, 900.0, 16.0, _V100_SHEET),
    GpuSpec("V100-16GB", "Tesla V100 SXM2 16 GB", 125.0, 900.0, 16.0, _V100_SHEET),
    GpuSpec("V100-32GB", "Tesla V100 SXM2 32 GB", 125.0, 900.0, 32.0, _V100_SHEET),
    GpuSpec("T4", "T4 (PCIe, 70 W)", 65.0, 320.0, 16.0,
            "NVIDIA T4 Tensor Core GPU datasheet (mixed precision FP16/FP32 65 TFLOPS, 320 GB/s GDDR6, 16 GB)"),
    GpuSpec("A10", "A10 (PCIe, 150 W)", 125.0, 600.0, 24.0,
            "NVIDIA A10 Tensor Core GPU datasheet (BF16/FP16 tensor 125 TFLOPS, 250 with sparsity; 600 GB/s "
            "GDDR6; 24 GB)"),
    GpuSpec("L4", "L4 (PCIe, 72 W)", 121.0, 300.0, 24.0,
            "NVIDIA L4 Tensor Core GPU datasheet (FP16/BF16 tensor 242 TFLOPS with sparsity, 121 dense; 300 GB/s "
            "GDDR6; 24 GB)"),
    GpuSpec("A100-40GB", "A100 SXM4 40 GB", 312.0, 1555.0, 40.0,
            "NVIDIA A100 Tensor Core GPU datasheet (BF16/FP16 tensor 312 TFLOPS, 624 with sparsity; 40 GB HBM2 "
            "1,555 GB/s)"),
    GpuSpec("A100-80GB", "A100 SXM4 80 GB", 312.0, 2039.0, 80.0,
            "NVIDIA A100 Tensor Core GPU datasheet (BF16/FP16 tensor 312 TFLOPS; 80 GB HBM2e 2,039 GB/s, SXM)"),
    GpuSpec("H100", "H100 SXM5 80 GB", 989.5, 3350.0, 80.0,
            "NVIDIA H100 Tensor Core GPU datasheet (SXM: BF16/FP16 tensor 1,979 TFLOPS with sparsity, 989.5 "
            "dense; 3.35 TB/s HBM3; 80 GB)"),
    GpuSpec("H200", "H200 SXM 141 GB (the GPU of the H200 measurements)", 989.5, 4800.0, 141.0,
            "NVIDIA H200 Tensor Core GPU datasheet (SXM: BF16/FP16 tensor 1,979 TFLOPS with sparsity, 989.5 "
            "dense; 4.8 TB/s HBM3e; 141 GB)"),
)}
"""Published figures of every GPU type the rule uses, by catalog name."""

GAVEL_REFERENCE = "V100"
H200_REFERENCE = "H200"
GAVEL_TARGETS = ("V100-16GB", "V100-32GB", "T4", "A10", "L4", "A100-40GB", "A100-80GB", "H100", "H200")
"""Types derived for Gavel's job types (reference: Gavel's measured V100)."""
H200_TARGETS = ("V100", "V100-16GB", "V100-32GB", "T4", "A10", "L4", "A100-40GB", "A100-80GB", "H100")
"""Types derived for the H200 workloads (reference: the measured H200)."""

CALIBRATION_PAIRS: tuple[tuple[str, str, bool, str], ...] = (
    ("ResNet-18 (batch size 128)", "resnet18_cifar10", True, "same model and batch size"),
    ("ResNet-50 (batch size 64)", "resnet50_imagenet", True, "same model and batch size"),
    ("CycleGAN", "cyclegan", True, "same model and batch size"),
    ("Transformer (batch size 16)", "gpt2_small_lm", False,
     "loose: a GPT-2 language model against Gavel's seq2seq Transformer"),
    ("Recommendation (batch size 8192)", "dlrm_recsys", False,
     "loose: DLRM against Gavel's autoencoder recommender, same batch size"),
    ("Transformer (batch size 16)", "gpt2_medium_lora", False,
     "no Gavel counterpart: LoRA fine-tuning against the nearest transformer type"),
)
"""The six measured V100 -> H200 pairs: (Gavel type on V100, H200 workload, used to fit alpha, how close)."""

PUBLISHED_CHECKS: tuple[tuple[str, str, float, str, float, str], ...] = (
    ("ResNet-50 v1.5, mixed precision, 1 GPU (img/s)", "V100-16GB", 1200.0, "A100-80GB", 2470.0,
     "NVIDIA DeepLearningExamples, PyTorch/Classification/ConvNets/resnet50v1.5/README.md, training "
     "performance (pytorch-21.03 container)"),
    ("ResNet-50 v1.5, FP32 on V100 / TF32 on A100, 1 GPU (img/s)", "V100-16GB", 367.0, "A100-80GB", 938.0,
     "same table"),
    ("ResNet-50 v1.5, mixed precision, 1 GPU (img/s)", "V100-16GB", 1200.0, "V100-32GB", 1156.0, "same table"),
    ("ResNet-50 v1.5, FP32, 1 GPU (img/s)", "V100-16GB", 367.0, "V100-32GB", 356.0, "same table"),
)
"""Published per-GPU training throughputs the rule is checked against (not fitted):
(benchmark, type a, value on a, type b, value on b, source)."""


def speedup(src: str, dst: str, alpha: float = ALPHA) -> float:
    """The rule's speed-up from GPU type ``src`` to ``dst``.

    Examples
    --------
    >>> round(speedup("V100", "H200"), 3), round(speedup("V100", "T4"), 3), speedup("V100", "V100-32GB")
    (5.333, 0.356, 1.0)
    >>> round(speedup("V100", "H200", alpha=1.0), 3)  # compute-bound: the tensor-core ratio
    7.916
    """
    for name in (src, dst):
        if name not in GPU_SPECS:
            raise InvalidInputError("gpu_type", name, f"no published specifications (known: {', '.join(GPU_SPECS)})")
    a, b = GPU_SPECS[src], GPU_SPECS[dst]
    return float((b.bandwidth_gbs / a.bandwidth_gbs) ** (1.0 - alpha) * (b.tensor_tflops / a.tensor_tflops) ** alpha)


def _ratios(cat: Catalog, only_fitted: bool) -> list[tuple[float, str, str, str, bool, str]]:
    out = []
    for gavel, h200, fitted, note in CALIBRATION_PAIRS:
        if only_fitted and not fitted:
            continue
        v = cat.alone_throughput(gavel, 1, GAVEL_REFERENCE)
        h = cat.alone_throughput(h200, 1, H200_REFERENCE)
        if v <= 0 or h <= 0:
            raise InvalidInputError("catalog", (gavel, h200), "needs the measured V100 and H200 figures")
        out.append((h / v, gavel, h200, note, fitted, ""))
    return out


def fit_alpha(cat: Catalog) -> tuple[float, float]:
    """``(alpha, unconstrained optimum)``: least squares of the log speed-up on the same-model pairs.

    The model is ``log S = log B_ratio + alpha (log C_ratio - log B_ratio)`` for the V100 -> H200 pairs of
    :data:`CALIBRATION_PAIRS` marked for fitting; ``alpha`` is the optimum clamped to ``[0, 1]``.
    """
    b = math.log(GPU_SPECS[H200_REFERENCE].bandwidth_gbs / GPU_SPECS[GAVEL_REFERENCE].bandwidth_gbs)
    c = math.log(GPU_SPECS[H200_REFERENCE].tensor_tflops / GPU_SPECS[GAVEL_REFERENCE].tensor_tflops)
    ys = [math.log(r[0]) - b for r in _ratios(cat, True)]
    best = sum(ys) / len(ys) / (c - b)
    return min(1.0, max(0.0, best)), best


@dataclass(frozen=True, slots=True)
class CalibrationRow:
    """One check of the rule: a measured (or published) ratio against the rule's speed-up.

    ``error = predicted / measured - 1`` (positive: the rule is too optimistic).
    """

    what: str
    src: str
    dst: str
    measured: float
    predicted: float
    fitted: bool
    note: str

    @property
    def error(self) -> float:
        """Relative error of the rule, ``predicted / measured - 1``."""
        return self.predicted / self.measured - 1.0


def calibration(cat: Catalog, alpha: float = ALPHA) -> list[CalibrationRow]:
    """The rule's error on the six measured V100 -> H200 pairs, then on :data:`PUBLISHED_CHECKS`.

    ``cat`` must hold the measured Gavel (V100) and H200 figures, e.g. ``load_catalog("default")``.

    Examples
    --------
    >>> from fairshare.sim.catalog import load_catalog
    >>> rows = calibration(load_catalog())
    >>> [f"{r.error:+.0%}" for r in rows[:3]]
    ['-6%', '-44%', '+103%']
    """
    pred = speedup(GAVEL_REFERENCE, H200_REFERENCE, alpha)
    rows = [CalibrationRow(f"{g} (V100) -> {h} (H200)", GAVEL_REFERENCE, H200_REFERENCE, ratio, pred, fitted, note)
            for ratio, g, h, note, fitted, _ in _ratios(cat, False)]
    rows += [CalibrationRow(f"{what}: {a} -> {b}", a, b, vb / va, speedup(a, b, alpha), False, src)
             for what, a, va, b, vb, src in PUBLISHED_CHECKS]
    return rows


def _fits(info: dict[str, Any], gpu: str) -> bool:
    peak = info.get("peak_mem_gib")
    return peak is None or float(peak) + MEMORY_MARGIN_GIB <= GPU_SPECS[gpu].memory_gib


def _clean(x: float) -> float:
    """A derived figure as stored: 12 significant digits (the rule is not more precise than that)."""
    return float(f"{x:.12g}")


def derive_document(cat: Catalog, model_info: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The catalog file (format ``fairshare-catalog/1``, ``kind: "derived"``) of rule ``modern-v1``.

    Parameters
    ----------
    cat : Catalog
        The measured catalog the rule starts from: Gavel's simulation throughputs and the H200 measurements
        (``load_catalog(("gavel-simulation", "h200"))``).
    model_info : dict, optional
        ``model_info`` of the H200 file (peak memory per workload, for the memory rule).

    Returns
    -------
    dict
        The document written to ``catalog_modern_derived.json`` (``models/derive_modern.py``).
    """
    info = model_info or {}
    s1 = cat.scale_index(1)
    v = cat.gpu_index(GAVEL_REFERENCE)
    gavel_models = [m for m in cat.models if (cat.alone[cat.model_index(m), :, v] > 0).any()]
    h200_models = [m for m in cat.models if cat.alone[cat.model_index(m), s1, cat.gpu_index(H200_REFERENCE)] > 0]
    families = ((GAVEL_REFERENCE, GAVEL_TARGETS, gavel_models), (H200_REFERENCE, H200_TARGETS, h200_models))
    alone_rows: list[dict[str, Any]] = []
    pair_rows: list[dict[str, Any]] = []
    for ref, targets, models in families:
        r = cat.gpu_index(ref)
        for m in models:
            i = cat.model_index(m)
            for s, scale in enumerate(cat.scales):
                base = float(cat.alone[i, s, r])
                if base <= 0:
                    continue
                row: dict[str, Any] = {"model": m, "scale": scale}
                for x in targets:
                    if _fits(info.get(m, {}), x):
                        row[x] = _clean(base * speedup(ref, x))
                alone_rows.append(row)
        for a_pos, a in enumerate(models):
            for b in models[a_pos:]:
                ia, ib = cat.model_index(a), cat.model_index(b)
                pa, pb = (float(v) for v in cat.pair[s1, r, ia, ib])
                if min(cat.alone[ia, s1, r], cat.alone[ib, s1, r], pa, pb) <= 0:
                    continue
                prow: dict[str, Any] = {"a": a, "b": b, "scale": 1}
                for x in targets:
                    if _fits(info.get(a, {}), x) and _fits(info.get(b, {}), x):
                        k = speedup(ref, x)       # T_x(a|b) = T_x(a) T_r(a|b) / T_r(a) = k T_r(a|b)
                        prow[x] = [_clean(k * pa), _clean(k * pb)]
                pair_rows.append(prow)
    alpha, unconstrained = fit_alpha(cat)
    rows = calibration(cat, alpha)
    gpus = sorted({g for row in alone_rows for g in row if g not in ("model", "scale")},
                  key=lambda g: list(GPU_SPECS).index(g))
    models = [m for m in cat.models if m in gavel_models or m in h200_models]
    return {
        "format": "fairshare-catalog/1",
        "name": f"derived:{RULE}",
        "kind": "derived",
        "source": {
            "description": (
                f"Derived (not measured) by rule {RULE}: a workload's throughput on a target GPU type is its "
                "measured throughput on its reference type (Gavel's V100 for Gavel's job types, the H200 for the "
                "H200 workloads) times S = (B_x/B_r)^(1-alpha) * (C_x/C_r)^alpha, B the memory bandwidth and C "
                "the dense FP16/BF16 tensor peak from NVIDIA's datasheets, alpha = "
                f"{alpha:g} calibrated on the measured V100 -> H200 pairs of the same model (so S is the "
                "bandwidth ratio). Same factor at every scale; a workload runs only where its measured peak "
                f"memory + {MEMORY_MARGIN_GIB:g} GiB fits; pairs keep the reference type's co-location "
                "fractions. Rule, sources and errors: docs/catalog.md, 'The modern catalog'."),
            "rule": RULE,
            "license": "derived by fairshare from measured data (Gavel: MIT; H200: project) and published "
                       "specifications",
        },
        "units": "iterations per second, as the measured files",
        "derivation": {
            "rule": RULE,
            "alpha": alpha,
            "alpha_unconstrained": unconstrained,
            "memory_margin_gib": MEMORY_MARGIN_GIB,
            "reference": {"gavel-simulation job types": GAVEL_REFERENCE, "h200 workloads": H200_REFERENCE},
            "gpu_specs": {g: {"product": s.product, "tensor_tflops_dense": s.tensor_tflops,
                              "bandwidth_gbs": s.bandwidth_gbs, "memory_gb": s.memory_gb, "source": s.source}
                          for g, s in GPU_SPECS.items()},
            "calibration": [{"check": c.what, "measured_ratio": _clean(c.measured), "rule": _clean(c.predicted),
                             "error": _clean(c.error), "fitted": c.fitted, "note": c.note} for c in rows],
        },
        "gpu_types": gpus,
        "models": models,
        "alone": alone_rows,
        "pairs": pair_rows,
    }


def summary_table(rows: Sequence[CalibrationRow]) -> str:
    """The calibration as a Markdown table (docs and ``fairshare catalog --calibration``)."""
    lines = ["| check | measured | rule | error | fitted |", "|:---|---:|---:|---:|:---:|"]
    for r in rows:
        lines.append(f"| {r.what} | {r.measured:.3g} | {r.predicted:.3g} | {r.error:+.0%} | "
                     f"{'yes' if r.fitted else 'no'} |")
    return "\n".join(lines) + "\n"
