"""Tests of fairshare.sim.catalog: shipped data against the READMEs' numbers, lookups, the Catalog class.

Loading files: test_catalog_files.py; derived models: test_catalog_derive.py; co-location candidates:
test_catalog_colocation.py.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fairshare.sim.catalog as catalog_pkg
from fairshare.errors import InvalidInputError
from fairshare.sim.catalog import CATALOG_FILES, DATA_DIR, Catalog, Source, load_catalog

ROOT = Path(__file__).resolve().parents[3]
SHARED = ROOT.parent / "shared" / "data"
GAVEL_GPUS = ("K80", "P100", "V100")
R50 = "ResNet-50 (batch size 64)"
TR64 = "Transformer (batch size 64)"


CAT = load_catalog()


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return CAT


# ---------------------------------------------------------------------- shipped data
def test_default_catalog_shape(cat: Catalog) -> None:
    assert cat.gpu_types == ("K80", "P100", "V100", "H200")
    assert cat.scales == (1, 2, 4, 8)
    assert len(cat.models) == 26 + 6
    assert cat.alone.shape == (32, 4, 4)
    assert cat.pair.shape == (4, 4, 32, 32, 2)
    assert not cat.alone.flags.writeable and not cat.pair.flags.writeable


@pytest.mark.parametrize(("model", "gpu", "value"), [
    (R50, "V100", 4.3948), (R50, "P100", 2.619), (R50, "K80", 0.619), (TR64, "V100", 8.618),
    (TR64, "K80", 1.752), ("LM (batch size 20)", "P100", 58.17), ("ResNet-18 (batch size 64)", "V100", 24.09),
    ("Recommendation (batch size 512)", "V100", 23.32), ("resnet18_cifar10", "H200", 102.31),
    ("resnet50_imagenet", "H200", 41.93), ("gpt2_small_lm", "H200", 16.81), ("cyclegan", "H200", 11.62),
])
def test_alone_numbers_from_readmes(cat: Catalog, model: str, gpu: str, value: float) -> None:
    assert cat.alone_throughput(model, 1, gpu) == pytest.approx(value, abs=6e-3)


def test_multi_gpu_numbers_from_readme(cat: Catalog) -> None:
    got = cat.throughput_matrix([R50] * 4, [1, 2, 4, 8], ["V100"]).ravel()
    np.testing.assert_allclose(got, [4.39, 7.92, 9.45, 17.30], atol=6e-3)


@pytest.mark.parametrize(("gpu", "pair"), [("K80", (0.348, 0.767)), ("P100", (1.494, 2.396)),
                                           ("V100", (2.550, 1.774))])
def test_pair_numbers_from_readme(cat: Catalog, gpu: str, pair: tuple[float, float]) -> None:
    assert cat.pair_throughput(R50, TR64, gpu) == pytest.approx(pair, abs=6e-4)
    assert cat.pair_throughput(TR64, R50, gpu) == pytest.approx(pair[::-1], abs=6e-4)


def test_h200_pairs(cat: Catalog) -> None:
    assert cat.pair_throughput("resnet18_cifar10", "resnet50_imagenet", "H200") == pytest.approx((101.06, 33.96),
                                                                                                 abs=6e-3)
    assert cat.pair_throughput("gpt2_small_lm", "gpt2_small_lm", "H200") == pytest.approx((7.91, 7.95), abs=6e-3)
    h = [cat.model_index(m) for m in cat.runnable_models(1, ["H200"])]
    sub = cat.pair[0, 3][np.ix_(h, h)]
    assert len(h) == 6 and (sub > 0).all()                          # all 21 unordered pairs measured


def test_pairs_symmetric_and_zero_counts(cat: Catalog) -> None:
    off = ~np.eye(len(cat.models), dtype=bool)                         # self-pairs: two processes a, b
    np.testing.assert_array_equal(cat.pair[:, :, off], cat.pair.swapaxes(2, 3)[..., ::-1][:, :, off])
    assert not cat.pair[1:].any()                                   # scale 2/4/8: no pair data
    gavel = [cat.model_index(m) for m in cat.runnable_models(1, GAVEL_GPUS)]
    assert len(gavel) == 26
    zeros = [int((cat.pair[0, g][np.ix_(gavel, gavel)][..., 0] == 0).sum()) for g in range(3)]
    assert zeros == [87, 20, 40]                                    # README: 87/676, 20/676, 40/676


def test_v100_combined_normalised_median(cat: Catalog) -> None:
    g = cat.gpu_index("V100")
    idx = [cat.model_index(m) for m in cat.runnable_models(1, GAVEL_GPUS)]
    P = cat.pair[0, g][np.ix_(idx, idx)]
    iso = cat.alone[idx, 0, g]
    iu = np.triu_indices(len(idx))
    score = (P[..., 0] / iso[:, None] + P[..., 1] / iso[None, :])[iu][P[..., 0][iu] > 0]
    assert np.median(score) == pytest.approx(1.37, abs=0.005)
    assert score.max() == pytest.approx(2.0, abs=1e-9)


def test_h200_workloads_are_separate_models(cat: Catalog) -> None:
    h = cat.runnable_models(1, ["H200"])
    assert h == ("resnet18_cifar10", "resnet50_imagenet", "gpt2_small_lm", "dlrm_recsys", "gpt2_medium_lora",
                 "cyclegan")
    assert cat.runnable_models(1, GAVEL_GPUS) == cat.models[:26]
    assert not cat.supports(R50, 1, "H200") and not cat.supports("resnet50_imagenet", 1, "V100")
    assert cat.provenance(R50, 1, "H200") is None
    assert all(not s.derived for s in cat.sources)


def test_k80_not_runnable_entries() -> None:
    sim, phys = load_catalog("default"), load_catalog("physical")
    big = "ResNet-50 (batch size 128)"
    assert [sim.supports(big, s, "K80") for s in (1, 2, 4, 8)] == [True, False, False, False]
    assert not phys.supports(big, 1, "K80") and phys.supports(big, 1, "V100")
    assert sim.provenance(big, 2, "K80").name == "gavel-simulation"    # a measured 0.0, not a gap


def test_provenance(cat: Catalog) -> None:
    src = cat.provenance(R50, 1, "V100")
    assert src.name == "gavel-simulation" and not src.derived and src.license == "MIT"
    assert src.sha256 == "17111f7295f03265fd9e5118d7eba31e3dd9d6e50a2e215c13ad3d3f91f74381"
    assert cat.provenance("cyclegan", 1, "H200", partner="dlrm_recsys").name == "h200"
    assert cat.provenance(R50, 2, "V100", partner=R50) is None          # no multi-GPU pair data
    assert cat.provenance(R50, 3, "V100") is None                       # no such scale


def test_package_copies_are_identical() -> None:
    names = [*CATALOG_FILES.values(), "philly_job_distribution.csv"]
    for name in names:
        assert (DATA_DIR / name).read_bytes() == (ROOT / "models" / name).read_bytes(), name


def test_gavel_notice_kept() -> None:
    for name in ("catalog_gavel_simulation.json", "catalog_gavel_physical.json"):
        doc = json.loads((DATA_DIR / name).read_text())
        assert doc["source"]["license"] == "MIT"
        assert "Copyright (c) 2020 Stanford Future Data Systems" in doc["source"]["license_text"]
    assert "Stanford Future Data Systems" in (ROOT / "models" / "LICENSE-gavel.txt").read_text()


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared/data not beside the repository")
@pytest.mark.parametrize(("name", "source"), [("default", "gavel/simulation_throughputs.json"),
                                              ("physical", "gavel/physical_cluster_throughputs.json")])
def test_gavel_values_equal_source(name: str, source: str) -> None:
    raw_bytes = (SHARED / source).read_bytes()
    cat = load_catalog(name)
    assert hashlib.sha256(raw_bytes).hexdigest() == cat.provenance(R50, 1, "V100").sha256
    raw = json.loads(raw_bytes)
    for key_g, gpu in zip(("k80", "p100", "v100"), GAVEL_GPUS):
        g = cat.gpu_index(gpu)
        for key, entry in raw[key_g].items():
            model, scale = ast.literal_eval(key)
            m, s = cat.model_index(model), cat.scale_index(scale)
            assert cat.alone[m, s, g] == entry["null"]
            for other, tp in entry.items():
                if other != "null":
                    o = cat.model_index(ast.literal_eval(other)[0])
                    assert cat.pair[s, g, m, o].tolist() == tp


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared/data not beside the repository")
def test_h200_values_equal_source(cat: Catalog) -> None:
    raw_bytes = (SHARED / "h200" / "h200_colocation.json").read_bytes()
    assert raw_bytes == (ROOT / "models" / "sources" / "h200_colocation.json").read_bytes()
    raw = json.loads(raw_bytes)
    assert hashlib.sha256(raw_bytes).hexdigest() == cat.provenance("cyclegan", 1, "H200").sha256
    for name, w in raw["workloads"].items():
        assert cat.alone_throughput(name, 1, "H200") == w["alone_iters_per_s"]
    for p in raw["pairs"]:
        assert cat.pair_throughput(p["a"], p["b"], "H200") == (p["a_iters_per_s"], p["b_iters_per_s"])


# ---------------------------------------------------------------------- lookups and errors
def test_throughput_matrix(cat: Catalog) -> None:
    T = cat.throughput_matrix([R50, "gpt2_small_lm", R50], [1, 1, 3], ["H200", "V100"])
    assert T.shape == (3, 2) and T.dtype == np.float64
    assert T[0, 0] == 0 and T[0, 1] == pytest.approx(4.3948, abs=1e-4)
    assert T[1, 0] == pytest.approx(16.81, abs=6e-3) and T[1, 1] == 0
    assert (T[2] == 0).all()                                           # scale 3: no data
    idx = np.array([cat.model_index(R50), cat.model_index("gpt2_small_lm")])
    np.testing.assert_array_equal(cat.throughput_matrix(idx, [1, 1], ["H200", "V100"]), T[:2])
    assert cat.throughput_matrix([], [], ["V100"]).shape == (0, 1)


@pytest.mark.parametrize(("call", "match"), [
    (lambda c: c.throughput_matrix([R50, "nope"], [1, 1], ["V100"]), r"`models\[1\]` = 'nope': unknown model"),
    (lambda c: c.throughput_matrix([R50], [1], ["A100"]), r"`gpu_type` = 'A100': unknown GPU type"),
    (lambda c: c.throughput_matrix([R50], [0], ["V100"]), r"`scales\[0\]` = 0: must be a positive integer"),
    (lambda c: c.throughput_matrix([R50], [1.5], ["V100"]), r"`scales\[0\]` = 1.5: must be a positive"),
    (lambda c: c.throughput_matrix([R50], [1, 1], ["V100"]), r"`scales` = \(2,\): expected 1 scales"),
    (lambda c: c.throughput_matrix(np.array([99]), [1], ["V100"]), r"`models\[0\]` = 99: model index"),
    (lambda c: c.throughput_matrix(np.array([0, -1]), [1, 1], ["V100"]), r"`models\[1\]` = -1: model index out of"),
    (lambda c: c.throughput_matrix([R50], [True], ["V100"]), r"`scales\[0\]` = True: must be a positive integer"),
    (lambda c: c.throughput_matrix([R50, R50], [1, np.nan], ["V100"]), r"`scales\[1\]` = nan: must be a positive"),
    (lambda c: c.throughput_matrix([R50], ["1"], ["V100"]), r"`scales\[0\]` = '1': must be a positive integer"),
    (lambda c: c.throughput_matrix([R50], [1], ["V100", "V100"]), r"`gpu_types` = .*duplicate GPU type"),
    (lambda c: c.throughput_matrix([R50], [1], "V100"), r"`gpu_types` = 'V100': must be a sequence"),
    (lambda c: c.model_index("ResNet-50"), r"`model` = 'ResNet-50': unknown model"),
    (lambda c: c.supports(R50, 1, "TPU"), r"`gpu_type` = 'TPU'"),
    (lambda c: c.scale_index(-2), r"`scale` = -2: must be a positive integer"),
    (lambda c: c.colocation_candidates([R50], [1], ["V100"], max_per_job=-1), r"`max_per_job` = -1"),
    (lambda c: c.colocation_candidates([R50], [1], ["V100"], max_per_job=1.5), r"`max_per_job` = 1.5"),
])
def test_lookup_errors(cat: Catalog, call, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        call(cat)


def test_select_gpu_types() -> None:
    v = load_catalog(gpu_types=["V100"])
    assert v.gpu_types == ("V100",) and len(v.models) == 26 and v.alone.shape == (26, 4, 1)
    h = load_catalog(gpu_types=["H200", "K80"])
    assert h.gpu_types == ("H200", "K80") and len(h.models) == 32
    assert h.alone_throughput("cyclegan", 1, "H200") == pytest.approx(11.618, abs=1e-3)
    assert h.pair_throughput(R50, TR64, "K80") == pytest.approx((0.348, 0.767), abs=6e-4)
    with pytest.raises(InvalidInputError, match=r"`gpu_type` = 'A100'"):
        load_catalog(gpu_types=["A100"])



# ---------------------------------------------------------------------- the Catalog class
def _tiny(**changes: object) -> Catalog:
    """A one-model, two-GPU catalog; ``changes`` replace constructor arguments."""
    args: dict[str, Any] = dict(
        gpu_types=("a", "b"), models=("m",), scales=(1,), alone=np.array([[[1.0, 2.0]]]),
        pair=np.zeros((1, 2, 1, 1, 2)), sources=(Source("s", False, "test"),),
        alone_source=np.zeros((1, 1, 2), np.int64), pair_source=np.full((1, 2, 1, 1), -1))
    args.update(changes)
    return Catalog(**args)


def test_catalog_arrays_read_only_and_typed() -> None:
    cat = _tiny(alone=[[[1, 2]]])
    assert cat.alone.dtype == np.float64 and cat.alone_source.dtype == np.int64
    assert not any(a.flags.writeable for a in (cat.alone, cat.pair, cat.alone_source, cat.pair_source))
    assert cat.alone_throughput("m", 1, "b") == 2.0 and cat.scale_index(2) == -1


def test_catalog_caches_are_derived_not_arguments() -> None:
    init = [f.name for f in dataclasses.fields(Catalog) if f.init]
    assert init == ["gpu_types", "models", "scales", "alone", "pair", "sources", "alone_source", "pair_source"]
    cat = dataclasses.replace(CAT, gpu_types=("P", "Q", "R", "S"))      # caches rebuilt by __post_init__
    assert cat.gpu_index("S") == 3 and cat.model_index(R50) == CAT.model_index(R50)
    with pytest.raises(InvalidInputError, match="`gpu_type` = 'V100'"):
        cat.gpu_index("V100")


@pytest.mark.parametrize(("changes", "match"), [
    ({"gpu_types": ("a", "a")}, r"`gpu_types` = 'a': duplicate name"),
    ({"scales": (0,)}, r"`scales` = \(0,\): must be increasing positive integers"),
    ({"alone": np.zeros((1, 1, 3))}, r"`alone` = \(1, 1, 3\): expected shape \(1, 1, 2\)"),
    ({"alone": np.array([[[1.0, -2.0]]])}, r"`alone\[0\]\[0\]\[1\]` = -2.0: throughputs must be finite and >= 0"),
    ({"pair": np.full((1, 2, 1, 1, 2), np.nan)}, r"`pair\[0\]\[0\]\[0\]\[0\]\[0\]` = nan: throughputs must"),
    ({"pair_source": np.zeros((1, 1, 1, 1))}, r"`alone_source/pair_source` = .*wrong shape"),
    ({"alone_source": np.full((1, 1, 2), 1)}, r"`alone_source` = 1: source indices must be in \[-1, 1\)"),
])
def test_catalog_rejects_bad_arrays(changes: dict, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        _tiny(**changes)


def test_public_names() -> None:
    assert sorted(catalog_pkg.__all__) == sorted(["CATALOGS", "CATALOG_FILES", "DATA_DIR", "DERIVATIONS",
                                                  "CatalogFileInfo", "Catalog", "Source", "inspect_file",
                                                  "load_catalog"])
    for name in catalog_pkg.__all__:
        assert name in (catalog_pkg.__doc__ or ""), name               # the docstring indexes every name
