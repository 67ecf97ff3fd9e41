"""Tests of fairshare.sim.catalog.derive: opt-in derived models, marked as derived, never overwriting data."""

from __future__ import annotations

import numpy as np
import pytest

from fairshare.sim.catalog import DERIVATIONS, Catalog, load_catalog
from fairshare.sim.catalog.derive import _family

R50 = "ResNet-50 (batch size 64)"
TR64 = "Transformer (batch size 64)"


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def test_gavel_on_h200_is_opt_in_and_marked_derived(cat: Catalog) -> None:
    d = load_catalog(derive=["gavel-on-h200"])
    assert cat.alone_throughput(R50, 1, "H200") == 0
    # the reference type takes exactly the H200 workload's measured speed; other batch sizes scale with V100
    assert d.alone_throughput(R50, 1, "H200") == pytest.approx(cat.alone_throughput("resnet50_imagenet", 1, "H200"))
    ratio = cat.alone_throughput("resnet50_imagenet", 1, "H200") / cat.alone_throughput(R50, 1, "V100")
    b16 = "ResNet-50 (batch size 16)"
    assert d.alone_throughput(b16, 2, "H200") == pytest.approx(ratio * cat.alone_throughput(b16, 2, "V100"))
    assert d.provenance(R50, 1, "H200").derived and "nearest" in d.provenance(R50, 1, "H200").description
    assert not d.provenance(R50, 1, "V100").derived
    assert not d.provenance("resnet50_imagenet", 1, "H200").derived
    assert d.alone_throughput("LM (batch size 20)", 1, "H200") == 0      # no nearest H200 workload
    assert d.alone_throughput(TR64, 1, "H200") == 0
    # pairs keep the measured fractions of the nearest workloads
    x = d.pair_throughput(R50, "resnet18_cifar10", "H200")
    assert x == pytest.approx(cat.pair_throughput("resnet50_imagenet", "resnet18_cifar10", "H200"))
    assert d.provenance(R50, 1, "H200", partner="resnet18_cifar10").derived
    assert d.pair_throughput("resnet18_cifar10", "cyclegan", "H200") == cat.pair_throughput(
        "resnet18_cifar10", "cyclegan", "H200")
    off = ~np.eye(len(d.models), dtype=bool)
    np.testing.assert_array_equal(d.pair[:, :, off], d.pair.swapaxes(2, 3)[..., ::-1][:, :, off])
    assert d.pair_throughput(R50, TR64, "H200") == (0.0, 0.0)



@pytest.mark.parametrize("name", ["default", "physical"])
def test_derivation_only_adds_entries(name: str) -> None:
    cat, d = load_catalog(name), load_catalog(name, derive=["gavel-on-h200"])
    assert d.models == cat.models and d.gpu_types == cat.gpu_types and d.sources[:-1] == cat.sources
    assert d.sources[-1].name == "derived:gavel-on-h200" and d.sources[-1].derived
    k = len(cat.sources)
    kept = cat.alone_source >= 0                                        # measured entries are untouched
    np.testing.assert_array_equal(d.alone[kept], cat.alone[kept])
    np.testing.assert_array_equal(d.alone_source[kept], cat.alone_source[kept])
    np.testing.assert_array_equal(d.alone[~kept & (d.alone_source != k)], 0)
    kept_p = cat.pair_source >= 0
    np.testing.assert_array_equal(d.pair[kept_p], cat.pair[kept_p])
    new = d.alone_source == k                                           # derived: H200 only, where V100 ran
    assert new.any() and (new[:, :, [g for g in range(len(d.gpu_types)) if d.gpu_types[g] != "H200"]] == 0).all()


def test_family_and_registry() -> None:
    assert list(DERIVATIONS) == ["gavel-on-h200", "scale-out"]
    assert _family("ResNet-18 (batch size 128)") == "ResNet-18" and _family("gpt2_small_lm") == "gpt2_small_lm"
