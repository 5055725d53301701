"""Gradient dropping with a residual (Aji & Heafield 2017, Alg. 1, Sec. 4 and 5).

``compress`` for tensor ``key``:
1. corrected = gradient + residual[key]                        (Alg. 1, line 2)
2. threshold: R% of |corrected| is smaller — exact, or from a sample (``drop_threshold``);
   one for the whole message (``scope="global"``) or one per parameter matrix
   (``"local"``; the matrices are the message's ``segments``). On a device it stays there:
   the drop pass takes it from there, and the encoder reads it with everything else it
   needs of the pass (the survivors' count, NaN and Inf, each span's survivors, the offsets'
   long gaps) in one wait (``drop_survivors``).
3. survivors: |corrected| > threshold; everything else is dropped  (lines 3-5).
   ``ties="drop"`` (Alg. 1's strict test, the default) holds values equal to the
   threshold back, except in a span where that would send nothing at all: there the
   values at the threshold go (``_unstall``), so a tensor whose largest magnitude is
   shared by more than 1 - ratio of its values (a constant gradient) cannot stall.
   ``ties="keep"`` sends values equal to a positive threshold too. Under AdaGrad many
   parameter deltas are exactly +-lr (a coordinate's first update is lr * g / |g|). The
   threshold of a pull then lands on lr, and the strict test sends a fraction of the
   target density (the gradient-dropping notebook measures it).
4. optional 1- or 2-bit quantization of the survivors (Sec. 5.4, ``drop_quantize``)
5. residual[key] = corrected - what is sent                    (line 6)
6. the survivors' positions as absolute int32 indices (``index_value``) or as gaps
   (``offset_value``, ``offsets.py``), and their values as float32 or quantized codes.
So gradient + old residual == sent + new residual exactly (without quantization: the
survivors are sent bit for bit and zeroed in the residual).

Segments: a message may carry several parameter matrices (a shard of the flattened
model). ``CodecState.set_segments`` records them — (start, numel, columns) rows — in the sender's
state; without it a 2-D tensor is one segment of its own columns, anything else one
segment of one column. ``residual=False`` drops without memory: for pulls sent as deltas
from a copy, where the copy already holds what was not sent.

Statistics: after each message ``state.last`` (``SendStats``) holds ``kept`` and ``tied``:
how many other values equal a positive threshold (counted exactly with
``threshold="exact"``, else estimated from the sample); the sender's slot keeps
``threshold`` (one float32 per threshold used).

On a device the sample's positions are drawn one message ahead, on a thread of their own
(``draws_ahead``; the seeded generator is a host one), so step 1 runs inside the
drop pass: the threshold is taken from the sampled residual + gradient, and the residual
and the gradient are read once. Where nothing fits that was drawn ahead (the first
message; another message drew from the generator in between), step 1 is launched on its
own and runs while the host draws. ``sampling="stride"`` needs no draw. The messages are
the same either way.

On a device the received indices' checks are read in one copy as a message is decoded,
and inside ``wire.deferred_checks`` not at all: the block's end judges them (``decompress``).
"""

from __future__ import annotations

import time

import torch

from ...engine import (CorruptMessageError, Payload, decode_offsets, deferred, device, dispatch, drop,
                       drop_pass, drop_quantize, drop_survivors, encode_offsets, expect_part, scatter, team)
from ...validation import check, is_number
from ..base import Codec
from ..registry import register
from .draws_ahead import Draws, DrawsAhead
from .drop_threshold import (SAMPLINGS, exact_threshold, narrowed, order_statistic, sample_positions, sample_size,
                             threshold_from_sample)
from ..state import CodecState

THRESHOLDS = ("exact", "sampled")
SCOPES = ("global", "local")
ENCODINGS = ("offset_value", "index_value")
TIES = ("drop", "keep")


def _disorder(found: list[int], numel: int) -> str | None:
    """What is wrong with absolute indices with ``found`` = [first, last, whether one is not
    above the one before], which must increase within [0, numel), or None."""
    first, last, unordered = found
    return None if 0 <= first and last < numel and not unordered else \
        "graddrop: indices out of range or not increasing"


def _uncovered(found: list[int], numel: int) -> str | None:
    """What is wrong with segments with ``found`` = [their values, whether one has no
    column], which must cover a tensor of ``numel`` values, or None."""
    covered, empty = found
    return None if covered == numel and not empty else "graddrop: segments do not cover the tensor"


def _draws_ahead(state: CodecState) -> DrawsAhead:
    ahead = state.scratch.get("graddrop.draws_ahead")
    if ahead is None:
        ahead = state.scratch["graddrop.draws_ahead"] = DrawsAhead()
    return ahead


def _require(name, value, ok, allowed):
    check(name, value, ok, allowed, owner="graddrop")


@register
class GradDrop(Codec):
    name = "graddrop"
    codec_id = 7
    refuses_non_finite = True  # NaN and Inf survive the drop and refuse the message before the residual changes
    host_only = False  # threshold, drop, residual, index coding and levels all on the tensor's device
    decodes_on_device = True
    reads_device_messages = True
    revision = 1  # 1: with ties="drop", a span where the strict test keeps nothing sends its ties

    def __init__(self, ratio: float = 0.99, threshold: str = "sampled", sample: float = 0.001,
                 min_sample: int = 1000, sampling: str = "random", scope: str = "global",
                 encoding: str = "offset_value", bits: int = 0, levels: str = "threshold",
                 residual: bool = True, ties: str = "drop"):
        _require("ratio", ratio, is_number(ratio) and 0 <= ratio < 1, "a number in [0, 1)")
        _require("threshold", threshold, threshold in THRESHOLDS, f"one of {THRESHOLDS}")
        _require("sample", sample, is_number(sample) and 0 < sample <= 1, "a number in (0, 1]")
        _require("min_sample", min_sample, is_number(min_sample) and isinstance(min_sample, int) and min_sample >= 1,
                 "an int >= 1")
        _require("sampling", sampling, sampling in SAMPLINGS, f"one of {SAMPLINGS}")
        _require("scope", scope, scope in SCOPES, f"one of {SCOPES}")
        _require("encoding", encoding, encoding in ENCODINGS, f"one of {ENCODINGS}")
        _require("bits", bits, is_number(bits) and bits in (0, 1, 2), "0 (float32 values), 1 or 2")
        _require("levels", levels, levels in drop_quantize.LEVELS, f"one of {drop_quantize.LEVELS}")
        _require("ratio", ratio, not (bits and levels == "threshold" and ratio == 0),
                 "> 0 with threshold levels (a ratio of 0 has no threshold)")
        _require("residual", residual, isinstance(residual, bool), "True or False")
        _require("ties", ties, ties in TIES, f"one of {TIES}")
        self.ratio, self.threshold, self.sample, self.min_sample = float(ratio), threshold, float(sample), min_sample
        self.sampling, self.scope, self.encoding = sampling, scope, encoding
        self.bits, self.levels, self.residual, self.ties = bits, levels, residual, ties

    @property
    def carrier(self):  # type: ignore[override]
        return "values" if self.bits == 0 else None

    @property
    def memory(self) -> bool:
        return self.residual

    def params(self) -> dict:
        return {"ratio": self.ratio, "threshold": self.threshold, "sample": self.sample,
                "min_sample": self.min_sample, "sampling": self.sampling, "scope": self.scope,
                "encoding": self.encoding, "bits": self.bits, "levels": self.levels, "residual": self.residual,
                "ties": self.ties}

    def values_per_byte(self) -> float:
        """About (1 - ratio) n survivors, each at least a bit; 8x for a sampled threshold that
        keeps fewer (and ratio 0, which keeps every value)."""
        return 64.0 / (1.0 - self.ratio)

    # -- sender ---------------------------------------------------------------------------
    def compress(self, flat, state: CodecState, key: str, shape: tuple = ()) -> Payload:
        n = flat.numel()
        slot = state.slots.get(key, {})  # written only when the message is accepted (commit)
        segments = slot.get("segments")
        if segments is None or int(segments[:, 1].sum()) != n:  # a matrix's rows are its segments' columns
            segments = torch.tensor([[0, n, max(1, shape[-1]) if len(shape) == 2 else 1]], dtype=torch.int64)
        corrected, source, gradient, commit = self._corrected(flat, slot, state, key)
        spans = [(0, n)] if self.scope == "global" else [(int(s), int(s + c)) for s, c, _ in segments.tolist()]
        draws = self._draws(spans) if self.threshold == "sampled" and device.on_device(corrected) else ()
        known = self._known_positions(state, draws, corrected.device)
        if gradient is not None and (self.threshold == "exact" or (device.on_device(corrected) and known is None)):
            # step 1 on its own; on a device it runs while the host draws the sample
            torch.add(source, gradient, out=corrected)
            source = gradient = None
        t0 = time.perf_counter()  # on a device, the time to launch the selection: its result is read below
        found = [self._threshold(corrected if source is None else source, gradient, a, b, state.generator, known)
                 for a, b in spans]
        state.last.select_seconds = time.perf_counter() - t0
        ahead = bool(draws) and self.sampling == "random"  # the next message's, on the drawing thread
        # the thresholds stay where they were found: read with the survivors' count
        kept = drop_survivors.survivors(corrected, gradient, spans, found[0][0].view(2, 1) if len(found) == 1 else
                         torch.stack([f for f, _ in found], 1), keep_residual=self.residual,
                         inclusive=self.ties == "keep", density=1 - self.ratio, source=source,
                         meanwhile=(lambda: _draws_ahead(state).draw_next(state.generator, draws,
                                                                          pin=corrected.is_cuda)) if ahead else None,
                         gaps=self.encoding == "offset_value", chosen_from=[m for _, m in found])
        thresholds = kept.thresholds
        index, values, all_finite, longs = self._unstall(corrected, spans, kept) if self.ties == "drop" else \
            (kept.index, kept.values, kept.finite, kept.longs)
        if not all_finite:
            raise ValueError(f"graddrop: tensor {key!r} contains NaN or Inf; cannot rank magnitudes")
        slot = state.slot(key)
        slot.setdefault("segments", segments)
        commit()
        state.last.kept = index.numel()
        # the order statistic is itself one of the values: its ties are the others equal to it
        state.last.tied = round(sum(max(0, e - 1) / m * (b - a) for (a, b), t, e, (_, m)
                                    in zip(spans, thresholds, kept.equal, found) if t > 0))
        slot["threshold"] = torch.tensor(thresholds, dtype=torch.float32)

        payload = Payload(meta={"count": index.numel()})
        self._put_index(payload, index, longs, kept.gap if longs is not None else None)
        if self.bits == 0:
            payload.parts["values"] = values
            return payload
        if self.bits == 1 and self.levels == "threshold" and self.scope == "global":  # every level the one threshold
            codes, table, sent = drop_quantize.signs(values, thresholds[0], segments.shape[0])
        else:
            groups, count = drop_quantize.group_ids(index, segments, self.levels)
            if self.levels == "threshold":
                per_segment = torch.tensor(thresholds * segments.shape[0] if self.scope == "global" else thresholds)
            else:
                per_segment = torch.zeros(count)
            codes, table = drop_quantize.quantize(values, groups, count, self.bits, self.levels, per_segment)
            sent = drop_quantize.dequantize(codes, groups, table, self.bits) if self.residual else None
        if self.residual:
            drop_quantize.keep_error(corrected, index, values, sent)
        payload.parts["codes"] = dispatch.pack(codes, self.bits)
        payload.parts["levels"] = table.reshape(-1)
        if self.levels != "global":
            payload.parts["segments"] = segments
        return payload

    def _unstall(self, corrected, spans, kept: drop_survivors.Survivors):
        """(index, values, whether they are finite, their long gaps or None) of ``kept`` with
        the values at the threshold of every span where the strict test kept none.

        A span keeps nothing under ``|x| > t`` with ``t > 0`` only when its largest
        magnitude equals ``t``, i.e. when more than 1 - ratio of its values tie at the top.
        Without this rule such a span would never send: a constant gradient's residual
        would grow without bound. With it, every step sends at least a span's largest
        magnitudes, so no non-zero residual is held forever. Spans with survivors are
        untouched, so Alg. 1's strict test decides every ordinary step. The long gaps
        (``kept.longs``) hold only where no span stalled (else None: the index changes)."""
        stalled = [(a, b, t) for (a, b), t, count in zip(spans, kept.thresholds, kept.counts)
                   if t > 0 and count == 0 and b > a]
        if not stalled:
            return kept.index, kept.values, kept.finite, kept.longs
        extra_index, extra_values = drop_pass(corrected, None, stalled, keep_residual=self.residual, inclusive=True)
        index, values = torch.cat([kept.index, extra_index]), torch.cat([kept.values, extra_values])
        order = torch.argsort(index)  # an infinite threshold lets Inf in here: checked too
        return index[order], values[order], kept.finite and drop_survivors.finite(drop_survivors.sum_bits(extra_values)), None

    def _corrected(self, flat, slot, state: CodecState, key: str):
        """(buffer that becomes the corrected tensor, residual to add ``gradient`` to or None,
        gradient still to add or None, commit). The corrected tensor is written into a
        second buffer, and ``commit`` makes it the residual (the old one becomes the next
        spare) only once the message is accepted: a gradient holding NaN or Inf leaves the
        residual as it was, with no pass over the tensor to look for them first."""
        if not self.residual:
            return flat.to(torch.float32).contiguous(), None, None, lambda: None
        residual = slot.get("residual")
        if residual is None or residual.numel() != flat.numel():
            first = flat.to(torch.float32).clone(memory_format=torch.contiguous_format)
            return first, None, None, lambda: state.slot(key).__setitem__("residual", first)
        spare = state.scratch.get(("graddrop.spare", key))
        if spare is None or spare.shape != residual.shape or spare.device != residual.device:
            spare = torch.empty_like(residual)

        def commit():
            state.scratch[("graddrop.spare", key)], state.slot(key)["residual"] = residual, spare
        return spare, residual, flat.to(torch.float32).contiguous(), commit

    def _draws(self, spans) -> Draws:
        """(start, n, m) of every span whose sampled threshold draws a sample (``_threshold``)."""
        return tuple((a, b - a, sample_size(b - a, self.sample, self.min_sample))
                     for a, b in spans if self.ratio != 0 and b != a)

    def _known_positions(self, state: CodecState, draws: Draws, where: torch.device):
        """An iterator over the sample's positions of every drawing span, on ``where``, when
        they are known before step 1 (every ``stride``, or ``random`` drawn ahead:
        ``draws_ahead``); else None. Only on the device path, where ``draws`` is not empty."""
        if not draws:
            return None
        if self.sampling == "stride":
            return iter([device.put(narrowed(sample_positions(n, m, "stride", state.generator) + a, a + n), where)
                         for a, n, m in draws])
        taken = _draws_ahead(state).take(state.generator, draws, where)
        return iter(taken) if taken is not None else None

    def _threshold(self, corrected, gradient, start, stop, generator, known=None) -> tuple[torch.Tensor, int]:
        """([threshold, how many of the values it was chosen from equal it] on the values'
        device, not read (``drop_threshold.order_statistic``), how many values it was chosen
        from): exact, or from the sample, whose positions are drawn here unless ``known``
        yields them."""
        if self.ratio == 0 or stop == start:
            return order_statistic(corrected[:0], 0), 1
        if self.threshold == "exact":
            magnitude = corrected[start:stop].abs()
            return exact_threshold(magnitude, self.ratio), magnitude.numel()
        n = stop - start
        pos = next(known) if known is not None else \
            sample_positions(n, sample_size(n, self.sample, self.min_sample), self.sampling, generator) + start
        if not device.on_device(corrected):  # the device path's gather too where it is forced
            magnitude = torch.empty(pos.numel(), dtype=torch.float32)
            with team.alone_if_small(64 * pos.numel(), team.STEP):  # a cache line per sampled position
                drop.sampled_magnitudes(corrected.numpy(), (corrected[:0] if gradient is None else gradient).numpy(),
                                        pos.numpy(), magnitude.numpy())
        else:
            pos = device.put(narrowed(pos, stop), corrected.device) if known is None else pos
            magnitude = (corrected[pos] if gradient is None else corrected[pos] + gradient[pos]).abs_()
        return threshold_from_sample(magnitude, self.ratio), magnitude.numel()

    def _put_index(self, payload: Payload, index: torch.Tensor, longs: tuple[int, int] | None = None,
                   gap: torch.Tensor | None = None) -> None:
        if self.encoding == "index_value":
            payload.parts["index"] = index.to(torch.int32)
            return
        width, words, escaped = encode_offsets(index, longs, gap)
        payload.meta["width"] = width
        payload.parts["offsets"] = words
        payload.parts["escapes"] = escaped

    # -- receiver -------------------------------------------------------------------------
    def sparse_entries(self, payload: Payload, numel: int, state: CodecState, key: str, shape: tuple = ()):
        return self._entries(payload, numel)

    def decompress(self, payload: Payload, numel: int, state: CodecState, key: str, out=None, shape: tuple = ()) -> torch.Tensor:
        """Inside ``wire.deferred_checks``, decoding into ``out`` on the device, the indices'
        checks (the offsets', or absolute indices' order and range) and, with quantized values
        and a level table per segment, the segments' are not read but judged at the block's
        end (``out`` NaN where they fail), the indices clamped into the tensor meanwhile: the
        message's opening is the one read."""
        checks, judge = deferred.active(), None
        if checks is not None and out is not None and device.on_device(out):
            spoil, what = (lambda: out.view(torch.uint8).fill_(0xFF)), f"{self.spec()} message for {key!r}"

            def judge(found, accepts):
                checks.corrupt_unless(found, accepts, spoil, what)
        index, values = self._entries(payload, numel, judge)
        return scatter.zeros_with(torch.empty(numel, dtype=torch.float32) if out is None else out, index, values)

    def _entries(self, payload: Payload, numel: int, judge=None):
        """(indices, values) of a message. Outside a block, quantized values' checks (the
        indices', the segments') are read together, in one copy (``deferred.ReadTogether``)."""
        count = payload.meta.get("count")
        if not isinstance(count, int) or not 0 <= count <= numel:
            raise CorruptMessageError(f"graddrop: survivor count {count!r} for {numel} values")
        if judge is None and self.bits:
            judge = deferred.ReadTogether()
        index = self._get_index(payload, count, numel, judge)
        if self.bits == 0:
            values = expect_part(payload, "values", torch.float32, count)
        else:
            values = self._dequantize(payload, index, count, numel, judge)
        return index, values

    def _get_index(self, payload, count, numel, judge=None) -> torch.Tensor:
        if self.encoding == "offset_value":
            words = payload.parts.get("offsets")
            escaped = expect_part(payload, "escapes", torch.int32)
            if words is None:
                raise CorruptMessageError("graddrop: missing part 'offsets'")
            return decode_offsets(payload.meta.get("width"), words, escaped, count, numel, judge)
        index = expect_part(payload, "index", torch.int32, count).long()
        if not count:
            return index
        found = torch.stack([index[0], index[-1], (index[1:] <= index[:-1]).any()])
        deferred.read_or_judge(found, lambda got: _disorder(got, numel), judge)
        return index.clamp_(0, numel - 1) if deferred.clamps(judge) else index  # judged later: written inside meanwhile

    def _dequantize(self, payload, index, count, numel, judge=None) -> torch.Tensor:
        """The survivors' values; ``judge``: a block's, or a ``deferred.ReadTogether`` read here
        (before the segments are used where they must be checked first)."""
        together = isinstance(judge, deferred.ReadTogether)
        codes = dispatch.unpack(expect_part(payload, "codes", torch.uint8), count, self.bits)
        if self.levels == "global":
            segments = torch.tensor([[0, numel, 1]], dtype=torch.int64)
        else:
            segments = expect_part(payload, "segments", torch.int64).view(-1, 3)
            found = torch.stack([segments[:, 1].sum(), (segments[:, 2] < 1).any()])
            # judged later with a level table per segment: a survivor's (searchsorted) has one meanwhile
            later = self.levels == "threshold" and segments.shape[0]
            deferred.read_or_judge(found, lambda got: _uncovered(got, numel), judge if later or together else None)
            if together and not later:
                judge.read()
        groups, groups_count = drop_quantize.group_ids(index, segments, self.levels)
        table = expect_part(payload, "levels", torch.float32, groups_count * 2 * (1 << (self.bits - 1)))
        values = drop_quantize.dequantize(codes, groups, table.view(groups_count, 2, -1), self.bits)
        if together:
            judge.read()
        return values
