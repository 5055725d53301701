"""The drop pass's two kernels (``kernels/triton_drop.py``) timed one at a time on a GPU,
beside variants, by ``gpu_bench``'s ``drop_variants`` part: what each of step 1 (``_count``)
and step 3 (``_compact``) costs, at the survivor densities of top-k 1% and of gradient
dropping 0.99 and at 10%.

- ``library``: ``_count`` and the compaction ``triton_drop.compactor`` chooses, as
  ``triton_drop.counted`` and ``at_least`` launch them (``BLOCK`` values per chunk for
  gradient dropping, ``TOPK_BLOCK`` for top-k's candidates).
- ``rounds``: ``_compact``, each word's lowest set bit taken in rounds (work per survivor).
- ``bits expanded``: ``_compact_dense``, every one of a chunk's ``BLOCK`` bits placed at
  once by its word's prefix and a population count of the bits below it (work per value).
- ``BLOCK = 1024, 2048, 4096, 8192`` (but the library's): ``_count`` and ``_compact`` with
  other chunk sizes (a thread per word).
- ``count, 4 warps`` and ``count, 16 warps`` (but the library's ``WARPS``): ``_count`` over
  the library's chunks with other warps per program. Compiled for sm_90a as launched
  (``kernel_registers.py``, by Triton 3.9) with 4, 8 and 16 warps, top-k's count holds 56, 40
  and 25 registers per thread and gradient dropping's 52, 32 and 25 (87, 48 and 31 without
  ``ALIGNED``): with more warps each thread holds fewer values, and more of them fit on a
  multiprocessor to hide the loads.
- ``count, 4-byte accesses``: ``_count`` without ``ALIGNED``, each float32 value read (and
  the residual written) in an access of its own, where the library's chunks of one segment
  of 250M values (multiples of 16) read four at a time (``triton_drop.runs``).

``sample_draws`` (``gpu_bench``'s part of that name): gradient dropping's whole encode +
decode on the device with its sample drawn one message ahead on a thread of its own
(``graddrop.DRAW_AHEAD`` and ``draws_ahead.THREAD``, the library's), drawn ahead in the
caller's thread while the drop pass runs (``THREAD = False``), and drawn at each message's
start (``DRAW_AHEAD = False``: the add launched on its own while the host draws),
alternated in one process.

Gradient dropping's kernels run with a gradient (the corrected values stored into the
residual, the survivors zeroed there); the density is set by the threshold, the quantile of
normal values. Each variant's survivors, values and residual are compared with the
library's.
"""

from __future__ import annotations

import contextlib
import statistics

import torch

from thinwire.codecs.kernels import triton_drop

DENSITIES = (0.01, 0.1)
BLOCKS = (1024, 2048, 4096, 8192)
COUNT_WARPS = (4, 8, 16)


def _chunked(n: int, block: int, device: str):
    """(starts, stops, span, jobs, counts, words): one segment of ``n`` values in chunks of
    ``block``, and the count pass's outputs (two counts per chunk: survivors, then NaN and
    Inf)."""
    starts, stops, span = triton_drop._chunks(((0, n),), device, block)
    jobs = starts.numel()
    counts = torch.empty(2 * jobs, dtype=torch.int32, device=device)
    words = torch.empty(jobs * (block // 32), dtype=torch.int32, device=device)
    return starts, stops, span, jobs, counts, words


def _timed(n: int, block: int, kernel: str | None, drop: bool, thresholds: torch.Tensor, residual0: torch.Tensor,
           gradient: torch.Tensor, seconds, device: str, warps: int | None = None,
           aligned: bool | None = None) -> tuple[dict, tuple[torch.Tensor, ...]]:
    """(the count's and the compaction's best times and the survivors' number, the pass's
    (index, values, residual)) for one variant: chunks of ``block``, the compaction
    ``kernel`` (None: the library's choice, ``"rounds"``, ``"dense"``), gradient dropping's
    launch (``drop``) or top-k's, the count with ``warps`` per program (None: ``WARPS``) and
    its 16-byte accesses on or off (``aligned``; None: the library's, ``ALIGN``)."""
    warps = warps or triton_drop.WARPS
    if aligned is None:
        aligned = triton_drop.ALIGN and all(flag for *_, flag in triton_drop.runs(((0, n),), block))
    starts, stops, span, jobs, counts, words = _chunked(n, block, device)
    residual = residual0.clone()

    def count():
        if drop:  # from the residual as it was: the corrected values are stored into ``residual``, NaN and Inf counted
            triton_drop._count[(jobs,)](residual0, gradient, starts, stops, span, thresholds, counts, words,
                                        counts[jobs:], residual, ADD=True, INCLUSIVE=False, BLOCK=block, FLAG=True,
                                        STORE=True, ALIGNED=aligned, num_warps=warps)
        else:  # as ``triton_drop.at_least`` launches it
            triton_drop._count[(jobs,)](residual0, residual0, starts, stops, span, thresholds, counts, words,
                                        counts[jobs:], residual0, ADD=False, INCLUSIVE=False, BLOCK=block,
                                        AT_LEAST=True, FLAG=True, ALIGNED=aligned, num_warps=warps)
    count_s = seconds(count)
    count()
    ends = torch.cumsum(counts[:jobs], 0)
    total = int(ends[-1].item())
    index = torch.empty(total, dtype=torch.int64, device=device)
    values = torch.empty(total, dtype=torch.float32, device=device)
    src = residual if drop else residual0
    compactor, compact_warps = {None: triton_drop.compactor(total, jobs, block),  # warps in proportion to the chunk
                                "rounds": triton_drop.compactor(0, jobs, block),
                                "dense": triton_drop.compactor(jobs * block, jobs, block)}[kernel]

    def compact():
        compactor[(jobs,)](src, starts, words, ends, index, values, src, 0, total, ZERO=drop, BLOCK=block,
                           num_warps=compact_warps)
    compact_s = seconds(compact)  # zeroing zeros again: the same loads and stores
    count()  # the corrected values again, then one compaction to compare
    compact()
    return {"survivors": total, "count_s": count_s, "compact_s": compact_s}, (index, values, residual)


def variants(n: int, seconds, device: str) -> list[dict]:
    """Each variant's best time (``seconds(fn)``: the bench's timer) for each kernel, at each
    density and for top-k's and gradient dropping's launches, and whether its output equals
    the library's."""
    g = torch.Generator(device).manual_seed(0)
    residual0 = torch.randn(n, device=device, generator=g)
    gradient = torch.randn(n, device=device, generator=g)
    rows = []
    for density in DENSITIES:
        # |N(0, 2)| (residual + gradient) and |N(0, 1)| above t with probability ``density``
        q = float(torch.erfinv(torch.tensor(1 - density, dtype=torch.float64)) * 2 ** 0.5)
        for launch, t in (("top-k candidates", q), ("gradient dropping", q * 2 ** 0.5)):
            thresholds = torch.tensor([t], dtype=torch.float32, device=device)
            want = None
            chunk = triton_drop.TOPK_BLOCK if launch == "top-k candidates" else triton_drop.BLOCK  # the library's
            for variant, block, kernel, warps, aligned in (
                    [("library", chunk, None, None, None), ("rounds", chunk, "rounds", None, None),
                     ("bits expanded", chunk, "dense", None, None),
                     ("count, 4-byte accesses", chunk, None, None, False)]
                    + [(f"BLOCK = {b}", b, "rounds", None, None) for b in BLOCKS if b != chunk]
                    + [(f"count, {w} warps", chunk, None, w, None) for w in COUNT_WARPS if w != triton_drop.WARPS]):
                timed, got = _timed(n, block, kernel, launch == "gradient dropping", thresholds, residual0, gradient,
                                    seconds, device, warps, aligned)
                want = want or tuple(t.clone() for t in got)
                rows.append({"variant": variant, "launch": launch, "values": n, "density": density, **timed,
                             "equal_to_library": all(a.shape == b.shape and torch.equal(a, b)
                                                     for a, b in zip(got, want))})
    return rows


def selections(n: int, seconds, device: str) -> list[dict]:
    """The j-th smallest by each of ``torch_select.KTHS``, timed (``seconds(fn)``) where the
    codecs select it: among top-k 1%'s candidates of ``n`` normal values (the k-th largest,
    as ``torch_select.top_k`` takes it), and in gradient dropping's sample (0.1% of ``n``,
    the 0.99 order statistic of its magnitudes); each value compared with the sort's."""
    from thinwire.codecs.kernels import torch_select
    from thinwire.codecs.sparsify.drop_threshold import sample_size

    g = torch.Generator(device).manual_seed(1)
    flat = torch.randn(n, device=device, generator=g)
    k = n // 100
    index, magnitude = torch_select._candidates(flat, k)
    m = sample_size(n, 0.001, 1000)
    sample = torch.randn(m, device=device, generator=g).abs()
    rows = []
    for what, values, j in (("top-k 1%'s candidates", magnitude, index.numel() - k + 1),
                            ("gradient dropping's sample", sample, min(m, round(0.99 * (m + 1))))):
        want = torch_select.kth_smallest(values, j, by="sort").item()
        for by in torch_select.KTHS:
            rows.append({"what": what, "values": values.numel(), "j": j, "by": by,
                         "seconds": seconds(lambda: torch_select.kth_smallest(values, j, by=by)),
                         "equal_to_sort": torch_select.kth_smallest(values, j, by=by).item() == want})
    return rows


DRAW_SETTINGS = {"thread": (True, True), "inline": (True, False), "at_start": (False, True)}  # (DRAW_AHEAD, THREAD)


def sample_draws(n: int, seconds, device: str, specs=("graddrop(ratio=0.99)", "graddrop(ratio=0.99, bits=1)"),
                 rounds: int = 3) -> list[dict]:
    """Encode + decode of ``n`` normal values, the message kept on the device, for each of
    ``specs`` in each of ``DRAW_SETTINGS``: the median over ``rounds`` of each setting's
    ``seconds(fn)``, the settings alternated round by round; how many messages took draws
    made ahead, and whether the settings sent the same last message (all made as many)."""
    from thinwire.codecs import CodecState, make_codec
    from thinwire.codecs.kernels import device as paths
    from thinwire.codecs.sparsify import draws_ahead, graddrop

    x = torch.randn(n, device=device, generator=torch.Generator(device).manual_seed(2))
    out = torch.empty_like(x)
    rows = []
    for spec in specs:
        sides = {name: {"codec": make_codec(spec), "sender": CodecState(0), "receiver": CodecState(0),
                        "message": torch.empty(0, dtype=torch.uint8, device=device), "seconds": []}
                 for name in DRAW_SETTINGS}

        def round_trip(side: dict) -> None:
            side["message"] = side["codec"].encode(x, side["sender"], "x", out=side["message"])
            side["codec"].decode(side["message"], side["receiver"], "x", out=out)
        before = graddrop.DRAW_AHEAD, draws_ahead.THREAD
        try:
            with paths.forced() if device == "cpu" else contextlib.nullcontext():
                for _ in range(rounds):
                    for name, side in sides.items():
                        graddrop.DRAW_AHEAD, draws_ahead.THREAD = DRAW_SETTINGS[name]
                        side["seconds"].append(seconds(lambda side=side: round_trip(side)))
        finally:
            graddrop.DRAW_AHEAD, draws_ahead.THREAD = before
        taken = {name: side["sender"].scratch["graddrop.draws_ahead"].taken
                 for name, side in sides.items() if "graddrop.draws_ahead" in side["sender"].scratch}
        rows.append({"codec": spec, "values": n, "rounds": rounds,
                     "ahead_s": statistics.median(sides["thread"]["seconds"]),
                     "ahead_inline_s": statistics.median(sides["inline"]["seconds"]),
                     "at_start_s": statistics.median(sides["at_start"]["seconds"]),
                     "taken": taken.get("thread", 0), "taken_inline": taken.get("inline", 0),
                     "drew_ahead_at_start": "at_start" in taken,
                     "same_messages": all(torch.equal(sides["thread"]["message"], side["message"])
                                          for side in sides.values())})
    return rows
