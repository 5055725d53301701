import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from thinwire.codecs.kernels import bitpack


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


@pytest.mark.parametrize("bits", [1, 3, 7, 8, 9, 13, 16])
def test_round_trip_across_chunks_and_into_a_view(bits):
    n = 2 * bitpack.CHUNK + 1001
    codes = torch.randint(0, 2**bits, (n,), generator=torch.Generator().manual_seed(bits), dtype=torch.int32)
    buffer = torch.full((bitpack.packed_bytes(n, bits) + 3,), 0xAB, dtype=torch.uint8)
    packed = bitpack.pack(codes, bits, out=buffer[3:])  # an unaligned view, as in a message
    assert torch.equal(buffer[:3], torch.full((3,), 0xAB, dtype=torch.uint8))
    assert torch.equal(bitpack.unpack(packed, n, bits).to(torch.int32), codes)
    if bits <= 8:  # the layout: one LSB-first bitstream, code i at bits [i b, (i + 1) b)
        stream = np.unpackbits(packed.numpy(), bitorder="little")
        weights = 1 << np.arange(bits)
        assert np.array_equal(stream[: n * bits].reshape(n, bits) @ weights, codes.numpy())


def test_packed_sizes_are_dense():
    for bits in range(1, 9):
        assert bitpack.packed_bytes(800, bits) == 100 * bits


def test_wrong_length_is_rejected():
    with pytest.raises(ValueError, match="packed bytes"):
        bitpack.unpack(torch.zeros(3, dtype=torch.uint8), 10, 4)
