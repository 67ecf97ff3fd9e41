"""Tests of the modern GPU types: the rule modern-v1, its shipped file, its calibration and its labels."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fairshare.errors import InvalidInputError
from fairshare.sim.catalog import CATALOG_FILES, CATALOGS, DATA_DIR, load_catalog
from fairshare.sim.catalog.modern import (
    ALPHA,
    CALIBRATION_PAIRS,
    GPU_SPECS,
    PUBLISHED_CHECKS,
    RULE,
    calibration,
    derive_document,
    fit_alpha,
    speedup,
    summary_table,
)

ROOT = Path(__file__).resolve().parents[3]
MODERN = ("T4", "A10", "L4", "A100-40GB", "A100-80GB", "H100", "H200")
R50 = "ResNet-50 (batch size 64)"


@pytest.fixture(scope="module")
def measured():
    return load_catalog(("gavel-simulation", "h200"))


@pytest.fixture(scope="module")
def modern():
    return load_catalog("modern")


def test_shipped_file_is_the_rule_recomputed(measured) -> None:
    info = json.loads((DATA_DIR / "catalog_h200.json").read_text())["model_info"]
    shipped = json.loads((DATA_DIR / CATALOG_FILES["modern-derived"]).read_text())
    assert shipped == json.loads(json.dumps(derive_document(measured, info)))
    assert (DATA_DIR / "catalog_modern_derived.json").read_bytes() == \
        (ROOT / "models" / "catalog_modern_derived.json").read_bytes()
    assert shipped["kind"] == "derived" and shipped["name"] == f"derived:{RULE}"


def test_every_workload_runs_on_every_modern_type(modern) -> None:
    assert CATALOGS["modern"] == ("gavel-simulation", "h200", "modern-derived")
    for g in (*MODERN, "V100-16GB", "V100-32GB"):
        assert modern.runnable_models(1, [g]) == modern.models, g
    for m in modern.models:                                          # the H200 workloads got V100 figures too
        assert modern.supports(m, 1, "V100")


def test_default_catalog_is_unchanged_and_measured_only() -> None:
    d = load_catalog()
    assert d.gpu_types == ("K80", "P100", "V100", "H200") and not any(s.derived for s in d.sources)
    assert d.alone_throughput(R50, 1, "V100") == 4.394774823323071            # Gavel's number, exactly
    m = load_catalog("modern")
    for g in d.gpu_types:                                             # measured figures identical in "modern"
        gi, gm = d.gpu_index(g), m.gpu_index(g)
        have = d.alone_source[:, :, gi] >= 0
        np.testing.assert_array_equal(m.alone[:, :, gm][have], d.alone[:, :, gi][have])
        assert not any(m.sources[k].derived for k in np.unique(m.alone_source[:, :, gm][have]))


def test_every_derived_figure_is_labelled_and_follows_the_rule(modern, measured) -> None:
    k = next(i for i, s in enumerate(modern.sources) if s.derived)
    src = modern.sources[k]
    assert src.name == "derived:modern-v1" and "Derived (not measured)" in src.description
    for g in (*MODERN, "V100-16GB", "V100-32GB"):
        gi = modern.gpu_index(g)
        for m in modern.models:
            mi = modern.model_index(m)
            ref = "H200" if measured.supports(m, 1, "H200") else "V100"
            for s, scale in enumerate(modern.scales):
                if modern.alone_source[mi, s, gi] < 0:
                    continue
                if g == ref:
                    assert not modern.sources[modern.alone_source[mi, s, gi]].derived
                    continue
                assert modern.alone_source[mi, s, gi] == k
                expect = measured.alone_throughput(m, scale, ref) * speedup(ref, g)
                assert modern.alone[mi, s, gi] == pytest.approx(expect, rel=1e-11)
    # pairs keep the reference type's co-location fractions
    a, b = modern.pair_throughput(R50, "Transformer (batch size 64)", "T4")
    va, vb = measured.pair_throughput(R50, "Transformer (batch size 64)", "V100")
    assert (a, b) == pytest.approx((va * speedup("V100", "T4"), vb * speedup("V100", "T4")), rel=1e-11)
    assert modern.provenance(R50, 1, "T4", partner="Transformer (batch size 64)").derived
    assert modern.pair_throughput(R50, "gpt2_small_lm", "A100-80GB") == (0.0, 0.0)   # across families: none


def test_alpha_is_the_least_squares_fit_clamped(measured) -> None:
    alpha, best = fit_alpha(measured)
    assert alpha == ALPHA == 0.0
    # independent recomputation of the unconstrained optimum on the three same-model pairs
    b, c = math.log(4800 / 900), math.log(989.5 / 125)
    ys = [math.log(measured.alone_throughput(h, 1, "H200") / measured.alone_throughput(g, 1, "V100")) - b
          for g, h, fitted, _ in CALIBRATION_PAIRS if fitted]
    assert len(ys) == 3 and best == pytest.approx(sum(ys) / len(ys) / (c - b))
    assert best < 0                                             # compute peak ratios overpredict these pairs


def test_calibration_errors_are_recomputed_and_in_the_docs(measured) -> None:
    rows = calibration(measured)
    assert len(rows) == len(CALIBRATION_PAIRS) + len(PUBLISHED_CHECKS)
    for r, (g, h, fitted, _) in zip(rows, CALIBRATION_PAIRS, strict=False):
        measured_ratio = measured.alone_throughput(h, 1, "H200") / measured.alone_throughput(g, 1, "V100")
        assert r.error == pytest.approx((4800 / 900) / measured_ratio - 1) and r.fitted == fitted
    pub = rows[len(CALIBRATION_PAIRS):]
    assert pub[0].measured == pytest.approx(2470 / 1200) and pub[0].predicted == pytest.approx(2039 / 900)
    assert all(abs(r.error) < 0.15 for r in pub)                # the published A100 and V100-32GB checks
    fitted = [math.log(r.predicted / r.measured) for r in rows if r.fitted]
    rms = math.sqrt(sum(x * x for x in fitted) / len(fitted))
    assert rms == pytest.approx(0.531, abs=0.001)
    doc = (ROOT / "docs" / "catalog.md").read_text()
    assert summary_table(rows) in doc, "docs/catalog.md must show the recomputed calibration table"
    assert re.search(r"RMS[^|\n]*0\.53", doc)


@given(st.sampled_from(list(GPU_SPECS)), st.sampled_from(list(GPU_SPECS)), st.sampled_from(list(GPU_SPECS)),
       st.floats(0.0, 1.0))
def test_speedup_composes_and_inverts(a: str, b: str, c: str, alpha: float) -> None:
    assert speedup(a, a, alpha) == pytest.approx(1.0)
    assert speedup(a, b, alpha) * speedup(b, c, alpha) == pytest.approx(speedup(a, c, alpha), rel=1e-12)
    assert speedup(a, b, alpha) * speedup(b, a, alpha) == pytest.approx(1.0, rel=1e-12)


def test_unknown_gpu_has_no_speedup() -> None:
    with pytest.raises(InvalidInputError, match="no published specifications"):
        speedup("V100", "B200")


def test_memory_rule_keeps_a_workload_off_small_gpus(measured) -> None:
    info = {"gpt2_small_lm": {"peak_mem_gib": 20.0}}                 # would need 21 GiB
    doc = derive_document(measured, info)
    row = next(r for r in doc["alone"] if r["model"] == "gpt2_small_lm")
    assert "T4" not in row and "V100-16GB" not in row and "A10" in row and "A100-40GB" in row
    pair = next(p for p in doc["pairs"] if {p["a"], p["b"]} == {"gpt2_small_lm", "cyclegan"})
    assert "T4" not in pair and "H100" in pair


def test_a_measured_file_replaces_derived_figures_in_either_order(tmp_path: Path, modern) -> None:
    mine = {"format": "fairshare-catalog/1", "name": "my-t4", "kind": "measured",
            "source": {"description": "measured on our T4 nodes"}, "gpu_types": ["T4"], "models": [R50],
            "alone": [{"model": R50, "scale": 1, "T4": 1.234}]}
    path = tmp_path / "t4.json"
    path.write_text(json.dumps(mine))
    for order in (("modern", str(path)), (str(path), "modern")):
        cat = load_catalog(order)
        assert cat.alone_throughput(R50, 1, "T4") == 1.234
        assert cat.provenance(R50, 1, "T4").name == "my-t4"
        assert cat.provenance(R50, 2, "T4").derived                    # not measured: stays derived
    twice = tmp_path / "again.json"
    twice.write_text(json.dumps({**mine, "name": "again"}))
    with pytest.raises(InvalidInputError, match="already given by the earlier catalog part 'my-t4'"):
        load_catalog(("modern", str(path), str(twice)))
