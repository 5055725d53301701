import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from thinwire.engine.kernels import bitpack

from widths import EVERYDAY, every_width


@pytest.mark.parametrize("bits", every_width())
@settings(max_examples=20, deadline=None)
@given(n=st.integers(0, 200), seed=st.integers(0, 1000))
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


@pytest.mark.parametrize("bits", EVERYDAY)
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


@pytest.mark.parametrize("bits", every_width())
def test_the_device_path_packs_the_same_bytes_as_the_host_kernels(bits):
    # torch_pack is what a GPU tensor takes (no copy to the host); here it runs on CPU tensors
    from thinwire.engine.kernels import torch_pack
    g = torch.Generator().manual_seed(bits)
    for n in (0, 1, 7, 8, 9, 1000, bitpack.CHUNK + 13):
        codes = torch.randint(0, 2 ** bits, (n,), generator=g, dtype=torch.int32)
        if bits <= 8:
            codes = codes.to(torch.uint8)
        host = bitpack.pack(codes, bits)
        assert torch.equal(torch_pack.pack(codes, bits), host), n
        out = torch.full((host.numel(),), 0xAA, dtype=torch.uint8)  # into a given buffer, every byte written
        assert torch_pack.pack(codes.to(torch.int64), bits, out=out) is out and torch.equal(out, host), n
        back = torch_pack.unpack(host, n, bits)
        assert back.dtype == bitpack.unpack(host, n, bits).dtype and torch.equal(back, bitpack.unpack(host, n, bits))
    with pytest.raises(ValueError, match="packed bytes"):
        torch_pack.unpack(torch.zeros(3, dtype=torch.uint8), 100, bits)
    with pytest.raises(ValueError, match="bits=17"):
        torch_pack.pack(torch.zeros(4, dtype=torch.int32), 17)
