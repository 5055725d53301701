"""Streamed (non-temporal) stores (``kernels/stream.py``): the bytes they write, and every
kernel that streams large outputs gives the same values streamed as written in place, at
any alignment of the output and any length."""

import crc32c
import numba
import numpy as np
import pytest
import torch

from thinwire.codecs import CodecState, CorruptMessageError, make_codec
from thinwire.engine.kernels import bitpack, crc, half, qsgd, scatter, stream, uniform


@pytest.fixture
def always_stream():
    """Every output counts as large, so the streamed path runs on small tensors, computed
    outputs too on any CPU (``stream.streaming``)."""
    with stream.streaming():
        yield


@pytest.fixture
def small_outputs_stream():
    """Every output counts as large; computed outputs stream only where this CPU's do."""
    with stream.streaming(0, stream.BUILT_STREAMED):
        yield


@numba.njit
def _stream_out(src, dst, at):
    stream.stream_out(src, dst, at, dst.ctypes.data)


@pytest.mark.parametrize("length", [0, 1, 63, 64, 65, 200, 1000])
@pytest.mark.parametrize("at", [0, 1, 7, 64, 100])
def test_stream_out_writes_exactly_its_bytes(length, at):
    rng = np.random.default_rng(length * 1000 + at)
    src = rng.integers(0, 256, length, dtype=np.uint8)
    dst = rng.integers(0, 256, at + length + 70, dtype=np.uint8)
    want = dst.copy()
    want[at:at + length] = src
    _stream_out(src, dst, at)
    assert np.array_equal(dst, want)


def test_streaming_is_for_large_outputs_only():
    assert not stream.worth_streaming(stream.STREAM_MIN_BYTES - 1)
    assert stream.worth_streaming(stream.STREAM_MIN_BYTES)


@pytest.mark.parametrize("built_streamed", [False, True])
def test_computed_outputs_stream_only_where_the_cpu_gains(built_streamed):
    threshold = stream.STREAM_MIN_BYTES
    with stream.streaming(threshold, built_streamed):
        large, small = np.empty(threshold // 4, np.float32), np.empty(100, np.float32)
        assert stream.destination(large).size == large.nbytes and stream.destination(small).size == 0
        assert stream.destination(large, built=True).size == (large.nbytes if built_streamed else 0)
        assert stream.destination(small, built=True).size == 0
    assert stream.STREAM_MIN_BYTES == threshold  # the module's policy back


@pytest.mark.parametrize("bits", [1, 3, 8, 12, 16])
@pytest.mark.parametrize("n", [1, 1000, 3 * bitpack.CHUNK + 17])
@pytest.mark.parametrize("offset", [0, 1, 5])
def test_dequantize_streamed_equals_in_place(always_stream, bits, n, offset):
    rng = np.random.default_rng(bits * n)
    codes = torch.from_numpy(rng.integers(0, 1 << bits, n).astype(np.int32))
    packed = bitpack.pack(codes, bits)
    want = codes.to(torch.float32) * np.float32(0.25) + np.float32(-3.0)
    room = torch.full((n + offset + 3,), 7.0)
    got = uniform.dequantize_packed(packed, n, bits, -3.0, 0.25, out=room[offset:offset + n])
    assert torch.equal(got, want)
    assert torch.all(room[:offset] == 7.0) and torch.all(room[offset + n:] == 7.0)


def _in_place_and_streamed(monkeypatch, fn):
    """``fn()`` with outputs written in place, then streamed."""
    plain = fn()
    with stream.streaming():
        return plain, fn()


@pytest.mark.parametrize("bits", [2, 8, 12])
@pytest.mark.parametrize("bucket", [7, 512])
@pytest.mark.parametrize("offset", [0, 3])
def test_qsgd_dequantize_streamed_equals_in_place(monkeypatch, bits, bucket, offset):
    n = 2 * qsgd.CHUNK + 999
    rng = np.random.default_rng(bits + bucket)
    packed = bitpack.pack(torch.from_numpy(rng.integers(0, 1 << bits, n).astype(np.int32)), bits).numpy()
    step = rng.random(-(-n // bucket)).astype(np.float32)

    def decode():
        room = np.full(n + offset + 5, 7.0, np.float32)
        qsgd.dequantize_packed(packed, bucket, step, bits, room[offset:offset + n])
        return room
    plain, streamed = _in_place_and_streamed(monkeypatch, decode)
    assert np.array_equal(plain, streamed)
    assert np.all(streamed[:offset] == 7.0) and np.all(streamed[offset + n:] == 7.0)


@pytest.mark.parametrize("density", [0.0, 0.01, 0.5])
@pytest.mark.parametrize("offset", [0, 1])
def test_sparse_decode_streamed_equals_in_place(monkeypatch, density, offset):
    n = 3 * scatter.CHUNK + 77
    rng = np.random.default_rng(int(density * 100) + offset)
    index = torch.from_numpy(np.flatnonzero(rng.random(n) < density))
    values = torch.from_numpy(rng.standard_normal(index.numel()).astype(np.float32))

    def decode():
        room = torch.full((n + offset + 5,), 7.0)
        scatter.zeros_with(room[offset:offset + n], index, values)
        return room
    plain, streamed = _in_place_and_streamed(monkeypatch, decode)
    assert torch.equal(plain, streamed)
    want = torch.zeros(n)
    want[index] = values
    assert torch.equal(streamed[offset:offset + n], want) and torch.all(streamed[:offset] == 7.0)


@pytest.mark.parametrize("n", [0, 1, 100, stream.PIECE - 1, 2 * stream.PIECE + 333])
@pytest.mark.parametrize("offset", [0, 24])
def test_checksummed_copy_gives_the_bytes_and_their_crc(always_stream, n, offset):
    rng = np.random.default_rng(n + offset)
    src = rng.integers(0, 256, n, dtype=np.uint8)
    room = np.zeros(n + offset + 64, np.uint8)
    got = stream.copy(src, room[offset:offset + n], checksum=True)
    assert np.array_equal(room[offset:offset + n], src) and not room[:offset].any() and not room[offset + n:].any()
    assert got == (crc32c.crc32c(src) if crc.HARDWARE else None)


@pytest.mark.parametrize("copy", ["checked_copy", "_checksum_then_copy"])
def test_a_piece_copied_with_its_crc_at_any_alignment(copy):
    """One piece of ``stream.copy``: the folding copy (where the CPU folds) streams whole
    256-byte steps from the destination's first aligned line and folds from the source's
    first byte; every length around a step, at every alignment of either side."""
    rng = np.random.default_rng(9)
    kernel = getattr(stream, copy)
    for n in [0, 1, 63, 64, 255, 256, 257, 319, 320, 511, 512, 513, 575, 1000, 4096 + 77]:
        for src_at in (0, 5):
            for dst_at in (0, 1, 33, 63):
                src = rng.integers(0, 256, n + src_at, dtype=np.uint8)[src_at:]
                room = rng.integers(0, 256, n + 128, dtype=np.uint8)
                want = room.copy()
                want[dst_at:dst_at + n] = src
                dst = room[dst_at:dst_at + n]
                got = kernel(src, dst, dst.ctypes.data)
                assert np.array_equal(room, want), (n, src_at, dst_at)
                assert got == crc32c.crc32c(src), (n, src_at, dst_at)


NO_FOLD = r"""
import crc32c, numpy as np
from thinwire.engine.kernels import crc, stream
assert crc.HARDWARE and not crc.FOLD
src = np.random.default_rng(3).integers(0, 256, stream.STREAM_MIN_BYTES + 3 * stream.PIECE + 77, dtype=np.uint8)
room = np.zeros(src.size + 64, np.uint8)
assert stream.copy(src, room[7:7 + src.size], checksum=True) == crc32c.crc32c(src)
assert np.array_equal(room[7:7 + src.size], src)
"""


@pytest.mark.skipif(not crc.FOLD, reason="this CPU does not fold: the suite's own runs take the other path")
def test_the_checksummed_copy_compiles_and_runs_where_the_cpu_cannot_fold(tmp_path):
    """A CPU with the ``crc32`` instruction but not ``VPCLMULQDQ``: the folding copy is not
    compiled, and the copy checksums by the instruction's streams."""
    import os
    import subprocess
    import sys

    from thinwire.engine.kernels.vector_width import target_features
    features = ",".join(sorted(f for f in target_features() if f not in ("+vpclmulqdq", "+avx512f"))
                        ) + ",-vpclmulqdq,-avx512f"
    env = dict(os.environ, NUMBA_CPU_FEATURES=features, NUMBA_CACHE_DIR=str(tmp_path))
    subprocess.run([sys.executable, "-c", NO_FOLD], env=env, check=True, timeout=300)


def test_parallel_checksum_is_the_crc32c_of_the_bytes():
    rng = np.random.default_rng(1)
    for n in (0, 1, 7, 8 * 256 * 3 + 5, crc.PIECE, 3 * crc.PIECE + 12345):
        data = rng.integers(0, 256, n, dtype=np.uint8)
        assert crc.checksum(data) == crc32c.crc32c(data)


@pytest.mark.parametrize("spec", ["fp32", "fp16", "bf16"])
def test_dense_messages_streamed_equal_in_place(monkeypatch, spec):
    """The same message bytes and decoded bits either way; a damaged message is refused,
    before any value reaches ``out`` or, where fp32 verifies it as it copies the values
    out (``wire/checked_copy.py``), with ``out`` set to NaN."""
    x = torch.randn(3 * stream.PIECE // 4 + 17, generator=torch.Generator().manual_seed(0))
    x[3], x[9] = float("nan"), float("-inf")
    codec = make_codec(spec)

    def round_trip():
        message = codec.encode(x, CodecState(0), "x")
        out = torch.full_like(x, 7.0)
        codec.decode(message, CodecState(0), "x", out=out)
        return bytes(message), out
    (plain_message, plain_out), (message, out) = _in_place_and_streamed(monkeypatch, round_trip)
    assert message == plain_message and torch.equal(out.view(torch.int32), plain_out.view(torch.int32))
    damaged = bytearray(message)
    damaged[len(damaged) // 2] ^= 0x10
    out = torch.full_like(x, 7.0)
    with pytest.raises(CorruptMessageError):
        codec.decode(damaged, CodecState(0), "x", out=out)
    if codec.checks_own_copy(damaged, out):
        assert torch.all(out.view(torch.int32) == -1)  # fp32 copies, fp16 and bf16 widen, as they check
    else:
        assert torch.all(out == 7.0)


@pytest.mark.parametrize("bf16", [False, True])
def test_16_bit_conversions_give_torchs_bits(bf16):
    """Every float32 class (normal, subnormal, overflowing, ties, zeros, infinities) and,
    for half, NaN payloads: the kernels' bits are torch's. bfloat16 turns every NaN into
    0x7FC0 (torch's vectorized cast writes 0xFFFF, its scalar one 0x7FC0)."""
    rng = np.random.default_rng(int(bf16))
    bits = np.concatenate([rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32),
                           np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x477FF000, 0x477FEFFF, 0x38000000,
                                     0x33000000, 0x33000001, 0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x00000001,
                                     0x7FC00000, 0xFF800001, 0x7FBFFFFF], dtype=np.uint32)])
    x = bits.view(np.float32)
    dtype = torch.bfloat16 if bf16 else torch.float16
    want = torch.from_numpy(x).to(dtype).view(torch.int16).numpy().view(np.uint16).copy()
    nan = np.isnan(x)
    if bf16:
        want[nan] = 0x7FC0
    got = np.empty(x.size, np.uint16)
    half.narrow(x, got, bf16)
    assert np.array_equal(got, want)
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    back = np.empty(every.size, np.float32)
    half.widen(every, back, bf16)
    want_back = torch.from_numpy(every.view(np.int16)).view(dtype).to(torch.float32).numpy()
    assert np.array_equal(back.view(np.uint32), want_back.view(np.uint32))


@pytest.mark.parametrize("bf16", [False, True])
def test_a_checked_widening_gives_torchs_bits_and_the_crc_at_any_length(bf16):
    """``widen(..., checksum=True)``, which where ``half.folded`` folds each piece's CRC
    in the loop that widens it: every 16-bit pattern, and lengths around a fold step and a
    piece (the rest after the last whole step widened and checksummed apart)."""
    dtype = torch.bfloat16 if bf16 else torch.float16
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    rng = np.random.default_rng(3)
    # each pattern's float32 bits from torch's vectorized cast (its scalar one, which a short
    # tail takes, quiets NaN payloads differently)
    table = torch.from_numpy(every.view(np.int16)).view(dtype).to(torch.float32).numpy().view(np.uint32)
    pool = np.concatenate([every, rng.integers(0, 1 << 16, 3 * half.PIECE, dtype=np.uint32).astype(np.uint16)])
    for n in (0, 1, 127, 128, 129, 255, 1000, half.PIECE - 1, half.PIECE + 200, 3 * half.PIECE + 77):
        start = int(rng.integers(0, pool.size - n))
        h = pool[start:start + n]
        out = np.full(n + 3, 7.0, np.float32)
        got = half.widen(h, out[:n], bf16, checksum=True)
        want = table[h]
        assert np.array_equal(out[:n].view(np.uint32), want) and np.all(out[n:] == 7.0), n
        assert got == (crc32c.crc32c(h) if crc.HARDWARE else None), n
    out = np.empty(every.size, np.float32)
    assert half.widen(every, out, bf16, checksum=True) == (crc32c.crc32c(every) if crc.HARDWARE else None)
    assert np.array_equal(out.view(np.uint32), table)


@pytest.mark.parametrize("bf16", [False, True])
def test_16_bit_floats_narrowed_and_widened_streamed_with_the_crc_folded_at_any_alignment(
        monkeypatch, small_outputs_stream, bf16):
    """Large outputs of either format are stored streamed with their CRC folded in the same
    loop (``half._fold_kernels``) where ``half.folded``: every output offset within a line,
    lengths around a fold step and a piece, the same bits as torch's (bfloat16: NaN as
    0x7FC0) and the CRC-32C of the 16-bit floats."""
    if not half.folded(bf16):
        pytest.skip("the folded conversions need VPCLMULQDQ and AVX-512 (half: F16C too), and outputs written in place")
    dtype = torch.bfloat16 if bf16 else torch.float16
    rng = np.random.default_rng(5)
    pool = rng.integers(0, 1 << 16, 3 * half.PIECE, dtype=np.uint32).astype(np.uint16)
    table = torch.from_numpy(np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.int16)).view(
        dtype).to(torch.float32).numpy().view(np.uint32)
    chosen = []
    streamed = half._streamed
    monkeypatch.setattr(half, "_streamed", lambda out, bf16: chosen.append(streamed(out, bf16)) or chosen[-1])
    for n in (1, 127, 128, 129, 300, 1000, half.PIECE + 200, 2 * half.PIECE + 77):
        for offset in (0, 2, 4, 20, 62):
            h = pool[:n]
            buffer = np.zeros(4 * n + 128, np.uint8)
            start = ((-buffer.ctypes.data) & 63) + offset
            wide = buffer[start:start + 4 * n].view(np.float32) if offset % 4 == 0 else np.empty(n, np.float32)
            assert half.widen(h, wide, bf16, checksum=True) == crc32c.crc32c(h), (n, offset)
            assert np.array_equal(wide.view(np.uint32), table[h]), (n, offset)
            x = wide.copy()
            if bf16:   # bits below bfloat16's: ties, and rounding in both directions (NaNs from infinities too)
                low = x.view(np.uint32)[::3]
                low |= rng.choice(np.array([0x8000, 0x7FFF, 0x8001, 0xFFFF, 1], np.uint32), low.size)
            narrow_buffer = np.zeros(2 * n + 128, np.uint8)
            at = ((-narrow_buffer.ctypes.data) & 63) + offset
            halves = narrow_buffer[at:at + 2 * n].view(np.uint16)
            want = torch.from_numpy(x).to(dtype).view(torch.int16).numpy().view(np.uint16).copy()
            if bf16:
                want[np.isnan(x)] = 0x7FC0
            assert half.narrow(x, halves, bf16) == crc32c.crc32c(want), (n, offset)
            assert np.array_equal(halves, want), (n, offset)
    assert chosen and all(chosen)   # every conversion above took the streamed kernels
