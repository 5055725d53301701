"""Aji & Heafield's drop pass (Alg. 1 lines 5-8: add the gradient to the residual, keep the
values above the threshold, zero them in the residual) over a GPU tensor in two Triton
kernels, with the survivors compacted in index order: the bytes of ``drop_pass.py``'s torch
operations, which the device path runs where Triton does not (``usable``). On the CPU the
tests run these kernels under Triton's interpreter against the host kernels.

Each segment (start, stop, threshold) is cut into chunks of ``BLOCK`` values, one program
each:

1. ``_count``: each chunk's survivors, ``not |x| <= t`` (``not |x| < t`` for kept ties above
   0, so NaN and Inf always survive), x = source + gradient in float32, written into the
   residual: how many, and which, as one bit per value (``words``);
2. the chunks' counts summed in order (``torch.cumsum``): where each chunk's survivors go
   (``drop`` waits for the total to size the message; ``counted`` does not:
   ``drop_survivors.py``);
3. ``_compact`` (``_compact_dense`` where more than one value in ``DENSE`` survives): each
   chunk's survivors (index, value) written from its offset in index order, and zeroed in
   the residual, a thread per word of bits, so the work follows the survivors.

Top-k's candidates (``|x| >= t``: ``at_least``, ``torch_select.py``) are the same two kernels
with no gradient and no residual, over chunks of ``TOPK_BLOCK``. Chunks aligned to 16 values
(``ALIGNED``) are read and written four values per access. The engine's README records what
each variant measured on a GPU (``benchmarks/device_audit.py``, ``kernel_registers.py``).
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np
import torch

from . import triton_crc
from .device import put
from .triton_crc import AVAILABLE

# values per program, and per program counting and compacting top-k's candidates (``at_least``);
# under the interpreter a few (``triton_crc.INTERPRETING``)
BLOCK, TOPK_BLOCK = (64, 128) if triton_crc.INTERPRETING else (2048, 4096)
WARPS = 8               # compiled for sm_90a, each kernel holds at most 63 registers (kernel_registers.py)
COMPACT_WARPS = 2       # ``_compact``: a thread per word of a chunk's BLOCK // 32
DENSE = 16              # survivors denser than one in DENSE values: ``_compact_dense``
ALIGN = True            # ``_count`` over chunks at multiples of 16 values reads 16 bytes at a time (``runs``)
RUNS = 4                # the most launches of ``_count`` per pass, one per run of aligned chunks or of others


def usable(*tensors: torch.Tensor | None) -> bool:
    """Whether these kernels take the work: Triton present, and every tensor contiguous
    float32 on one GPU (or on the CPU under ``TRITON_INTERPRET=1``)."""
    present = [t for t in tensors if t is not None]
    return all(t.dtype == torch.float32 for t in present) and triton_crc.triton_runs(*present)


if AVAILABLE:
    import triton
    import triton.language as tl

    @triton.jit
    def _corrected(src, grad, starts, stops, segment, thresholds, ADD: tl.constexpr, INCLUSIVE: tl.constexpr,
                   BLOCK: tl.constexpr, AT_LEAST: tl.constexpr = False, ALIGNED: tl.constexpr = False):
        """(positions, in the tensor, corrected values, survivors, inside the chunk) of this
        program's chunk, of segment ``segment[p]``. ``AT_LEAST``: every value with
        ``not |x| < t`` survives (top-k's candidates). ``ALIGNED``: the chunk's start and stop
        are multiples of 16 (``runs``), so four values at a time are read in one access."""
        p = tl.program_id(0)
        start, stop = tl.load(starts + p), tl.load(stops + p)
        if ALIGNED:
            start, stop = tl.multiple_of(start, 16), tl.multiple_of(stop, 16)
        t = tl.load(thresholds + tl.load(segment + p)).to(tl.float32)  # float64 thresholds hold float32 values
        at = start + tl.arange(0, BLOCK)
        inside = at < stop
        x = tl.load(src + at, mask=inside, other=0.0)
        if ADD:
            x = x + tl.load(grad + at, mask=inside, other=0.0)
        if AT_LEAST:
            small = tl.abs(x) < t
        elif INCLUSIVE:  # ties kept where t > 0
            small = tl.where(t > 0, tl.abs(x) < t, tl.abs(x) <= t)
        else:
            small = tl.abs(x) <= t
        return at, x, inside & ~small, inside

    @triton.jit
    def _popcount(x):
        """Set bits of each uint32 of ``x`` (summed in pairs, nibbles, then bytes)."""
        x = x - ((x >> 1) & 0x55555555)
        x = (x & 0x33333333) + ((x >> 2) & 0x33333333)
        x = (x + (x >> 4)) & 0x0F0F0F0F
        return (x * 0x01010101) >> 24

    @triton.jit
    def _count(src, grad, starts, stops, segment, thresholds, counts, words, non_finite, residual, ADD: tl.constexpr,
               INCLUSIVE: tl.constexpr, BLOCK: tl.constexpr, AT_LEAST: tl.constexpr = False, FLAG: tl.constexpr = False,
               STORE: tl.constexpr = False, ALIGNED: tl.constexpr = False):
        """Each chunk's survivors: how many, into ``counts``, and which, as ``BLOCK // 32``
        words of ``words`` (bit j of word w: the chunk's value 32 w + j); with ``FLAG`` also
        its NaN and Inf, into ``non_finite``; with ``STORE`` the corrected values written
        into ``residual``."""
        at, x, keep, inside = _corrected(src, grad, starts, stops, segment, thresholds, ADD, INCLUSIVE, BLOCK, AT_LEAST,
                                         ALIGNED)
        p = tl.program_id(0)
        tl.store(counts + p, tl.sum(keep.to(tl.int32), axis=0))
        lanes = tl.reshape(keep.to(tl.uint32), (BLOCK // 32, 32)) << tl.arange(0, 32).to(tl.uint32)[None, :]
        word = tl.sum(lanes, axis=1).to(tl.uint32)  # distinct bits: their sum is their OR
        tl.store(words + p * (BLOCK // 32) + tl.arange(0, BLOCK // 32), word.to(tl.int32, bitcast=True))
        if STORE:
            tl.store(residual + at, x, mask=inside)
        if FLAG:
            bad = inside & ~(tl.abs(x) <= 3.4028234663852886e38)
            tl.store(non_finite + p, tl.sum(bad.to(tl.int32), axis=0))

    @triton.jit
    def _bit_of(low):
        """The position of the one set bit of each uint32 of ``low`` (a power of two): the
        exponent of its exact float32 value."""
        return ((low.to(tl.float32).to(tl.int32, bitcast=True) >> 23) - 127).to(tl.int64)

    @triton.jit
    def _chunk_words(starts, words, ends, BLOCK: tl.constexpr):
        """This program's chunk's words (uint32), their set bits, where each word's first
        survivor goes (the chunk's offset and the set bits of the words before it) and the
        position of each word's first value."""
        p = tl.program_id(0)
        word = tl.load(words + p * (BLOCK // 32) + tl.arange(0, BLOCK // 32)).to(tl.uint32, bitcast=True)
        set_bits = _popcount(word)
        slot = (tl.load(ends + p) - tl.sum(set_bits, axis=0).to(tl.int64)
                + (tl.cumsum(set_bits, axis=0) - set_bits).to(tl.int64))
        return word, set_bits, slot, tl.load(starts + p) + (tl.arange(0, BLOCK // 32) * 32).to(tl.int64)

    @triton.jit
    def _compact(src, starts, words, ends, index, values, residual, lo, hi, ZERO: tl.constexpr,
                 BLOCK: tl.constexpr):
        """Each chunk's survivors (``_count``'s words) whose place is in [``lo``, ``hi``)
        written there, less ``lo``, their values read from ``src``; with ``ZERO`` zeroed in
        ``residual``. Every word gives up its lowest set bit in each round, as many rounds as
        the fullest word has bits: the survivor's place is its chunk's offset, the set bits of
        the words before its own, and the round; its position is its word's and the bit's.
        Work and loads are per word and round, not per value."""
        word, set_bits, to, first = _chunk_words(starts, words, ends, BLOCK)
        rounds = tl.max(set_bits, axis=0).to(tl.int32)
        p = tl.program_id(0)
        chunk_end = tl.load(ends + p)
        rounds = tl.where((chunk_end <= lo) | (chunk_end - tl.sum(set_bits, axis=0) >= hi), 0, rounds)
        for _ in range(rounds):
            keep = (word != 0) & (to >= lo) & (to < hi)
            at = first + _bit_of(word & (~word + 1))  # the lowest set bit
            x = tl.load(src + at, mask=keep, other=0.0)
            tl.store(index + to - lo, at, mask=keep)
            tl.store(values + to - lo, x, mask=keep)
            if ZERO:
                tl.store(residual + at, tl.zeros_like(x), mask=keep)
            word = word & (word - 1)
            to = to + 1

    @triton.jit
    def _compact_dense(src, starts, words, ends, index, values, residual, lo, hi, ZERO: tl.constexpr,
                       BLOCK: tl.constexpr):
        """``_compact`` for dense survivors: every bit of the chunk's words expanded at once, a
        survivor's place the chunk's offset, the set bits of the words before its own, and
        those below it in its word (work per value)."""
        word, _, slot, first = _chunk_words(starts, words, ends, BLOCK)
        bit = tl.arange(0, 32).to(tl.uint32)[None, :]
        below = _popcount(word[:, None] & ((tl.full((1, 32), 1, tl.uint32) << bit) - 1)).to(tl.int64)
        to = slot[:, None] + below
        keep = (((word[:, None] >> bit) & 1) != 0) & (to >= lo) & (to < hi)
        at = first[:, None] + bit.to(tl.int64)
        x = tl.load(src + at, mask=keep, other=0.0)
        tl.store(index + to - lo, at, mask=keep)
        tl.store(values + to - lo, x, mask=keep)
        if ZERO:
            tl.store(residual + at, tl.zeros_like(x), mask=keep)


@functools.lru_cache(maxsize=64)
def runs(spans: tuple[tuple[int, int], ...], block: int) -> tuple[tuple[int, int, bool], ...]:
    """The chunks of the spans (``_chunks``) as runs of consecutive chunks, (first, end,
    aligned), where aligned runs' chunks all start and stop at a multiple of 16 values:
    ``_count``'s ``ALIGNED``, under which the compiler reads (and writes) four float32
    values in one 16-byte access, the tensors being 16-byte aligned (Triton's launch
    specializes a kernel on that; ``kernel_registers`` counts the accesses' widths). A
    tensor of any size in one span is one aligned run and, where its size is not a multiple
    of 16, its last chunk after it. More than ``RUNS`` runs are one run, not aligned (one
    launch each)."""
    starts, stops, _ = _chunk_bounds(spans, block)
    flags = (starts % 16 == 0) & (stops % 16 == 0)
    cuts = [0] + [int(i) + 1 for i in np.flatnonzero(flags[1:] != flags[:-1])] + [len(flags)]
    found = tuple((a, b, bool(flags[a])) for a, b in zip(cuts, cuts[1:]) if b > a)
    return found if len(found) <= RUNS else ((0, len(flags), False),)


def compactor(survivors: int, jobs: int, block: int = BLOCK):
    """(kernel, warps) that compacts ``survivors`` from ``jobs`` chunks of ``block`` values:
    ``_compact``, whose rounds follow the survivors, up to one in ``DENSE`` values, else
    ``_compact_dense``; their warps in proportion to the chunk (``BLOCK``'s at ``BLOCK``)."""
    if survivors * DENSE <= jobs * block:
        return _compact, max(1, COMPACT_WARPS * block // BLOCK)
    return _compact_dense, max(1, WARPS * block // BLOCK)


def _chunk_bounds(spans: tuple[tuple[int, int], ...], block: int) -> tuple[np.ndarray, ...]:
    """(starts, stops, span) of every chunk of ``block`` values of the spans (numpy)."""
    per = np.array([-(-(b - a) // block) if b > a else 0 for a, b in spans], np.int64)
    starts = np.concatenate([a + block * np.arange(k, dtype=np.int64) for (a, _), k in zip(spans, per)]) \
        if per.sum() else np.zeros(0, np.int64)
    stops = np.minimum(starts + block, np.repeat([b for _, b in spans], per))
    return starts, stops, np.repeat(np.arange(len(spans), dtype=np.int32), per)


@functools.lru_cache(maxsize=64)
def _chunks(spans: tuple[tuple[int, int], ...], device: str, block: int) -> tuple[torch.Tensor, ...]:
    """``_chunk_bounds`` on ``device`` (kept: a tensor's spans are the same every step)."""
    return tuple(torch.from_numpy(a).to(device) for a in _chunk_bounds(spans, block))


def _launch_count(spans, block, src, grad, starts, stops, span, thresholds, counts, words, residual, flag,
                  **constants) -> None:
    """Step 1 over the spans' chunks: one launch per run (``runs``), each told whether its
    chunks are aligned, writing its chunks' counts and words in place."""
    jobs, per = starts.numel(), block // 32
    for a, b, aligned in runs(spans, block):
        _count[(b - a,)](src, grad, starts[a:b], stops[a:b], span[a:b], thresholds, counts[a:b],
                         words[a * per:b * per], counts[jobs + a:jobs + b] if flag else counts[a:b], residual,
                         BLOCK=block, FLAG=flag, ALIGNED=ALIGN and aligned, num_warps=WARPS, **constants)


@functools.lru_cache(maxsize=64)
def _span_ends(spans: tuple[tuple[int, int], ...], device: str, block: int) -> torch.Tensor:
    """How many chunks (``_chunks``) end with each span, on ``device``."""
    per = [-(-(b - a) // block) if b > a else 0 for a, b in spans]
    return torch.from_numpy(np.cumsum(per, dtype=np.int64)).to(device)


def _counted(residual, gradient, spans, thresholds, inclusive, source, flag=False):
    """Step 1 launched over the spans' chunks with ``thresholds`` (one per span, on the
    device), then step 2: (starts, words, ends, NaN and Inf per chunk with ``flag`` else
    None), nothing read. With a gradient, the corrected values go into the residual as
    they are counted, and are compacted from there; without one the residual is the
    values already."""
    starts, stops, span = _chunks(spans, str(residual.device), BLOCK)
    jobs = starts.numel()
    src = residual if source is None or gradient is None else source
    counts = torch.empty((2 if flag else 1) * jobs, dtype=torch.int32, device=residual.device)
    words = torch.empty(jobs * (BLOCK // 32), dtype=torch.int32, device=residual.device)
    _launch_count(spans, BLOCK, src, src if gradient is None else gradient, starts, stops, span, thresholds, counts,
                  words, residual, flag, ADD=gradient is not None, INCLUSIVE=inclusive, STORE=gradient is not None)
    return starts, words, torch.cumsum(counts[:jobs], 0), counts[jobs:] if flag else None


def _compacted(residual, starts, words, ends, keep_residual, lo, hi, zeroed=False):
    """Step 3 for the survivors placed in [lo, hi): (indices, values) on the device; with
    ``zeroed`` the indices past the last survivor placed are 0."""
    index = (torch.zeros if zeroed else torch.empty)(hi - lo, dtype=torch.int64, device=residual.device)
    values = torch.empty(hi - lo, dtype=torch.float32, device=residual.device)
    if hi > lo:
        kernel, warps = compactor(hi - lo, starts.numel())
        kernel[(starts.numel(),)](residual, starts, words, ends, index, values, residual, lo, hi,
                                  ZERO=keep_residual, BLOCK=BLOCK, num_warps=warps)
    return index, values


def drop(residual: torch.Tensor, gradient: torch.Tensor | None, segments: list[tuple[int, int, float]],
         keep_residual: bool, inclusive: bool, source: torch.Tensor | None,
         meanwhile: Callable[[], None] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``drop_pass``'s (survivor indices int64, corrected values float32) on the tensors'
    device, ``residual`` written as ``drop_pass`` writes it (``usable`` must hold);
    ``meanwhile`` is called while the device counts, before the wait for its counts."""
    device = residual.device
    spans = tuple((int(a), int(b)) for a, b, _ in segments)
    if not sum(b - a for a, b in spans):
        return torch.zeros(0, dtype=torch.int64, device=device), torch.zeros(0, dtype=torch.float32, device=device)
    thresholds = put(torch.tensor([t for *_, t in segments], dtype=torch.float32), device)
    starts, words, ends, _ = _counted(residual, gradient, spans, thresholds, inclusive, source)
    if meanwhile is not None:
        meanwhile()
    return _compacted(residual, starts, words, ends, keep_residual, 0, int(ends[-1].item()))


class Counted:
    """A drop pass launched and nothing read (``counted``): ``ends`` (the survivors up to
    each chunk's end, int64), ``non_finite`` (NaN and Inf per chunk, int32), and the first
    ``capacity`` survivors compacted into ``index`` and ``values`` (the indices past the
    last survivor 0, so the gaps there are not long)."""

    def __init__(self, residual, spans, starts, words, ends, non_finite, keep_residual, capacity):
        self.spans, self.ends, self.non_finite = spans, ends, non_finite
        self._compact = functools.partial(_compacted, residual, starts, words, ends, keep_residual)
        self.index, self.values = self._compact(0, capacity, zeroed=True)

    @property
    def capacity(self) -> int:
        return self.index.numel()

    def through_spans(self) -> torch.Tensor:
        """The survivors up to each span's end (int64, on the device, not read)."""
        return torch.cat([self.ends.new_zeros(1), self.ends])[_span_ends(self.spans, str(self.ends.device), BLOCK)]

    def survivors(self, total: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The ``total`` survivors (read from ``ends``): views of the buffers, or, with more
        than they hold, the rest compacted now and joined to them."""
        if total <= self.capacity:
            return self.index[:total], self.values[:total]
        rest = self._compact(self.capacity, total)
        return torch.cat([self.index, rest[0]]), torch.cat([self.values, rest[1]])


def counted(residual: torch.Tensor, gradient: torch.Tensor | None, spans: tuple[tuple[int, int], ...],
            thresholds: torch.Tensor, keep_residual: bool, inclusive: bool, source: torch.Tensor | None,
            capacity: int) -> Counted:
    """``drop``'s pass without a wait: ``thresholds`` (one per span, float32 or float64
    holding float32 values) stay on the device, NaN and Inf are counted with the survivors,
    and up to ``capacity`` survivors are compacted before their number is known
    (``Counted``; ``usable`` must hold)."""
    starts, words, ends, non_finite = _counted(residual, gradient, spans, thresholds, inclusive, source, flag=True)
    return Counted(residual, spans, starts, words, ends, non_finite, keep_residual, capacity)


def at_least(flat: torch.Tensor, t: torch.Tensor) -> tuple[int, bool, Callable[[], tuple[torch.Tensor, torch.Tensor]]]:
    """Top-k's candidates (``select.py``), ``|x| >= t`` for the one-element float32 tensor
    ``t`` on ``flat``'s device: (how many, whether ``flat`` holds NaN or Inf, read together
    in one wait for the device, and a function that compacts them into (ascending int64
    indices, their values)). ``usable(flat)`` must hold."""
    device, block, spans = flat.device, TOPK_BLOCK, ((0, flat.numel()),)
    starts, stops, span = _chunks(spans, str(device), block)
    jobs = starts.numel()
    thresholds = t.reshape(1).to(torch.float32).contiguous()
    counts = torch.empty(2 * jobs, dtype=torch.int32, device=device)
    words = torch.empty(jobs * (block // 32), dtype=torch.int32, device=device)
    _launch_count(spans, block, flat, flat, starts, stops, span, thresholds, counts, words, flat, True, ADD=False,
                  INCLUSIVE=False, AT_LEAST=True)
    ends = torch.cumsum(counts[:jobs], 0)
    total, bad = torch.stack([ends[-1], counts[jobs:].sum()]).tolist()

    def compact() -> tuple[torch.Tensor, torch.Tensor]:
        index = torch.empty(total, dtype=torch.int64, device=device)
        values = torch.empty(total, dtype=torch.float32, device=device)
        kernel, warps = compactor(total, jobs, block)
        kernel[(jobs,)](flat, starts, words, ends, index, values, flat, 0, total, ZERO=False, BLOCK=block,
                        num_warps=warps)
        return index, values
    return int(total), bool(bad), compact
