"""QSGD's own Elias coding (``engine/kernels/elias.py``, ``qsgd(coding='elias')``): the
omega code as defined, the same values as the fixed-width codes in fewer bytes when levels
are small, and a damaged stream refused, never decoded into other values."""

import random

import numpy as np
import pytest
import torch

from thinwire.codecs import CodecState, CorruptMessageError, make_codec

from thinwire.engine import wire
from thinwire.engine.kernels import elias


def omega(k: int) -> str:
    """Elias's omega code, written from its definition."""
    code = "0"
    while k > 1:
        code = format(k, "b") + code
        k = k.bit_length() - 1
    return code


def stream_of(codes, bucket=4, bits=8):
    codes = np.asarray(codes, np.uint8)
    out = np.zeros((elias.stream_bits(codes, bucket, bits) + 7) // 8, np.uint8)
    assert elias.encode(codes, bucket, bits, out) == out.size
    return "".join(format(b, "08b") for b in out), elias.stream_bits(codes, bucket, bits)


def test_omega_code_lengths_and_known_codes():
    assert [omega(k) for k in (1, 2, 3, 4, 16)] == ["0", "100", "110", "101000", "10100100000"]
    for k in list(range(1, 5000)) + [2**20 + 3, 2**31 - 1]:
        assert elias.omega_bits(k) == len(omega(k)), k


def test_stream_layout_per_bucket():
    """Per bucket: omega(non-zeros + 1), then per non-zero omega(gap), the sign bit and
    omega(level); the last byte padded with zeros."""
    sign = 1 << 7
    bits, used = stream_of([0, 3, 0, 2 | sign, 0, 0, 0, 0], bucket=4)
    expected = (omega(3) + omega(2) + "0" + omega(3) + omega(2) + "1" + omega(2)) + omega(1)
    assert used == len(expected) and bits[:used] == expected and set(bits[used:]) <= {"0"}
    # long gaps and large levels leave the lookup table: the recursive path writes the same code
    codes = np.zeros(5000, np.int32)
    codes[4999] = 4095
    out = np.zeros((elias.stream_bits(codes, 8192, 13) + 7) // 8, np.uint8)
    elias.encode(codes, 8192, 13, out)
    back = np.zeros(5000, np.int32)
    assert elias.decode(out, 5000, 8192, 13, back) == 0 and np.array_equal(back, codes)


@pytest.mark.parametrize("bits,bucket", [(2, 64), (4, 512), (8, 512), (8, 7), (12, 1000), (16, 3)])
def test_elias_messages_decode_to_the_fixed_width_values(bits, bucket):
    """Same seed, same draws: the two codings carry the same codes, so decode equal."""
    x = torch.randn(10_007, generator=torch.Generator().manual_seed(bits)) ** 3
    x[100:700] = 0
    fixed = make_codec(f"qsgd(bits={bits}, bucket={bucket})")
    coded = make_codec(f"qsgd(bits={bits}, bucket={bucket}, coding='elias')")
    a, b = fixed.encode(x, CodecState(5), "g"), coded.encode(x, CodecState(5), "g")
    assert torch.equal(fixed.decode(a), coded.decode(b))
    payload = wire.measure(b)[0]
    assert payload == len(b) - wire.measure(b)[1]
    if bits <= 8 and bucket >= 64:  # small levels (large buckets, few bits): QSGD's coding is the shorter one
        assert len(b) < len(a)
    for n in (0, 1, 5):
        assert torch.equal(coded.decode(coded.encode(x[:n], CodecState(1), "g")),
                           fixed.decode(fixed.encode(x[:n], CodecState(1), "g")))


def test_fixed_coding_keeps_its_spec():
    """The default coding is left out of the spec, so the runs' results keep their keys."""
    assert make_codec("qsgd(bits=8, bucket=512)").spec() == "qsgd(bits=8, bucket=512, norm='l2')"
    assert make_codec("qsgd(coding='elias')").spec() == "qsgd(bits=8, bucket=512, norm='l2', coding='elias')"
    with pytest.raises(ValueError, match="coding='huffman' is not allowed: coding must be one of"):
        make_codec("qsgd(coding='huffman')")


def test_damaged_streams_are_corrupt_not_wrong():
    codec = make_codec("qsgd(bits=8, bucket=512, coding='elias')")
    x = torch.randn(20_000, generator=torch.Generator().manual_seed(0))
    message = codec.encode(x, CodecState(2), "g")
    good = codec.decode(message)
    rng = random.Random(0)
    refused = 0
    for _ in range(300):
        damaged = bytearray(message)
        damaged[rng.randrange(len(damaged))] ^= 1 << rng.randrange(8)
        try:
            assert torch.equal(codec.decode(damaged), good)
        except CorruptMessageError:
            refused += 1
    assert refused == 300  # the message's checksum sees every single flipped bit
    codes = np.zeros(600, np.uint8)
    codes[::3], codes[599] = 5, 7
    out = np.zeros((elias.stream_bits(codes, 512, 8) + 7) // 8, np.uint8)
    elias.encode(codes, 512, 8, out)
    back = np.zeros(600, np.uint8)
    assert elias.decode(out[:-3], 600, 512, 8, back) == elias.CORRUPT                     # cut short
    assert elias.decode(np.append(out, np.uint8(1)), 600, 512, 8, back) == elias.CORRUPT  # trailing data
    assert elias.decode(out, 599, 512, 8, back) == elias.CORRUPT                          # a position past the end
    assert elias.decode(out, 600, 512, 3, back) == elias.CORRUPT                          # a level past 2^(bits-1) - 1
