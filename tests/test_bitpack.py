import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from thinwire.codecs import bitpack


@settings(max_examples=150, deadline=None)
@given(bits=st.integers(1, 16), n=st.integers(0, 200), seed=st.integers(0, 1000))
def test_pack_round_trip(bits, n, seed):
    g = torch.Generator().manual_seed(seed)
    codes = torch.randint(0, 2**bits, (n,), generator=g)
    codes = codes.to(torch.uint8 if bits <= 8 else torch.int32)
    packed = bitpack.pack(codes, bits)
    assert packed.dtype == torch.uint8
    assert packed.numel() == bitpack.packed_bytes(n, bits)
    if bits <= 8:
        assert packed.numel() == (n * bits + 7) // 8
    assert torch.equal(bitpack.unpack(packed, n, bits).long(), codes.long())


def test_packed_sizes_are_dense():
    for bits in range(1, 9):
        assert bitpack.packed_bytes(800, bits) == 100 * bits


def test_wrong_length_is_rejected():
    with pytest.raises(ValueError, match="packed bytes"):
        bitpack.unpack(torch.zeros(3, dtype=torch.uint8), 10, 4)
