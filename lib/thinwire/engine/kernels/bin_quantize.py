"""Oland & Raj's bin quantizer (Alg. 1 QUANTIZE, Alg. 2 line 4) and its entropy
estimate (Alg. 1 ESTIMATE ENTROPY, ESTIMATE DISTRIBUTION), made consistent.

The paper quantizes with floor(2^K (w_max - w) / (w_max - w_min)) but decodes with
w_min + (w_max - w_min)(i + 1/2) / 2^N: the encoder counts bins down from w_max, the
decoder up from w_min, and w = w_min maps to 2^K, one past the last bin. We use the
decoder's direction for both and clamp:

    i  = min(floor(2^N (w - w_min) / (w_max - w_min)), 2^N - 1)   (w_max joins the last bin)
    w' = w_min + (w_max - w_min) (i + 1/2) / 2^N                  (the centre of bin i)

so |w - w'| <= (w_max - w_min) / 2^(N+1). A constant layer (w_max == w_min) gets code 0
everywhere and decodes exactly to w_min. NaN or Inf raises ``ValueError``.

Codes are numpy arrays (uint8 for N <= 8, uint16 up to 16 bits): the entropy coders
(``symbol_coders.py``) work on them. ``bin_pack`` fuses QUANTIZE with ``bitpack``'s
layout for the raw coder: one pass over the weights, the codes never leave the cache.
Both run as compiled kernels (numba), in parallel over chunks. They compute in float64,
so w - w_min does not cancel for weights far from zero and the scale cannot overflow
even for a range of a few subnormals. A GPU tensor's codes are made on the GPU with the
same float64 arithmetic (``torch_bins.py``): the raw coder packs them there, the
entropy coders get only the codes on the host.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import literally, njit, prange

from . import bitpack, crc, device, dispatch, torch_bins, triton_uniform, uniform

CHUNK = bitpack.CHUNK
check_bits = bitpack.check_bits


def code_dtype(bits: int):
    return np.uint8 if bits <= 8 else np.uint16


@njit(nogil=True, cache=True)
def _codes_chunk(w, lo, scale, top, out):
    for i in range(w.size):
        k = np.int64((np.float64(w[i]) - lo) * scale)  # >= 0: truncation is floor
        out[i] = k if k < top else top


@njit(parallel=True, nogil=True, cache=True)
def _codes(w, lo, scale, top, out):
    n = w.size
    for c in prange((n + CHUNK - 1) // CHUNK):
        start = c * CHUNK
        stop = min(n, start + CHUNK)
        _codes_chunk(w[start:stop], lo, scale, top, out[start:stop])


@njit(nogil=True, cache=True)
def _chunk_codes(w, c, lo, scale, top):
    """The codes of chunk ``c`` of ``w`` (uint16, at most CHUNK of them)."""
    start = c * CHUNK
    stop = min(w.size, start + CHUNK)
    codes = np.empty(CHUNK, np.uint16)
    _codes_chunk(w[start:stop], lo, scale, top, codes)
    return codes[:stop - start]


@njit(nogil=True, cache=True)
def _codes_packed(bits, args):
    literally(bits)
    w, lo, scale, out, crcs = args
    _codes_packed_parallel(bits, w, lo, scale, out, crcs)


@njit(parallel=True, nogil=True, cache=True)
def _codes_packed_parallel(bits, w, lo, scale, out, crcs):
    """QUANTIZE then ``bitpack``'s layout, chunk by chunk (``bits`` a compile-time constant);
    with ``crcs``, each chunk's bytes checksummed while cached (1 to 8 bits). The arrays
    come as arguments, not in a tuple (as in ``qsgd.py``)."""
    literally(bits)
    n = w.size
    top = (1 << bits) - 1
    for c in prange((n + CHUNK - 1) // CHUNK):
        codes = _chunk_codes(w, c, lo, scale, top)
        if bits <= 8:
            bitpack.stream_chunk(codes, bits, out[c * CHUNK // 8 * bits:])
            if crcs.size:
                first, end = uniform.chunk_bytes(c * CHUNK, c * CHUNK + codes.size, n, bits, out.size)
                crcs[c] = crc.crc32c(out[first:end])
        else:
            bitpack.low_bytes(codes, out[c * CHUNK:c * CHUNK + codes.size])
            bitpack.stream_chunk(codes, bits, out[n + c * CHUNK // 8 * (bits - 8):])


# One compiled kernel per width, as in ``bitpack``.
_codes_packed_width = bitpack.width_table(_codes_packed)


def bin_codes(flat: torch.Tensor, lo: float, hi: float, bits: int, out: np.ndarray | None = None,
              levels: int | None = None) -> np.ndarray:
    """i = min(floor(L (w - lo) / (hi - lo)), L - 1) for every w (0 when hi == lo), with
    L = ``levels`` bins (a fractional bit width, ``policies.entropy_bits.bit_width``) or 2^bits."""
    n = flat.numel()
    count = levels or 1 << bits
    out = np.empty(n, dtype=code_dtype(bits)) if out is None else out
    if hi <= lo:
        out.fill(0)
    elif n and device.on_device(flat):  # codes made on the tensor's device; only they cross to the host
        codes = torch_bins.bin_codes(flat, lo, count / (hi - lo), count - 1)
        if bits > 8:  # uint16 codes travel as the int16 of the same bits (no out-of-range cast)
            codes = torch.where(codes >= 1 << 15, codes - (1 << 16), codes)
        out[:] = codes.to(torch.uint8 if bits <= 8 else torch.int16).cpu().numpy().view(out.dtype)
    elif n:
        _codes(uniform.float32_numpy(flat), lo, count / (hi - lo), count - 1, out)
    return out


def bin_pack(flat: torch.Tensor, lo: float, hi: float, bits: int, out: torch.Tensor | None = None) -> torch.Tensor:
    """``dispatch.pack(bin_codes(flat, lo, hi, bits), bits)`` in one pass (uint8 tensor; on the
    tensor's device when it takes the device path and no ``out`` is given)."""
    n = flat.numel()
    x = flat.reshape(-1)
    if n and hi > lo and device.on_device(flat) and bits <= 8 and triton_uniform.usable(bits, x):
        x = x.to(torch.float32)  # exact: every value goes to float64 on the way, as on the host
        packed = out if out is not None and triton_uniform.usable(bits, x, out) else torch.empty(
            bitpack.packed_bytes(n, bits), dtype=torch.uint8, device=x.device)
        triton_uniform.bin_packed(x, lo, (1 << bits) / (hi - lo), bits, packed)
        return packed if out is None or packed is out else out.copy_(packed)
    if n and hi > lo and device.on_device(flat):
        codes = torch_bins.bin_codes(flat, lo, (1 << bits) / (hi - lo), (1 << bits) - 1)
        return dispatch.pack(codes, bits) if out is None else out.copy_(dispatch.pack(codes, bits))
    out = torch.empty(bitpack.packed_bytes(n, bits), dtype=torch.uint8) if out is None else out
    _pack_host(flat, lo, hi, bits, out, False)
    return out


def bin_pack_crc(flat: torch.Tensor, lo: float, hi: float, bits: int, out: torch.Tensor) -> int | None:
    """``bin_pack`` into ``out``, returning the CRC-32C of its bytes where the host kernel
    took it chunk by chunk as it wrote them (1 to 8 bits, the CRC instruction), else None."""
    if flat.numel() and hi > lo and not device.on_device(flat):
        return _pack_host(flat, lo, hi, bits, out, True)
    bin_pack(flat, lo, hi, bits, out=out)
    return None


def _pack_host(flat: torch.Tensor, lo: float, hi: float, bits: int, out: torch.Tensor, checksum: bool) -> int | None:
    """The host kernel of ``bin_pack`` -> the CRC of ``out``'s bytes, with ``checksum``."""
    n = flat.numel()
    if hi <= lo:
        out.fill_(0)
        return None
    crcs = uniform.chunk_crcs(n, bits, checksum)
    if n:
        args = (uniform.float32_numpy(flat), lo, (1 << bits) / (hi - lo), out.numpy(), crcs)
        _codes_packed_width(check_bits("bits", bits), args)
    return uniform.joined(crcs, bits, out.numel())


def bin_centres(codes: np.ndarray, lo: float, hi: float, bits: int,
                out: torch.Tensor | None = None, levels: int | None = None) -> torch.Tensor:
    """w' = lo + (hi - lo)(i + 1/2) / L, as float32 (Alg. 2 line 4); L = ``levels`` or 2^bits."""
    if hi <= lo:
        out = torch.empty(codes.size, dtype=torch.float32) if out is None else out
        return out.fill_(lo)
    step = (hi - lo) / (levels or 1 << bits)
    if step < FLOAT32_TINY:
        return _centres_float64(codes, lo, step, out)
    return uniform.dequantize(codes, lo + 0.5 * step, step, out=out)


# A bin narrower than float32's smallest normal number loses its width in the float32
# kernels (the range [-1.4e-45, 1.4e-45] gave every value lo): such centres are made in
# float64, one IEEE operation at a time, as ``triton_range._values`` makes them on a GPU.
FLOAT32_TINY = float(np.finfo(np.float32).tiny)


def _centres_float64(codes: np.ndarray, lo: float, step: float, out: torch.Tensor | None) -> torch.Tensor:
    values = torch.from_numpy((lo + (codes.astype(np.float64) + 0.5) * step).astype(np.float32))
    return values if out is None else out.copy_(values)


def bin_unpack_centres(packed: torch.Tensor, n: int, lo: float, hi: float, bits: int,
                       out: torch.Tensor | None = None) -> torch.Tensor:
    """``bin_centres`` of the ``n`` codes ``bin_pack`` packed, unpacked and rescaled in one pass."""
    if hi <= lo:
        out = torch.empty(n, dtype=torch.float32) if out is None else out
        return out.fill_(lo)
    step = (hi - lo) / (1 << bits)
    if step < FLOAT32_TINY:
        return _centres_float64(dispatch.unpack(packed.cpu(), n, bits).numpy(), lo, step, out)
    return dispatch.dequantize_packed(packed, n, bits, lo + 0.5 * step, step, out=out)


def histogram(codes: np.ndarray, bits: int) -> np.ndarray:
    """ESTIMATE DISTRIBUTION, unnormalized: counts of each of the 2^bits bins (int64)."""
    return np.bincount(codes, minlength=1 << bits)


def entropy_bits(counts: np.ndarray) -> float:
    """-sum p log2 p of a histogram (bits)."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum()
    if total <= 0:
        return 0.0
    p = counts[counts > 0] / total
    return float(-(p * np.log2(p)).sum())


def estimate_entropy(flat: torch.Tensor, lo: float, hi: float, m: int, f: float,
                     generator: torch.Generator) -> float:
    """ESTIMATE ENTROPY: the entropy of a random subset of ``f * n`` values (at least one),
    drawn without replacement from ``generator``, quantized to ``m`` bits over the whole
    tensor's [lo, hi]."""
    n = flat.numel()
    if n == 0:
        return 0.0
    k = min(n, max(1, round(f * n)))
    sample = flat if k == n else flat[torch.randperm(n, generator=generator)[:k]]
    return entropy_bits(histogram(bin_codes(sample, lo, hi, m), m))
