"""MQGrad's gradient quantizer (Cui et al. 2018, Sec. 4.1 and footnote 1; official code
``quantization/util/any_level.cc``, ``quantize_gradient_according_column``):
``colquant(bits=K)``.

One range per column of the TensorFlow weight [in, out], which is one range per *row* of
a torch ``Linear`` weight [out, in]; a tensor that is not 2-D has one range. For each row r:

1. lo_r = min(row), hi_r = max(row)            (two float32 values per row on the wire)
2. i = min(floor(2^K (w - lo_r) / (hi_r + eps - lo_r)), 2^K - 1)   (eps = 1e-6: the
   code's; the clamp catches the top value when eps is 0)
3. the K-bit codes, bit-packed (``engine/kernels/bitpack.py``)
4. decode at the bin centres of the range without eps, as the code's decoder does:
   w' = lo_r + (i + 1/2) (hi_r - lo_r) / 2^K
so |w - w'| <= (hi_r - lo_r + eps) / 2^(K+1) + eps. A constant row decodes to its value
plus (hi - lo) / 2^(K+1) = 0, exactly.

``bits=0`` takes K from each encode's decision (MQGrad's agent broadcasts it); every
message carries its K. ``max_floor=True`` starts each row's maximum at FLT_MIN, as the
code does (``std::numeric_limits<float>::min()``, the smallest *positive* float): an
all-negative row then gets hi = 1.2e-38 instead of its maximum, a wider range and coarser
bins. Off by default: the paper does not describe it, and it reads as a slip. Steps 2 and
4 are compiled kernels over the rows (``engine/kernels/rows.py``) computing in float64 (the code
computes in float32; they can differ only for a value on a bin edge); a GPU tensor takes
the same float64 arithmetic in torch operations on the GPU (``engine/kernels/torch_bins.py``), or,
of 1 to 8 bits where Triton runs, steps 2 and 3 in one Triton
kernel that writes into the message (``triton_rows.row_packed``) and step 4 in one that
reads from it (``row_values``). NaN or Inf is refused from step 1's ranges, which it
reaches.

8-bit codes of a received message tensor on a GPU are read into ``out`` as it is checked
(``triton_rows.row_values_crc``, the device CRC's words form): they are the message's
first part; the rows' lo and hi after them are checksummed apart and added.

With a fixed ``bits`` a message's layout is fixed by the tensor's shape (``steady_parts``):
inside ``wire.deferred_checks``, a GPU tensor's Triton path reads neither its ranges'
finiteness (refused at the block's end, ``compress_deferred``) nor a received message's
ranges nor header (judged there, the values NaN where they fail).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..base import Codec, plain_decision
from ..registry import register
from ...engine import (CorruptMessageError, PartWriter, Payload, bitpack, check_bits, deferred, device, dispatch,
                       expect_part, read_part, row_codes, row_values, settle, torch_bins, triton_rows,
                       triton_uniform)
from ..state import CodecState

FLT_MIN = 1.1754943508222875e-38  # std::numeric_limits<float>::min()
EPS = 1e-6


def _range_ends(lo: torch.Tensor, hi: torch.Tensor, ordered: bool = False) -> torch.Tensor:
    """``_finite_ranges``'s reductions, in one tensor on the rows' device."""
    return torch.stack([lo.min(), hi.max(), (hi - lo).min()] if ordered else [lo.min(), hi.max()])


def _row_ranges(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Step 1: each row's least and greatest value (lo, hi), a zero always +0. Which of -0
    and +0 a reduction returns for a row that holds both depends on the order it reduces
    in, which differs between devices; adding +0 makes it +0 on every one (the codes and the
    decoded values do not depend on it, only the message's bytes of lo and hi). On a device
    one reduction makes both (``aminmax``: one pass over the tensor, where ``amin`` and
    ``amax`` make two); on the CPU two do (its ``aminmax`` over rows was several times slower
    than both)."""
    lo, hi = torch.aminmax(rows, dim=1) if device.on_device(rows) else (rows.amin(1), rows.amax(1))
    return lo + 0.0, hi + 0.0


def _finite_ranges(lo: torch.Tensor, hi: torch.Tensor, ordered: bool = False) -> bool:
    """Whether every row's lo and hi are finite (and, ``ordered``, hi >= lo), from a few
    reductions read in one copy, where ``isfinite(...).all()`` launches five per tensor on
    a GPU: min(lo) and max(hi), NaN where any lo or hi is NaN, infinite where some lo is
    -inf or some hi +inf; and, ``ordered``, min(hi - lo), negative exactly where some
    hi < lo (a difference of distinct floats is never zero), so also where some lo is +inf
    or some hi -inf beside a finite other end. Not ``ordered`` (ranges of the tensor's own
    rows, so lo <= hi), a lo of +inf has a hi of +inf, and a hi of -inf a lo of -inf."""
    return _ends_accepted(_range_ends(lo, hi, ordered).cpu().numpy().tobytes())


def _ends_accepted(ends: bytes) -> bool:
    """``_finite_ranges`` of the reductions' float32 bytes."""
    least, greatest, *span = np.frombuffer(ends, dtype=np.float32).tolist()
    return math.isfinite(least) and math.isfinite(greatest) and all(s >= 0 for s in span)


def _rows(flat: torch.Tensor, shape: tuple) -> torch.Tensor:
    return flat.reshape(shape) if len(shape) == 2 else flat.reshape(1, -1)


@register
class ColumnQuantize(Codec):
    name = "colquant"
    codec_id = 13
    host_only = False  # a GPU tensor is ranged, quantized and packed on the GPU (engine/kernels/torch_bins.py)
    decodes_on_device = True
    reads_device_messages = True
    refuses_non_finite = True  # its own first pass refuses NaN and Inf, before any state changes

    def __init__(self, bits: int = 0, eps: float = EPS, max_floor: bool = False):
        self.bits = 0 if bits == 0 and not isinstance(bits, bool) else check_bits("bits", bits)
        if not (isinstance(eps, (int, float)) and not isinstance(eps, bool) and 0 <= eps <= 1):
            raise ValueError(f"eps={eps!r} is not allowed: eps must be a number in [0, 1]")
        if not isinstance(max_floor, bool):
            raise ValueError(f"max_floor={max_floor!r} is not allowed: max_floor must be True or False")
        self.eps, self.max_floor = float(eps), max_floor

    def params(self) -> dict:
        extra = {"max_floor": True} if self.max_floor else {}
        return {"bits": self.bits, "eps": self.eps, **extra}

    def warm_up_decision(self):
        return None if self.bits else plain_decision(bits=8)

    def steady_parts(self, numel: int, shape: tuple = ()):
        """The codes, then each row's lo and hi (a fixed ``bits`` of 1 to 8)."""
        if not 1 <= self.bits <= 8:
            return None
        rows = shape[0] if len(shape) == 2 else 1
        return (("codes", torch.uint8, bitpack.packed_bytes(numel, self.bits)), ("lo", torch.float32, rows),
                ("hi", torch.float32, rows))

    def steady_meta(self) -> dict:
        return {"bits": self.bits}

    def decodes_steady(self, out: torch.Tensor) -> bool:
        return 1 <= self.bits <= 8 and triton_uniform.usable(self.bits, out)

    def compress_deferred(self, flat, state: CodecState, key: str, shape: tuple = ()) -> Payload | None:
        """``compress`` on the Triton path, NaN and Inf refused at the block's end."""
        if not (1 <= self.bits <= 8 and flat.numel() and device.on_device(flat)
                and triton_uniform.usable(self.bits, flat.reshape(-1))):
            return None
        return self._quantize(flat, self.bits, state, shape, checks=deferred.active(), key=key)

    def compress(self, flat, state: CodecState, key: str, shape: tuple = ()) -> Payload:
        if not self.bits:
            raise ValueError(f"{self.spec()} takes its bit width from a policy decision: "
                             "encode(..., decision=Decision(bits=K))")
        return self._quantize(flat, self.bits, state, shape, key=key)

    def compress_decided(self, flat, state: CodecState, key: str, decision, shape: tuple = ()) -> Payload:
        if decision.keys is not None or decision.bits is None:
            return super().compress_decided(flat, state, key, decision, shape)
        if self.bits and decision.bits != self.bits:
            raise ValueError(f"{self.spec()} sends {self.bits} bits; a decision of {decision.bits} needs bits=0")
        return self._quantize(flat, check_bits("bits", decision.bits), state, shape, key=key)

    def _quantize(self, flat: torch.Tensor, bits: int, state: CodecState, shape: tuple, checks=None,
                  key: str = "") -> Payload:
        state.last.bits = bits
        rows = _rows(flat.to(torch.float32), shape)
        if rows.numel() == 0:
            lo = hi = torch.zeros(rows.shape[0], dtype=torch.float32)
            return Payload(parts={"codes": torch.empty(0, dtype=torch.uint8), "lo": lo, "hi": hi}, meta={"bits": bits})
        lo, hi = _row_ranges(rows)                                            # 1.
        refused = f"{self.spec()}: the tensor{f' {key!r}' if key else ''} contains NaN or Inf: it cannot be quantized"
        if checks is not None:  # NaN or Inf reaches a row's least or greatest: judged at the block's end
            checks.refuse_unless(_range_ends(lo, hi), _ends_accepted, refused + " (refused at the block's end)")
        elif not _finite_ranges(lo, hi):
            raise ValueError(refused)
        if self.max_floor:
            hi = hi.clamp_min(FLT_MIN)
        lo, hi = lo.contiguous(), hi.contiguous()
        if device.on_device(rows):
            x = rows.contiguous()
            if bits <= 8 and triton_uniform.usable(bits, x):  # 2. and 3. in one pass
                bins = torch_bins.row_scales(lo, hi, self.eps, 1 << bits)
                codes = PartWriter(torch.uint8, bitpack.packed_bytes(x.numel(), bits),
                                   lambda view: device.written_through(  # a host message: copied over
                                       view, x.device, triton_uniform.usable(bits, x, view),
                                       lambda codes: triton_rows.row_packed(x, bins, bits, codes)))
                return Payload(parts={"codes": codes, "lo": lo, "hi": hi}, meta={"bits": bits})
            codes = torch_bins.row_codes(rows, lo, hi, self.eps, 1 << bits)                         # 2.
            return Payload(parts={"codes": dispatch.pack(codes.reshape(-1), bits), "lo": lo, "hi": hi},  # 3.
                           meta={"bits": bits})
        codes = np.empty(tuple(rows.shape), dtype=np.uint8 if bits <= 8 else np.int32)
        row_codes(rows.contiguous().numpy(), lo.numpy(), hi.numpy(), self.eps, 1 << bits, codes)  # 2.
        return Payload(parts={"codes": dispatch.pack(torch.from_numpy(codes).reshape(-1), bits),    # 3.
                              "lo": lo, "hi": hi}, meta={"bits": bits})

    def decompress(self, payload: Payload, numel: int, state: CodecState, key: str, out=None,
                   shape: tuple = ()) -> torch.Tensor:
        bits = payload.meta.get("bits")
        if not (isinstance(bits, int) and 1 <= bits <= 16) or (self.bits and bits != self.bits):
            raise CorruptMessageError(f"{self.spec()}: bits {bits!r} is not an int in 1..16 (or not this codec's)")
        rows = shape[0] if len(shape) == 2 else 1
        lo = expect_part(payload, "lo", torch.float32, rows if numel else None)
        hi = expect_part(payload, "hi", torch.float32, lo.numel())
        if payload.unverified is not None:  # a steady message in a deferred_checks block (``decodes_steady``)
            if deferred.active() is not None:
                return self._deferred(payload, numel, bits, lo, hi, out)
            settle(payload)  # any other message: checked first, then decoded as usual
        if lo.numel() and not _finite_ranges(lo, hi, ordered=True):  # one read of the device
            raise CorruptMessageError(f"{self.spec()}: row ranges are not finite intervals")
        packed = expect_part(payload, "codes", torch.uint8, bitpack.packed_bytes(numel, bits))
        if numel == 0:
            values = torch.empty(0, dtype=torch.float32)
            return values if out is None else out
        if out is not None and device.on_device(out):  # the codes go to out's device, the values stay there
            packed = device.put(packed, out.device)
            if bits <= 8 and out.dtype == torch.float32 and triton_uniform.usable(bits, packed, out):  # 4. in one pass
                bins = torch_bins.row_steps(device.put(lo, out.device), device.put(hi, out.device), 1 << bits)
                return triton_rows.row_values(packed, numel // lo.numel(), bins, bits, out)
            codes = dispatch.unpack(packed, numel, bits).reshape(lo.numel(), -1)   # 4.
            values = torch_bins.row_values(codes, device.put(lo, out.device), device.put(hi, out.device), 1 << bits)
            return out.copy_(values.reshape(-1))
        codes = dispatch.unpack(packed, numel, bits).reshape(lo.numel(), -1).numpy()               # 4.
        values = np.empty(codes.shape, dtype=np.float32)
        row_values(codes, lo.contiguous().numpy(), hi.contiguous().numpy(), 1 << bits, values)
        values = torch.from_numpy(values).reshape(-1)
        return values if out is None else out.copy_(values)

    def _deferred(self, payload: Payload, numel: int, bits: int, lo: torch.Tensor, hi: torch.Tensor,
                  out: torch.Tensor) -> torch.Tensor:
        """Step 4 into ``out`` with nothing read: the rows' ranges judged at the block's end with
        the checksum (finite, ordered), ``out`` NaN where they fail."""
        def spoil():  # one for both checks: a message that fails both is one damaged message
            return deferred.spoiled(out)
        deferred.active().corrupt_unless(_range_ends(lo, hi, ordered=True), _ends_accepted, spoil,
                                         payload.unverified.what)
        return self._read_codes(payload, numel, bits, lo, hi, out, spoil)

    @staticmethod
    def _read_codes(payload: Payload, numel: int, bits: int, lo: torch.Tensor, hi: torch.Tensor,
                    out: torch.Tensor, spoil) -> torch.Tensor:
        """The codes decoded into ``out`` and the message checked (``read_part``): in one pass
        (``triton_rows.row_values_crc``) for 8-bit codes."""
        bins, cols = torch_bins.row_steps(lo, hi, 1 << bits), numel // lo.numel()
        if bits == 8:
            read_part(payload, "codes", lambda source, prefix, rest: triton_rows.row_values_crc(
                source, cols, bins, out, prefix, rest), spoil, later=True)
        else:
            read_part(payload, "codes", lambda source, prefix: triton_rows.row_values(source, cols, bins, bits, out),
                      spoil)
        return out
