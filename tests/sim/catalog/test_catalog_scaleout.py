"""The derived scaling rule for gangs beyond 8 GPUs (``scale-out``): its values, labels, calibration, CLI."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairshare.cli import main
from fairshare.errors import InvalidInputError
from fairshare.sim.catalog import Catalog, Source, load_catalog
from fairshare.sim.catalog.scaleout import DESCRIPTION, SCALES, calibration, derive_scale_out, summary_table

R50 = "ResNet-50 (batch size 64)"


@pytest.fixture(scope="module")
def base() -> Catalog:
    return load_catalog()


@pytest.fixture(scope="module")
def out() -> Catalog:
    return load_catalog(("default", "scale-out"))


def test_rule_values_from_the_measured_scaling(base: Catalog, out: Catalog) -> None:
    assert out.scales == (1, 2, 4, 8, 16, 32, 64, 128)
    for gpu in ("K80", "P100", "V100"):
        t1, t8 = base.alone_throughput(R50, 1, gpu), base.alone_throughput(R50, 8, gpu)
        d = min(max((t8 / t1) ** (1 / 3), 1.0), 2.0)
        for s in SCALES:
            assert out.alone_throughput(R50, s, gpu) == pytest.approx(t8 * d ** math.log2(s / 8), rel=1e-12)
            src = out.provenance(R50, s, gpu)
            assert src is not None and src.derived and src.name == "derived:scale-out-v1"
    # the measured figures and their labels are untouched
    for s in base.scales:
        np.testing.assert_array_equal(out.alone[:, out.scale_index(s)], base.alone[:, base.scale_index(s)])
        assert not out.provenance(R50, s, "V100").derived


def test_no_figure_beyond_8_without_one_at_8_and_no_pairs(base: Catalog, out: Catalog) -> None:
    i8 = base.scale_index(8)
    for m in range(len(base.models)):
        for g in range(len(base.gpu_types)):
            has8 = base.alone[m, i8, g] > 0 and base.alone[m, 0, g] > 0
            assert (out.alone[m, out.scale_index(16):, g] > 0).all() == has8
            assert has8 or not (out.alone[m, out.scale_index(16):, g] > 0).any()
    assert out.alone_throughput("resnet50_imagenet", 16, "H200") == 0    # measured at one GPU only
    big = [out.scale_index(s) for s in SCALES]
    assert (out.pair_source[big] < 0).all() and not out.pair[big].any()


def test_named_derivation_in_a_catalog_list(out: Catalog) -> None:
    assert load_catalog(derive=["scale-out"]) is out
    assert load_catalog("scale-out") is out                                 # alone: over the default catalog
    modern = load_catalog(("modern", "scale-out"))
    assert modern.alone_throughput(R50, 32, "H100") > modern.alone_throughput(R50, 8, "H100") > 0
    with pytest.raises(InvalidInputError, match="scale-out"):
        load_catalog(("default", "scale-in"))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.05, 50.0), min_size=4, max_size=4))
def test_rule_is_monotone_and_never_superlinear(t: list[float]) -> None:
    cat = Catalog(gpu_types=("X",), models=("m",), scales=(1, 2, 4, 8), alone=np.array(t).reshape(1, 4, 1),
                  pair=np.zeros((4, 1, 1, 1, 2)), sources=(Source("s", False, "test"),),
                  alone_source=np.zeros((1, 4, 1), np.int64), pair_source=np.full((4, 1, 1, 1), -1, np.int64))
    d = derive_scale_out(cat)
    ts = [d.alone_throughput("m", s, "X") for s in (8, *SCALES)]
    for a, b in zip(ts, ts[1:], strict=False):
        assert a <= b * (1 + 1e-12) and b <= 2 * a * (1 + 1e-12)


def test_calibration_is_what_the_label_says(base: Catalog) -> None:
    rows = calibration(base)
    one = np.array([r.error for r in rows if r.doublings == 1])
    assert len(one) == 56
    # the numbers stated in the source's description (and docs/catalog.md) are the measured ones
    stated = re.search(r"median \|error\| (\d+) %, 90th percentile (\d+) %", DESCRIPTION)
    assert stated is not None
    assert round(100 * float(np.median(np.abs(one)))) == int(stated.group(1))
    assert round(100 * float(np.quantile(np.abs(one), 0.9))) == int(stated.group(2))
    assert (one < 0).mean() > 0.5                                           # "mostly pessimistic"
    r = next(r for r in rows if r.model == R50 and r.gpu_type == "K80" and r.doublings == 1)
    t = [base.alone_throughput(R50, s, "K80") for s in (1, 2, 4, 8)]
    assert r.predicted == pytest.approx(t[2] * min(max((t[2] / t[0]) ** 0.5, 1), 2)) and r.measured == t[3]
    assert "| 8 GPUs from 1, 2, 4 (one doubling) | 56 |" in summary_table(rows)


def test_cli_lists_shows_and_calibrates(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "calibration"]) == 0
    assert "scale-out-v1" in capsys.readouterr().out
    assert main(["catalog", "show", R50, "--catalog", "default", "--catalog", "scale-out"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("128 "))
    assert row.split()[2::2] == ["d", "d", "d"]
    assert main(["catalog"]) == 0
    assert "scale-out        gangs of 16" in capsys.readouterr().out


def test_the_calibration_table_in_the_docs_is_the_computed_one(base: Catalog) -> None:
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[3] / "docs" / "catalog.md").read_text()
    assert summary_table(calibration(base)) in docs
