"""Streamed (non-temporal) stores (``kernels/stream.py``): the bytes they write, and every
kernel that streams large outputs gives the same values streamed as written in place, at
any alignment of the output and any length."""

import numba
import numpy as np
import pytest
import torch

from thinwire.codecs.kernels import bitpack, qsgd, scatter, stream, uniform


@pytest.fixture
def always_stream(monkeypatch):
    """Every output counts as large, so the streamed path runs on small tensors."""
    monkeypatch.setattr(stream, "STREAM_MIN_BYTES", 0)


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
    monkeypatch.setattr(stream, "STREAM_MIN_BYTES", 0)
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
