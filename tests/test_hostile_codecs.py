"""Inputs that used to decode to silently wrong values: integer and bool tensors through
lossy codecs, a float32 range wider than float32 holds, float16 values whose decode exceeds
float16's range."""

import pytest
import torch

from thinwire.codecs import make_codec
from thinwire.codecs.state import CodecState

SPECS = ["fp32", "fp16", "topk(ratio=0.5)", "quantize(bits=8)", "qsgd(bits=8)", "binquant(bits=4)",
         "oland_raj(c=5, m=4)", "graddrop(ratio=0.5)", "ef(topk(ratio=0.5))"]
NOT_FLOAT = [torch.tensor([127, -128, 5, 0], dtype=torch.int8), torch.tensor([False, True, False, True]),
             torch.tensor([1, 2, 3, 4], dtype=torch.uint16), torch.tensor([1, 2, 3, 4], dtype=torch.uint32),
             torch.tensor([1, 2, 3, 4], dtype=torch.int64)]


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("x", NOT_FLOAT, ids=lambda x: str(x.dtype))
def test_integer_and_bool_tensors_are_refused_by_name(spec, x):
    codec = make_codec(spec)
    with pytest.raises(ValueError, match=rf"tensor 'w' has dtype {x.dtype}: codecs send floating-point"):
        codec.encode(x, CodecState(0), "w")


def test_one_bit_quantization_of_a_range_wider_than_float32():
    x = torch.tensor([-2e38, 2e38, 0.0, 1.0, -1e38, 3e38])
    codec = make_codec("quantize(bits=1)")
    y = codec.decode(codec.encode(x, CodecState(0), "w"))
    assert torch.isfinite(y).all()
    assert ((y - x).abs().double() <= (3e38 + 2e38) / 2 * (1 + 1e-6)).all()  # the documented bound
    assert y[0] == x[0] and y[5] == x[5]  # the ends are levels


@pytest.mark.parametrize("spec", ["qsgd(bits=8)", "qsgd(bits=4, norm='max')", "quantize(bits=2)", "binquant(bits=3)"])
def test_float16_values_never_decode_to_inf(spec):
    x = torch.full((512,), 65000.0, dtype=torch.float16)
    x[::3] = -65504.0
    codec = make_codec(spec)
    for seed in range(5):
        y = codec.decode(codec.encode(x, CodecState(seed), "w"))
        assert y.dtype == torch.float16 and torch.isfinite(y).all(), spec
