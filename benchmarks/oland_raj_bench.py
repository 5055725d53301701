"""Oland & Raj stages on 25M values (targets from the issue):

- Huffman encode and decode of 25M 8-bit symbols on one core (the compiled kernels limited
  to one thread): >= 1 G symbols/s encode and >= 500 M symbols/s decode, the speed of
  Huff0-class coders; and on every core (parallel over the chunks between sync points).
  The coders' eight timings (two coders, encode and decode, one core and all) are taken in
  turns (``roofline.interleaved``), so each median spans the whole measurement, not the
  fraction of a second that seven calls in a row take: on a shared 2-vCPU machine one
  core's speed at this work changed by a third from one second to the next (Huffman encode,
  60 s of calls: 759 M symbols/s at the 5th percentile, 1,435 at the 95th).
  The symbols are Gaussian weights quantized to 8 bits (Alg. 1's QUANTIZE), like a large
  layer's.
- ANS (``engine/kernels/rans.py``) on the same symbols, on one core and on every core, for
  comparison (no target).
- quantize + pack (w_min/w_max, QUANTIZE, bit packing to N bits) as a fraction of the
  roofline: (time of one add pass over the 25M floats) / (quantize + pack time), target
  >= 0.5, reported for N = 1..16.
"""

from __future__ import annotations

import numba
import numpy as np
import torch

from roofline import add_pass, interleaved
from thinwire.engine.kernels import huffman_stream
from thinwire.engine.kernels import bitpack
from thinwire.engine.kernels.bin_quantize import bin_codes, bin_pack, histogram
from thinwire.codecs.quantize.minmax import value_range
from thinwire.engine.kernels.huffman_code import code_lengths
from thinwire.codecs.entropy.symbol_coders import SYNC, AnsCoder

N = 25_000_000
ENCODE_TARGET, DECODE_TARGET = 1e9, 5e8  # symbols/s on one core
ROOFLINE_TARGET = 0.5


def quantize_pack(x: torch.Tensor, bits: int, out: torch.Tensor) -> torch.Tensor:
    lo, hi = value_range(x)
    return bin_pack(x, lo, hi, bits, out=out)


def _on(threads: int, fn):
    """``fn`` as a function that runs it with numba's kernels limited to ``threads``."""
    def call():
        numba.set_num_threads(threads)
        try:
            return fn()
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return call


def run(n: int = N) -> dict:
    x = torch.randn(n, generator=torch.Generator().manual_seed(0))
    add = add_pass(n)
    lo, hi = value_range(x)
    symbols = bin_codes(x, lo, hi, 8)
    freq = histogram(symbols, 8)
    lengths = code_lengths(freq)
    stream, syncs = huffman_stream.encode(symbols, lengths, SYNC, freq)
    out = np.empty(n, dtype=np.uint8)
    ans = AnsCoder()
    parts, meta = ans.encode(symbols, 8, freq)
    calls = {}
    for cores, threads in (("one", 1), ("all", numba.get_num_threads())):
        calls[("huffman", "encode", cores)] = _on(threads, lambda: huffman_stream.encode(symbols, lengths, SYNC, freq))
        calls[("huffman", "decode", cores)] = _on(
            threads, lambda: huffman_stream.decode(stream, n, lengths, syncs, SYNC, out=out))
        calls[("ans", "encode", cores)] = _on(threads, lambda: ans.encode(symbols, 8, freq))
        calls[("ans", "decode", cores)] = _on(threads, lambda: ans.decode(parts, meta, n, 8))
    t = interleaved(calls)
    seconds = {cores: (t[("huffman", "encode", cores)], t[("huffman", "decode", cores)]) for cores in ("one", "all")}
    ans_seconds = {cores: (t[("ans", "encode", cores)], t[("ans", "decode", cores)]) for cores in ("one", "all")}
    for cores in ("one", "all"):
        out[:] = 0
        calls[("huffman", "decode", cores)]()
        if not np.array_equal(out, symbols):
            raise AssertionError("Huffman decode does not reproduce the symbols")
        if not np.array_equal(calls[("ans", "decode", cores)](), symbols):
            raise AssertionError("ANS decode does not reproduce the symbols")
    p = freq[freq > 0] / n
    huffman = {
        "symbols": n, "entropy_bits": float(-(p * np.log2(p)).sum()),
        "huffman_bits_per_symbol": 8 * (stream.size + 4 * syncs.size) / n,
        "ans_bits_per_symbol": 8 * sum(t.numel() * t.element_size() for t in parts.values()) / n,
        "encode_symbols_per_s": n / seconds["one"][0], "decode_symbols_per_s": n / seconds["one"][1],
        "encode_all_cores_symbols_per_s": n / seconds["all"][0],
        "decode_all_cores_symbols_per_s": n / seconds["all"][1],
        "ans_encode_symbols_per_s": n / ans_seconds["one"][0], "ans_decode_symbols_per_s": n / ans_seconds["one"][1],
        "ans_encode_all_cores_symbols_per_s": n / ans_seconds["all"][0],
        "ans_decode_all_cores_symbols_per_s": n / ans_seconds["all"][1],
        "encode_target": ENCODE_TARGET, "decode_target": DECODE_TARGET,
    }
    pack_rows = []
    for bits in range(1, 17):
        out = torch.empty(bitpack.packed_bytes(n, bits), dtype=torch.uint8)
        t = interleaved({"add": add, "pack": lambda: quantize_pack(x, bits, out)})
        lo, hi = value_range(x)
        if not torch.equal(out, bitpack.pack(torch.from_numpy(bin_codes(x, lo, hi, bits)), bits)):
            raise AssertionError(f"fused quantize + pack differs from QUANTIZE then pack at {bits} bits")
        pack_rows.append({"bits": bits, "seconds": t["pack"], "add_pass_s": t["add"],
                          "fraction_of_roofline": t["add"] / t["pack"], "target": ROOFLINE_TARGET})
    return {"huffman": huffman, "quantize_pack": pack_rows}
