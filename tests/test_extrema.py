import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from thinwire.engine.kernels.extrema import CHUNK, extrema
from thinwire.codecs.quantize.minmax import value_range

finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


def torch_range(x: torch.Tensor) -> tuple[float, float]:
    lo, hi = torch.aminmax(x)
    return float(lo), float(hi)


@settings(max_examples=300, deadline=None)
@given(arrays(np.float32, st.integers(1, 300), elements=finite32))
def test_matches_aminmax_on_any_finite_values(values):
    x = torch.from_numpy(values)
    assert extrema(x) == torch_range(x)


@pytest.mark.parametrize("n", [CHUNK - 1, CHUNK, CHUNK + 1, 5 * CHUNK + 7])
@pytest.mark.parametrize("sign", ["both", "non-negative", "negative", "zeros with -0.0", "subnormal"])
def test_matches_aminmax_across_chunks_and_single_signs(n, sign):
    x = torch.randn(n, generator=torch.Generator().manual_seed(n))
    if sign == "non-negative":
        x = x.abs()
    elif sign == "negative":
        x = -x.abs() - 1e-3
    elif sign == "zeros with -0.0":
        x = torch.zeros(n)
        x[n // 3] = -0.0
    elif sign == "subnormal":
        x = x * 1e-40
    x[n - 1] = 7.5 if sign == "both" else x[n - 1]  # an extreme in the last, short chunk
    assert extrema(x) == torch_range(x)


@pytest.mark.parametrize("n", [10, 3 * CHUNK])
@pytest.mark.parametrize("special", [float("nan"), -float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_nan_and_inf_reach_an_end_and_value_range_rejects_them(n, special, sign):
    x = sign * torch.rand(n, generator=torch.Generator().manual_seed(0))
    x[n // 2] = special
    lo, hi = extrema(x)
    assert not (math.isfinite(lo) and math.isfinite(hi))
    with pytest.raises(ValueError, match="'layer' contains NaN or Inf"):
        value_range(x, "layer")


def test_other_dtypes_and_strided_views():
    x = torch.randn(400, 300, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    assert extrema(x) == torch_range(x.to(torch.float32))
    view = torch.randn(300, 400, generator=torch.Generator().manual_seed(2)).t()[::3]
    assert extrema(view) == torch_range(view)


def test_empty_is_rejected():
    with pytest.raises(ValueError, match="empty"):
        extrema(torch.empty(0))
