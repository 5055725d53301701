"""Min-max uniform b-bit quantization with real bit packing (b = 1..16).

The scheme Oland & Raj (Alg. 1) and MQGrad build on, and Slim-DP's Quant-DP baseline:
1. lo, hi = min(x), max(x)                         (sent as two float32 values)
2. code  = floor((x - lo) * (2**b - 1) / (hi - lo) + 1/2)   (nearest level, in [0, 2**b - 1])
3. pack the codes densely (``engine/kernels/bitpack.py``)
4. decode: x' = lo + code * (hi - lo) / (2**b - 1);  |x - x'| <= (hi - lo) / (2 * (2**b - 1))
A constant tensor (hi == lo) decodes exactly. NaN or Inf raises ``ValueError``.

Steps 2-3 are one compiled kernel that writes the packed codes straight into the message
buffer, and step 4 one that unpacks and rescales (``engine/kernels/uniform.py``): one parallel
region per call, so a busy machine's thread pool cannot turn the call into a hundred
barrier waits. On the host, 1 to 8 bits are checksummed as they are written, a cached chunk
at a time, and a large message's codes are checked as they are read into ``out``
(``verifies_while_widening``): the message is written once and read once.

Inside ``wire.deferred_checks``, 1 to 8 bits of a GPU tensor encoded into a message tensor
there (``compress_deferred``) and decoded from one into ``out`` there make no host read:
lo and hi are found on the device and copied into the header's meta there, the codes made
and read with the range taken from device memory (``engine/kernels/triton_range.py``), and what
the host would have checked (a finite range; the header) is judged at the block's end. A
tensor with NaN or Inf is refused there, with this module's ``ValueError``. The messages
are the same bytes. At 8 bits a received message's codes are read as they are checksummed
(``read_device_codes``).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ...engine import (FLOAT32_MAX as LARGEST, PartWriter, Payload, bitpack, deferred, device, dispatch, expect_part,
                       expect_range, extrema, read_host_part, read_part, settle, triton_range, triton_uniform,
                       uniform)
from ..base import Codec
from ..registry import register
from ..state import CodecState

FLOAT32_MAX, FLOAT32_TINY = triton_range.FLOAT32_MAX, triton_range.FLOAT32_TINY  # where a scale or step leaves float32


def exact_codes(flat: torch.Tensor, lo: float, scale: float, bits: int) -> torch.Tensor:
    """Nearest-level codes computed in float64, for a range of a few subnormals, whose
    ``scale`` float32 cannot hold (int32 codes)."""
    levels = (1 << bits) - 1
    return ((flat.to(torch.float64) - lo) * scale + 0.5).floor_().clamp_(0, levels).to(torch.int32)


def value_range(flat: torch.Tensor, key: str = "") -> tuple[float, float]:
    """(min, max) of a tensor (step 1; Oland & Raj Alg. 1 line 3); ``ValueError`` for NaN or Inf."""
    if flat.numel() == 0:
        return 0.0, 0.0
    lo, hi = extrema(flat)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"tensor {key!r} contains NaN or Inf (min {lo}, max {hi}): it cannot be quantized")
    return lo, hi


def device_range(flat: torch.Tensor, key: str, spec: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Step 1 on the device inside ``wire.deferred_checks``: the float32 bytes of lo and hi
    (4 uint8 each, as the header carries them), found as ``value_range`` finds them, a NaN or
    Inf refused with its ``ValueError`` at the block's end (``refuse_unless``)."""
    ends = triton_range.extrema(flat).view(torch.uint8)
    deferred.active().refuse_unless(ends, deferred.finite_float32, f"tensor {key!r} contains NaN or Inf: it cannot "
                                    f"be quantized ({spec}, refused at the block's end)")
    return ends[:4], ends[4:]


def range_bytes(lo: float, hi: float, where: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The float32 bytes of a range the host holds, on ``where``, as ``device_range`` gives
    them (for ``device_codes`` and ``triton_range``'s kernels)."""
    both = device.put(torch.tensor([lo, hi], dtype=torch.float32).view(torch.uint8), where)
    return both[:4], both[4:]


def device_codes(flat: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor, bits: int, bins: bool = False) -> PartWriter:
    """The codes part (steps 2-3) over a range whose float32 bytes ``lo`` and ``hi`` are on
    the device (``device_range``), written by ``triton_range``; ``bins``: ``bin_quantize``'s
    codes."""
    return PartWriter(torch.uint8, bitpack.packed_bytes(flat.numel(), bits),
                      lambda view: triton_range.quantize_packed(flat, lo, hi, bits, view, bins))


def read_device_codes(payload: Payload, numel: int, bits: int, out: torch.Tensor, bins: bool = False) -> torch.Tensor:
    """Step 4 of a steady message into ``out``, lo and hi read from the message's header
    bytes on the device (``payload.meta``): 8-bit codes read as they are checksummed
    (``triton_range.dequantize8_crc``), else after the body's checksum; ``bins``:
    ``bin_quantize``'s bin centres."""
    lo, hi = payload.meta["lo"], payload.meta["hi"]
    if bits == 8:
        def read(source, prefix):
            return triton_range.dequantize8_crc(source, lo, hi, out, prefix, bins)
    else:
        def read(source, prefix):
            return triton_range.dequantize_packed(source, numel, bits, lo, hi, out, bins)
    read_part(payload, "codes", read, spoil=lambda: out.view(torch.uint8).fill_(0xFF), checksums=bits == 8)
    return out


@register
class Quantize(Codec):
    """Min-max uniform quantizer to ``bits`` bits per value."""

    name = "quantize"
    host_only = False  # a GPU tensor is ranged, quantized and packed on the GPU (engine/kernels/device.py)
    decodes_on_device = True
    reads_device_messages = True
    refuses_non_finite = True  # value_range refuses NaN and Inf before anything else
    codec_id = 4
    carrier = None  # its codes are bit-packed bytes: no codec compresses them further

    def __init__(self, bits: int = 8):
        if not (isinstance(bits, int) and not isinstance(bits, bool) and 1 <= bits <= 16):
            raise ValueError(f"quantize: bits must be an int in 1..16, got {bits!r}")
        self.bits = bits

    def params(self) -> dict:
        return {"bits": self.bits}

    def steady_meta(self) -> dict:
        return {"lo": None, "hi": None}  # a message's only meta: the range, written on the device in a block

    def steady_parts(self, numel: int, shape: tuple = ()):
        """The codes: the one part, ``bitpack.packed_bytes(numel, bits)`` bytes (1 to 8 bits,
        the widths the device kernels take)."""
        return (("codes", torch.uint8, bitpack.packed_bytes(numel, self.bits)),) if self.bits <= 8 else None

    def accepts_meta(self, meta: dict[str, float]) -> bool:
        return -LARGEST <= meta["lo"] <= meta["hi"] <= LARGEST  # finite, ordered (not NaN)

    def decodes_steady(self, out: torch.Tensor) -> bool:
        return triton_uniform.usable(self.bits, out)

    def compress_deferred(self, flat, state: CodecState, key: str, shape: tuple = ()) -> Payload | None:
        """``compress``'s payload of a non-empty float32 tensor on the GPU (1 to 8 bits, the
        Triton kernels chosen), its range left on the device: lo and hi (step 1) as the
        float32 bytes the header carries, the codes (steps 2-3) made from them there, and a
        NaN or Inf refused at the ``deferred_checks`` block's end (``refuse_unless``)."""
        if not (flat.numel() and flat.dtype == torch.float32 and device.on_device(flat)
                and triton_uniform.usable(self.bits, flat)):
            return None
        state.last.bits = self.bits
        lo, hi = device_range(flat, key, self.spec())
        return Payload(parts={"codes": device_codes(flat, lo, hi, self.bits)}, meta={"lo": lo, "hi": hi})

    def compress(self, flat, state: CodecState, key: str, shape: tuple = ()) -> Payload:
        n = flat.numel()
        state.last.bits = self.bits
        if n == 0:
            return Payload(parts={"codes": torch.empty(0, dtype=torch.uint8)}, meta={"lo": 0.0, "hi": 0.0})
        lo, hi = value_range(flat, key)
        levels = (1 << self.bits) - 1
        scale = levels / (hi - lo) if hi > lo else 0.0
        meta = {"lo": lo, "hi": hi}
        if scale > FLOAT32_MAX / 2:
            return Payload(parts={"codes": dispatch.pack(exact_codes(flat, lo, scale, self.bits), self.bits)}, meta=meta)
        writer = PartWriter(torch.uint8, bitpack.packed_bytes(n, self.bits),
                            lambda view: dispatch.quantize_packed(flat, lo, scale, self.bits, out=view, checksum=True),
                            checksummed=True)
        return Payload(parts={"codes": writer}, meta=meta)

    @property
    def verifies_while_widening(self) -> bool:
        """A large host message's codes (1 to 8 bits) are turned into ``out`` on the host as
        they are checked, a cached chunk at a time (``uniform.dequantize_host``)."""
        return bitpack.one_plane(self.bits)

    def decompress(self, payload: Payload, numel: int, state: CodecState, key: str, out=None, shape: tuple = ()) -> torch.Tensor:
        packed = expect_part(payload, "codes", torch.uint8, bitpack.packed_bytes(numel, self.bits))
        if isinstance(payload.meta.get("lo"), torch.Tensor):  # a steady message: its range read on the device
            return read_device_codes(payload, numel, self.bits, out)
        lo, hi = expect_range(payload, self.name)
        step = (hi - lo) / ((1 << self.bits) - 1)
        wide = step > FLOAT32_MAX / 2 or 0 < step < FLOAT32_TINY  # beyond float32's range, or a subnormal step
        if payload.unverified is not None:  # decode left the check to this pass (``checks_own_copy``)
            if not wide and out is not None and self.verifies_while_widening and not device.on_device(out):
                values = out.view(-1).numpy()  # a large host message, opened unverified (``checks_own_copy``)
                read_host_part(payload, "codes", lambda part: uniform.dequantize_host(part, self.bits, lo, step, values,
                                                                                     checksum=True),
                               lambda: values.view(np.uint8).fill(0xFF))
                return out
            settle(payload)
        if wide:  # whose few mantissa bits would break the bound: rescale in float64
            values = (lo + dispatch.unpack(packed, numel, self.bits).to(torch.float64) * step).to(torch.float32)
            return values if out is None else out.copy_(values)
        return dispatch.dequantize_packed(packed, numel, self.bits, lo, step, out=out)
