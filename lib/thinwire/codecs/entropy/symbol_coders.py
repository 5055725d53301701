"""Lossless coders for quantization codes (symbols in [0, 2^bits)): the last stage of
Oland & Raj's Alg. 1 (lines 7-10) and the first of Alg. 2 (lines 2-3).

- ``raw``: every symbol in ``bits`` bits (``engine/kernels/bitpack.py``): the paper's "raw" bit rate.
- ``huffman``: the paper's choice. The package carries the canonical code *lengths* of
  the symbols from the first to the last one used (one byte each) instead of the
  distribution P: the receiver rebuilds the same codebook from them
  (``huffman_code.py``), then decodes the bitstream (``huffman_stream.py``).
- ``ans``: beyond the paper, range Asymmetric Numeral Systems (``rans.py``: independent
  streams of ``rans.CHUNK`` symbols, coded and decoded at once) with the histogram as its
  model; it gets within a fraction of a percent of the entropy, where Huffman loses up to
  a bit per symbol on skewed distributions. The package carries the histogram (first to
  last used symbol) as exact counts in the narrowest of uint8, uint16 and uint32 that
  holds them (one byte a bin for a small layer, where the table would otherwise outweigh
  the coded weights), the streams' words, and the word offset of each stream after the
  first (``syncs``, when there is more than one; meta ``sync``: symbols per stream).

Each coder returns parts and meta for a ``Payload``; every byte it adds is in the parts.
"""

from __future__ import annotations

import numpy as np
import torch

# MAX_NUMEL: a forged sync beyond it would overflow the kernels' int64
from ...engine import CorruptMessageError, MAX_NUMEL, code_lengths, dispatch, huffman_stream, rans

SYNC = 1024  # symbols between Huffman sync points (4 bytes each: 1/256 bit per symbol)


def _used_range(counts: np.ndarray) -> tuple[int, int]:
    used = np.flatnonzero(counts)
    return int(used[0]), int(used[-1]) + 1


def _meta_int(meta: dict, name: str) -> int:
    value = meta.get(name)
    if not isinstance(value, int):
        raise CorruptMessageError(f"meta {name!r}: expected an int, got {value!r}")
    return value


def _part(parts: dict, name: str, dtype: torch.dtype) -> np.ndarray:
    part = parts.get(name)
    if part is None or part.dtype != dtype:
        raise CorruptMessageError(f"part {name!r}: expected {dtype}, got {None if part is None else part.dtype}")
    return part.numpy()


class RawCoder:
    name = "raw"

    def encode(self, codes: np.ndarray, bits: int, counts: np.ndarray | None = None) -> tuple[dict, dict]:
        return {"codes": dispatch.pack(torch.from_numpy(codes), bits)}, {}

    def decode(self, parts: dict, meta: dict, n: int, bits: int) -> np.ndarray:
        packed = parts.get("codes")
        if packed is None or packed.dtype != torch.uint8:
            raise CorruptMessageError("raw: part 'codes' (uint8) missing")
        return dispatch.unpack(packed, n, bits).numpy()


class HuffmanCoder:
    name = "huffman"

    def __init__(self, sync: int = SYNC):
        self.sync = sync

    def encode(self, codes: np.ndarray, bits: int, counts: np.ndarray | None = None) -> tuple[dict, dict]:
        counts = np.bincount(codes, minlength=1 << bits) if counts is None else counts
        if codes.size == 0:
            return {}, {"first": 0, "sync": self.sync}
        first, stop = _used_range(counts)
        lengths = np.zeros(counts.size, dtype=np.int64)
        lengths[first:stop] = code_lengths(counts[first:stop])
        stream, syncs = huffman_stream.encode(codes, lengths, self.sync, counts)
        parts = {"lengths": torch.from_numpy(lengths[first:stop].astype(np.uint8)),
                 "stream": torch.from_numpy(stream), "syncs": torch.from_numpy(syncs)}
        return parts, {"first": first, "sync": self.sync}

    def decode(self, parts: dict, meta: dict, n: int, bits: int) -> np.ndarray:
        if n == 0:
            return np.empty(0, dtype=np.uint8 if bits <= 8 else np.uint16)
        first, sync = _meta_int(meta, "first"), _meta_int(meta, "sync")
        short = _part(parts, "lengths", torch.uint8)
        if not 1 <= sync <= MAX_NUMEL or first < 0 or first + short.size > 1 << bits:
            raise CorruptMessageError(f"huffman: bad sync {sync} or symbol range [{first}, {first + short.size})")
        lengths = np.zeros(first + short.size, dtype=np.int64)
        lengths[first:] = short
        out = np.empty(n, dtype=np.uint8 if bits <= 8 else np.uint16)
        return huffman_stream.decode(_part(parts, "stream", torch.uint8), n, lengths,
                                     _part(parts, "syncs", torch.uint32), sync, out=out)


class AnsCoder:
    name = "ans"

    def __init__(self, chunk: int = rans.CHUNK):
        self.chunk = chunk

    def encode(self, codes: np.ndarray, bits: int, counts: np.ndarray | None = None) -> tuple[dict, dict]:
        counts = np.bincount(codes, minlength=1 << bits) if counts is None else counts
        if codes.size == 0:
            return {}, {"first": 0}
        first, stop = _used_range(counts)
        hist = counts[first:stop]
        hist = hist.astype(next(t for t in (np.uint8, np.uint16, np.uint32) if hist.max() <= np.iinfo(t).max))
        if stop - first == 1:  # one symbol: nothing to code beyond the histogram
            return {"counts": torch.from_numpy(hist)}, {"first": first}
        words, starts = rans.encode(codes, counts[:stop], self.chunk)
        parts = {"counts": torch.from_numpy(hist), "words": torch.from_numpy(words)}
        if starts.size:
            parts["syncs"] = torch.from_numpy(starts)
        return parts, {"first": first, "sync": self.chunk}

    def decode(self, parts: dict, meta: dict, n: int, bits: int) -> np.ndarray:
        dtype = np.uint8 if bits <= 8 else np.uint16
        if n == 0:
            return np.empty(0, dtype=dtype)
        first = _meta_int(meta, "first")
        counts = parts.get("counts")
        if counts is None or counts.dtype not in (torch.uint8, torch.uint16, torch.uint32):
            raise CorruptMessageError("ans: part 'counts' (uint8, uint16 or uint32) missing")
        hist = counts.numpy()
        if first < 0 or first + hist.size > 1 << bits or hist.sum(dtype=np.int64) != n:
            raise CorruptMessageError(f"ans: histogram of {hist.size} bins at {first} does not describe {n} symbols")
        if hist.size == 1:
            return np.full(n, first, dtype=dtype)
        chunk = _meta_int(meta, "sync")
        if not 1 <= chunk <= MAX_NUMEL:
            raise CorruptMessageError(f"ans: bad stream length {chunk}")
        full = np.zeros(first + hist.size, dtype=np.int64)
        full[first:] = hist
        starts = _part(parts, "syncs", torch.uint32) if n > chunk else np.empty(0, np.uint32)
        try:
            return rans.decode(_part(parts, "words", torch.uint32), starts, full, n, chunk, np.empty(n, dtype=dtype))
        except ValueError as exc:
            raise CorruptMessageError(f"ans: {exc}") from exc


CODERS = {"raw": RawCoder, "huffman": HuffmanCoder, "ans": AnsCoder}
