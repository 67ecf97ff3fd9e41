"""The core's numpy helpers (fairshare._arrays) against the numpy calls they replace."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fairshare._validate import row_max


@given(hnp.arrays(st.sampled_from([np.float64, np.int64]), hnp.array_shapes(min_dims=2, max_dims=2, min_side=1),
                  elements=st.integers(-1000, 1000)))
def test_row_max_is_numpy_max_over_rows(a: np.ndarray) -> None:
    got = row_max(a)
    np.testing.assert_array_equal(got, a.max(axis=1))
    assert got.dtype == a.dtype


def test_row_max_of_floats_is_exact_and_leaves_its_input_alone() -> None:
    a = np.random.default_rng(0).standard_normal((500, 5)) * 1e300
    before = a.copy()
    assert row_max(a).tobytes() == a.max(axis=1).tobytes()
    np.testing.assert_array_equal(a, before)
    assert np.isnan(row_max(np.array([[1.0, np.nan]])))[0]


@pytest.mark.parametrize("shape", [(3,), (3, 0), (2, 2, 2)])
def test_row_max_names_a_bad_shape(shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="row_max"):
        row_max(np.zeros(shape))
