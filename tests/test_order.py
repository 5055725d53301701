"""The host's radix select (``kernels/order.py``) against ``torch.kthvalue``, and gradient
dropping's order statistic on the host against the device path's torch operations."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from thinwire.engine.kernels import device, order
from thinwire.codecs.sparsify.drop_threshold import order_statistic

SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-45, -1e-45, 3.4e38, -3.4e38], np.float32)


def _kthvalue(values: np.ndarray, j: int) -> tuple[float, int]:
    t = torch.from_numpy(values)
    want = torch.kthvalue(t, j).values
    return float(want), int((t == want).sum())


def _same(a: float, b: float) -> bool:
    return (np.isnan(a) and np.isnan(b)) or a == b


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.one_of(st.floats(width=32), st.sampled_from(SPECIAL.tolist()),
                                 st.integers(-3, 3).map(float)), min_size=1, max_size=200),
       pick=st.floats(0, 1))
def test_the_radix_select_is_torch_kthvalue(values, pick):
    """Every j, on values with ties, both zeros, both infinities, NaN and subnormals: the same
    value (NaN above everything) and the same count of values equal to it."""
    x = np.array(values, np.float32)
    j = 1 + int(pick * (x.size - 1))
    got, equal = order.kth_smallest(x, j)
    want, want_equal = _kthvalue(x, j)
    assert _same(float(got), want) and equal == want_equal, (j, float(got), want, equal, want_equal)


@pytest.mark.parametrize("n", [1, 2, 2047, 25_000, 100_003])
def test_the_radix_select_at_every_rank_of_a_sample(n):
    """Magnitudes as gradient dropping selects them, at the first, last and paper's ranks."""
    x = torch.randn(n, generator=torch.Generator().manual_seed(n)).abs().numpy()
    for j in sorted({1, n, max(1, round(0.99 * (n + 1)) if round(0.99 * (n + 1)) <= n else n), (n + 1) // 2}):
        got, equal = order.kth_smallest(x, j)
        assert (float(got), equal) == _kthvalue(x, j), j


@pytest.mark.parametrize("kind", ["normal", "ties", "special"])
def test_the_host_order_statistic_is_the_device_paths(kind):
    """``order_statistic`` on the host (the radix select) and with the device path forced
    (torch's selection): the same float64 pair, bit for bit."""
    g = torch.Generator().manual_seed(3)
    if kind == "normal":
        x = torch.randn(25_000, generator=g).abs()
    elif kind == "ties":
        x = torch.randint(0, 4, (25_000,), generator=g).float() * 0.25
    else:
        x = torch.from_numpy(SPECIAL[torch.randint(0, SPECIAL.size, (5_000,), generator=g).numpy()]).abs()
    for j in (1, 2, 12_345 % x.numel() + 1, x.numel() - 1, x.numel()):
        host = order_statistic(x, j)
        with device.forced():
            forced = order_statistic(x, j)
        assert host.dtype == forced.dtype == torch.float64
        assert torch.equal(host.view(torch.int64), forced.view(torch.int64)) or \
            (host[0].isnan() and forced[0].isnan() and host[1] == forced[1]), (kind, j, host, forced)
