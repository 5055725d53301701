"""Oland & Raj 2015, Sec. 3.1 and Alg. 1 lines 6-10 / Alg. 2: quantize a tensor to N bits
with the paper's consistent bin quantizer (``bin_quantize.py``) and entropy-code the bin
indices (``entropy/symbol_coders.py``: Huffman as in the paper, ``raw`` N-bit packing, or
``ans``). The package [E, w_min, w_max, code table, N] is self-contained (Alg. 2).

``binquant(bits=N, coder)`` sends a fixed N (Fig. 1); ``binquant(bits=0, coder)`` takes
N from each encode's policy decision (``policies.EntropyBits``: Alg. 1 lines 3-5). A
decision may also give ``levels`` L with 2^(N-1) < L < 2^N (a fractional bit width log2 L):
the codes then run over L bins, are coded in N-bit symbols, and the message carries L.

With the raw coder, one range and a fixed N of 1 to 8 (``steady``), a message's layout is
fixed by the tensor: inside ``wire.deferred_checks`` a GPU tensor's range is found, sent and
read back on the device as ``quantize``'s is (``engine/kernels/triton_range.py``), so neither the
encode nor the decode reads the host; a NaN or Inf tensor, or a range no encoder sends, is
refused at the block's end.

"""


from __future__ import annotations

import math

import numpy as np
import torch

from ..base import Codec, plain_decision
from ..registry import register
from ...engine import (CorruptMessageError, FLOAT32_MAX, FLOAT32_TINY, PartWriter, Payload, bin_centres,
                       bin_codes, bin_pack_crc, bin_unpack_centres, bitpack, check_bits, device, expect_part,
                       expect_range, histogram, rans, read_host_part, settle, triton_uniform, uniform)
from .minmax import device_codes, device_range, read_device_codes, value_range
from .per_column import column_centres, column_codes, column_ranges
from ..state import CodecState
from ..entropy.symbol_coders import CODERS


PERS = ("tensor", "column", "row")  # one range per tensor (Oland & Raj), or per column or row of a 2-D tensor


def _check_coder(coder) -> str:
    if not isinstance(coder, str) or coder not in CODERS:
        raise ValueError(f"coder={coder!r} is not allowed: coder must be one of {sorted(CODERS)}")
    return coder


def _levels_fit(levels, bits: int) -> bool:
    """``levels`` need exactly ``bits``-bit codes: an int in (2^(bits-1), 2^bits]."""
    return isinstance(levels, int) and not isinstance(levels, bool) and (1 << (bits - 1)) < levels <= 1 << bits


@register
class BinQuantize(Codec):
    """N-bit bin quantization (Sec. 3.1) + an entropy coder. ``bits=0``: N comes with each
    encode from a policy's decision (``policies.EntropyBits``, MQGrad's agent); every
    message carries its N, so the receiver needs nothing else."""

    name = "binquant"
    per = "tensor"
    host_only = False  # codes made on a GPU tensor's device (bin_quantize.py); only they, or the packed bytes, cross
    refuses_non_finite = True  # value_range refuses NaN and Inf before anything else
    codec_id = 8

    def __init__(self, bits: int = 8, coder: str = "raw", per: str = "tensor"):
        self.bits = 0 if bits == 0 and not isinstance(bits, bool) else check_bits("bits", bits)
        self.coder = _check_coder(coder)
        if per not in PERS:
            raise ValueError(f"per={per!r} is not allowed: per must be one of {list(PERS)}")
        self.per = per
        # raw codes over one range are unpacked and rescaled where ``out`` is, from a message
        # on that device (``uniform.dequantize_packed``); entropy-coded codes and per-column
        # ranges decode on the host
        self.decodes_on_device = self.reads_device_messages = coder == "raw" and per == "tensor"

    @property
    def steady(self) -> bool:
        """Whether every message's layout is fixed by the tensor: raw N-bit codes (N fixed,
        1 to 8: the device kernels' widths) over one range, whose meta is [lo, hi, N]."""
        return self.coder == "raw" and self.per == "tensor" and 1 <= self.bits <= 8

    def values_per_byte(self) -> float:
        """Raw or Huffman codes: a bit a value at least; rANS: each stream of ``rans.CHUNK``
        symbols at least its 8-byte state (a one-symbol tensor travels as its count alone:
        its receiver passes ``out`` or ``like`` beyond ``DECODE_FLOOR``)."""
        return rans.CHUNK / 8.0 if self.coder == "ans" else 8.0

    def steady_parts(self, numel: int, shape: tuple = ()):
        return (("codes", torch.uint8, bitpack.packed_bytes(numel, self.bits)),) if self.steady else None

    def steady_meta(self) -> dict:
        return {"lo": None, "hi": None, "bits": self.bits}  # the range written on the device in a block

    def accepts_meta(self, meta: dict[str, float]) -> bool:
        return -FLOAT32_MAX <= meta["lo"] <= meta["hi"] <= FLOAT32_MAX  # expect_range's test

    def decodes_steady(self, out: torch.Tensor) -> bool:
        return self.steady and triton_uniform.usable(self.bits, out)

    def compress_deferred(self, flat, state: CodecState, key: str, shape: tuple = ()) -> Payload | None:
        """``compress``'s payload of a non-empty float32 tensor on the GPU (a steady codec,
        the Triton kernels chosen), its range left on the device (``minmax.device_range``)
        and the codes made from its bytes there (``minmax.device_codes``)."""
        if not (self.steady and flat.numel() and flat.dtype == torch.float32 and device.on_device(flat)
                and triton_uniform.usable(self.bits, flat)):
            return None
        state.last.bits = self.bits
        lo, hi = device_range(flat, key, self.spec())
        return Payload(parts={"codes": device_codes(flat, lo, hi, self.bits, bins=True)},
                       meta={"lo": lo, "hi": hi, "bits": self.bits})

    def params(self) -> dict:
        extra = {"per": self.per} if self.per != "tensor" else {}  # the default stays out of specs and keys
        return {"bits": self.bits, "coder": self.coder, **extra}

    def choose_bits(self, flat: torch.Tensor, lo: float, hi: float, state: CodecState, key: str) -> int:
        if not self.bits:
            raise ValueError(f"{self.spec()} takes its bit width from a policy decision: "
                             "encode(..., decision=Decision(bits=N))")
        return self.bits

    def warm_up_decision(self):
        if self.bits:
            return None
        return plain_decision(bits=8)

    def compress(self, flat, state: CodecState, key: str, shape: tuple = ()) -> Payload:
        lo, hi = value_range(flat, key)
        return self._quantize(flat, lo, hi, self.choose_bits(flat, lo, hi, state, key), state, shape=shape)

    def compress_decided(self, flat, state: CodecState, key: str, decision, shape: tuple = ()) -> Payload:
        if decision.keys is not None or decision.bits is None:
            return super().compress_decided(flat, state, key, decision)
        if self.bits and decision.bits != self.bits:
            raise ValueError(f"{self.spec()} sends {self.bits} bits; a decision of {decision.bits} needs bits=0")
        lo, hi = value_range(flat, key)
        bits = check_bits("bits", decision.bits)
        levels = decision.levels
        if levels is not None and not _levels_fit(levels, bits):
            raise ValueError(f"{self.spec()}: levels={levels!r} is not allowed for bits={bits}: levels must be an "
                             f"int in ({1 << (bits - 1)}, {1 << bits}]")
        return self._quantize(flat, lo, hi, bits, state, None if levels == 1 << bits else levels, shape)

    def _quantize(self, flat, lo: float, hi: float, bits: int, state: CodecState, levels: int | None = None,
                  shape: tuple = ()) -> Payload:
        state.last.bits = bits if levels is None else math.log2(levels)
        if self.per != "tensor" and len(shape) == 2 and flat.numel():  # an empty matrix: no range at all
            if levels is not None:
                raise ValueError(f"{self.spec()}: per-{self.per} ranges take 2^bits levels, not levels={levels}")
            matrix = flat.reshape(shape).cpu()  # per-column ranges: host kernels (an explicit copy from a GPU)
            return self._quantize_columns(matrix if self.per == "column" else matrix.t(), bits)
        if self.coder == "raw" and levels is None:  # QUANTIZE fused with the raw coder's packing, into the message
            parts = {"codes": PartWriter(torch.uint8, bitpack.packed_bytes(flat.numel(), bits),
                                         lambda view: bin_pack_crc(flat, lo, hi, bits, view), checksummed=True)}
            meta = {}
        else:
            codes = bin_codes(flat, lo, hi, bits, levels=levels)
            parts, meta = CODERS[self.coder]().encode(codes, bits, histogram(codes, bits))
        if levels is not None:
            meta["levels"] = levels
        return Payload(parts=parts, meta={"lo": lo, "hi": hi, "bits": bits, **meta})

    def _quantize_columns(self, matrix: torch.Tensor, bits: int) -> Payload:
        lo, hi = column_ranges(matrix)
        codes = column_codes(matrix, lo, hi, bits)
        parts, meta = CODERS[self.coder]().encode(codes, bits, histogram(codes, bits))
        return Payload(parts={**parts, "lo": lo, "hi": hi}, meta={"bits": bits, **meta})

    def decompress(self, payload: Payload, numel: int, state: CodecState, key: str, out=None, shape: tuple = ()) -> torch.Tensor:
        bits = payload.meta.get("bits")
        if not (isinstance(bits, int) and 1 <= bits <= 16):
            raise CorruptMessageError(f"{self.name}: bits {bits!r} is not an int in 1..16")
        if isinstance(payload.meta.get("lo"), torch.Tensor):  # a steady message: its range read on the device
            return read_device_codes(payload, numel, bits, out, bins=True)
        if payload.unverified is not None:  # left to this pass (``checks_own_copy``)
            if self._reads_on_host(payload, numel, bits, out):
                return self._read_on_host(payload, numel, bits, out)
            settle(payload)  # any other message: checked first, then decoded as usual
        if "lo" in payload.parts:  # per-column (or per-row: the columns of the transpose) ranges
            if self.per == "tensor" or len(shape) != 2:
                raise CorruptMessageError(f"{self.spec()}: a message with column ranges for a tensor of shape {shape}")
            if self.per == "column":
                return self._decompress_columns(payload, numel, bits, out)
            transposed = self._decompress_columns(payload, numel, bits, None).reshape(shape[1], shape[0])
            values = transposed.t().reshape(-1)
            return values if out is None else out.copy_(values)
        if self.per != "tensor" and len(shape) == 2 and numel:
            raise CorruptMessageError(f"{self.spec()}: a message without per-{self.per} ranges for a tensor of shape "
                                      f"{shape}")
        lo, hi = expect_range(payload, self.name)
        levels = payload.meta.get("levels")
        if levels is not None and not _levels_fit(levels, bits):
            raise CorruptMessageError(f"{self.name}: levels {levels!r} do not fit {bits}-bit codes")
        if self.coder == "raw" and levels is None:  # unpacked and rescaled in one pass; N-bit fields are < 2^N
            packed = expect_part(payload, "codes", torch.uint8, bitpack.packed_bytes(numel, bits))
            return bin_unpack_centres(packed, numel, lo, hi, bits, out=out)
        parts = {name: part.cpu() for name, part in payload.parts.items()}  # raw with levels: from a GPU message
        codes = CODERS[self.coder]().decode(parts, payload.meta, numel, bits)
        if codes.size and int(codes.max()) >= (levels or 1 << bits):
            raise CorruptMessageError(f"{self.name}: code {int(codes.max())} out of range for "
                                      f"{levels or 1 << bits} levels")
        if out is not None and out.device.type != "cpu":  # decoded on the host, then copied to out's device
            return out.copy_(bin_centres(codes, lo, hi, bits, levels=levels))
        return bin_centres(codes, lo, hi, bits, out=out, levels=levels)

    @staticmethod
    def _raw_codes(payload: Payload, numel: int, bits: int) -> torch.Tensor | None:
        """The codes part of a message of raw codes (1 to 8 bits) over one range, or None."""
        codes = payload.parts.get("codes")
        if (bitpack.one_plane(bits) and set(payload.meta) == {"lo", "hi", "bits"} and list(payload.parts) == ["codes"]
                and codes.dtype == torch.uint8 and codes.numel() == bitpack.packed_bytes(numel, bits)):
            return codes
        return None

    @property
    def verifies_while_widening(self) -> bool:
        """A large host message of raw codes over one range (1 to 8 bits) is turned into
        ``out`` on the host as it is checked, a cached chunk at a time (``_read_on_host``)."""
        return self.coder == "raw" and self.per == "tensor"

    def _reads_on_host(self, payload: Payload, numel: int, bits: int, out: torch.Tensor) -> bool:
        """Whether ``payload`` is raw codes of 1 to 8 bits over one range, for a host ``out``."""
        return self._raw_codes(payload, numel, bits) is not None and out is not None and not device.on_device(out)

    def _read_on_host(self, payload: Payload, numel: int, bits: int, out: torch.Tensor) -> torch.Tensor:
        """The codes read into ``out`` as their checksum is taken (``uniform.dequantize_host``),
        then judged against the message's (``wire.read_host_part``)."""
        lo, hi = expect_range(payload, self.name)
        step = (hi - lo) / (1 << bits)
        if step < FLOAT32_TINY:  # a constant tensor, or bins narrower than float32's normals
            settle(payload)
            packed = expect_part(payload, "codes", torch.uint8, bitpack.packed_bytes(numel, bits))
            return bin_unpack_centres(packed, numel, lo, hi, bits, out=out)
        values = out.view(-1).numpy()
        read_host_part(payload, "codes", lambda part: uniform.dequantize_host(part, bits, lo + 0.5 * step, step, values,
                                                                             checksum=True),
                       lambda: values.view(np.uint8).fill(0xFF))
        return out

    def _decompress_columns(self, payload: Payload, numel: int, bits: int, out) -> torch.Tensor:
        lo = expect_part(payload, "lo", torch.float32)
        hi = expect_part(payload, "hi", torch.float32, lo.numel())
        if lo.numel() == 0 or numel % lo.numel() or not bool((torch.isfinite(lo) & (hi >= lo)).all()):
            raise CorruptMessageError(f"{self.name}: {lo.numel()} column ranges do not fit {numel} values")
        parts = {k: v for k, v in payload.parts.items() if k not in ("lo", "hi")}
        codes = CODERS[self.coder]().decode(parts, payload.meta, numel, bits)
        if codes.size and int(codes.max()) >= 1 << bits:
            raise CorruptMessageError(f"{self.name}: code {int(codes.max())} out of range for {bits} bits")
        return column_centres(codes, lo, hi, bits, out=out)
