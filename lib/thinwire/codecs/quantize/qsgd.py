"""QSGD (Alistarh et al. 2017, Sec. 3.1 and 3.3): unbiased stochastic quantization,
the Quant-DP baseline of Slim-DP (Sec. 4.2: "the 8-bit version" with "bucket size 512").

For each bucket v of ``bucket`` consecutive values (the last may be shorter):
1. norm = ||v||_2 (``norm="l2"``, the QSGD paper and GRACE) or max |v_i| (``"max"``,
   other ports), sent as one float32 per bucket;
2. r_i = |v_i| s / norm, with s = 2^(bits-1) - 1 levels above zero;
3. level_i = floor(r_i + u_i), u_i uniform in [0, 1): level_i is l + 1 with probability
   r_i - l (l = floor(r_i)) and l otherwise, so E[level_i] = r_i (Eq. 5's xi_i = level_i / s);
4. code_i = level_i | sign_i << (bits - 1): one sign bit and a (bits - 1)-bit level,
   bit-packed (``engine/kernels/bitpack.py``): 8 bits = sign + 7-bit level, s = 127;
5. decode: v'_i = sign_i * level_i * norm / s. E[v'] = v: unbiased; with the L2 norm the
   variance is at most min(d / s^2, sqrt(d) / s) ||v||^2 per bucket of d values (Lemma 3.1).

``coding="elias"`` writes the codes in QSGD's own variable-length coding (Sec. 3.2: the
Elias code of each non-zero level's position gap and of its level, and a sign bit;
``engine/kernels/elias.py``) instead of fixed-width, bit-packed codes: the same values arrive, in
fewer bytes when most levels are small. The default, ``"fixed"``, is what Quant-DP's runs
send (and is left out of the spec, so their results keep their keys).

The u_i come from the sender state's own generator: one 64-bit key per message, expanded
by a counter-based hash (``engine/kernels/qsgd.py``), so a message depends only on the seed and
the messages before it. Steps 1-4 are one compiled pass that writes into the message
buffer and step 5 one pass out of it; up to 8 bits, the host kernels checksum the codes as
they write them, and a large host message's codes as they read them into ``out``
(``verifies_while_widening``: its norms are read unverified, then judged with the
checksum). A GPU tensor takes torch operations on the GPU that
write the same bytes: one Triton kernel each way (``engine/kernels/triton_qsgd.py``) where Triton
runs, else torch's operations (``engine/kernels/torch_qsgd.py``). NaN or Inf input raises
``ValueError``.

With fixed-width codes a message's parts are fixed by the tensor's size (``steady_parts``):
its header is copied from one kept on the device, and inside ``wire.deferred_checks`` the
Triton path neither reads the norms' maximum to refuse NaN and Inf (``compress_deferred``:
the refusal comes at the block's end, after the message's key was drawn) nor the received
norms' range to refuse a damaged message (the decode: judged at the block's end, the
values NaN), nor the header.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ...engine import (CorruptMessageError, PartWriter, Payload, RefusedInputError, bitpack, deferred, device, dispatch,
                       elias, expect_part, qsgd, read_host_part, read_part, settle, triton_qsgd)
from ..base import Codec
from ..registry import register
from ..state import CodecState

NORMS = ("l2", "max")
CODINGS = ("fixed", "elias")
KEY_SPAN = 2**62  # message keys are drawn in [0, KEY_SPAN)


@register
class QSGD(Codec):
    """Stochastic ``bits``-bit quantization per bucket of ``bucket`` values."""

    name = "qsgd"
    host_only = False  # a GPU tensor is quantized on the GPU (engine/kernels/torch_qsgd.py), the same bytes
    decodes_on_device = True
    reads_device_messages = True
    refuses_non_finite = True  # the norm pass refuses NaN and Inf; only the generator has moved
    codec_id = 10
    carrier = None  # bit-packed codes: no codec compresses them further

    def __init__(self, bits: int = 8, bucket: int = 512, norm: str = "l2", coding: str = "fixed"):
        if not (isinstance(bits, int) and not isinstance(bits, bool) and 2 <= bits <= 16):
            raise ValueError(f"qsgd: bits={bits!r} is not allowed: bits must be an int in 2..16 "
                             "(one sign bit and at least one level bit)")
        if not (isinstance(bucket, int) and not isinstance(bucket, bool) and 1 <= bucket <= 2**24):
            raise ValueError(f"qsgd: bucket={bucket!r} is not allowed: bucket must be an int in 1..{2**24}")
        if norm not in NORMS:
            raise ValueError(f"qsgd: norm={norm!r} is not allowed: norm must be one of {list(NORMS)}")
        if coding not in CODINGS:
            raise ValueError(f"qsgd: coding={coding!r} is not allowed: coding must be one of {list(CODINGS)}")
        self.bits, self.bucket, self.norm, self.coding = bits, bucket, norm, coding

    @property
    def levels(self) -> int:
        """s: the quantization levels above zero."""
        return (1 << (self.bits - 1)) - 1

    def params(self) -> dict:
        coding = {} if self.coding == "fixed" else {"coding": self.coding}
        return {"bits": self.bits, "bucket": self.bucket, "norm": self.norm, **coding}

    def buckets(self, numel: int) -> int:
        return -(-numel // self.bucket)

    def values_per_byte(self) -> float:
        """Fixed codes: a bit a value at least; Elias codes: a float32 norm per bucket at least."""
        return 8.0 if self.coding == "fixed" else self.bucket / 4.0

    def steady_parts(self, numel: int, shape: tuple = ()):
        """Fixed-width codes, then one norm per bucket (``coding="fixed"``)."""
        if self.coding != "fixed":
            return None
        return ("codes", torch.uint8, bitpack.packed_bytes(numel, self.bits)), ("norms", torch.float32,
                                                                               self.buckets(numel))

    def decodes_steady(self, out: torch.Tensor) -> bool:
        return self.coding == "fixed" and triton_qsgd.usable(self.bits, self.bucket, out)

    def compress_deferred(self, flat, state: CodecState, key: str, shape: tuple = ()) -> Payload | None:
        """``compress`` on the Triton path, NaN and Inf refused at the block's end."""
        if not (self.coding == "fixed" and device.on_device(flat)
                and triton_qsgd.usable(self.bits, self.bucket, flat.reshape(-1))):
            return None
        return self.compress(flat, state, key, shape, checks=deferred.active())

    def compress(self, flat, state: CodecState, key: str, shape: tuple = (), checks=None) -> Payload:
        n = flat.numel()
        state.last.bits = self.bits
        message_key = int(torch.randint(0, KEY_SPAN, (1,), generator=state.generator))

        def refuse(finite_input: bool):
            if not finite_input:
                raise RefusedInputError(f"qsgd: tensor {key!r} contains NaN or Inf: it cannot be quantized")
            raise RefusedInputError(f"qsgd: a bucket norm of tensor {key!r} overflows float32 (values of about "
                             f"1e19 and more, squared and summed): scale the tensor, or use norm='max'")

        judge_later = None if checks is None else (lambda greatest: checks.refuse_unless(
            greatest, deferred.finite_float32, f"qsgd: tensor {key!r} contains NaN or Inf, or a bucket norm overflows "
            "float32 (refused at the block's end)"))
        quantized = dispatch.qsgd_codes(flat, self.bucket, self.norm, self.bits, message_key, refuse,  # steps 1-4
                                        self.coding == "fixed", judge_later)
        # the codes part is written first: its kernel computes the norms the next part copies
        if self.coding == "elias":
            packed = torch.empty(bitpack.packed_bytes(n, self.bits), dtype=torch.uint8)
            quantized.write(packed)
            codes = dispatch.unpack(packed, n, self.bits).numpy()
            stream = np.empty((elias.stream_bits(codes, self.bucket, self.bits) + 7) // 8, np.uint8)
            elias.encode(codes, self.bucket, self.bits, stream)
            return Payload(parts={"stream": torch.from_numpy(stream), "norms": torch.from_numpy(quantized.norms)})
        codes = PartWriter(torch.uint8, bitpack.packed_bytes(n, self.bits), quantized.write, checksummed=True)
        return Payload(parts={"codes": codes, "norms": PartWriter(torch.float32, self.buckets(n), quantized.write_norms)})

    def decompress(self, payload: Payload, numel: int, state: CodecState, key: str, out=None, shape: tuple = ()) -> torch.Tensor:
        norms = expect_part(payload, "norms", torch.float32, self.buckets(numel))
        if self.coding == "elias":
            codes = np.empty(numel, np.uint8 if self.bits <= 8 else np.int32)
            if elias.decode(expect_part(payload, "stream", torch.uint8).cpu().contiguous().numpy(), numel, self.bucket,
                            self.bits, codes) != 0:
                raise CorruptMessageError("qsgd: the Elias-coded levels are inconsistent with the tensor's size")
            packed = dispatch.pack(torch.from_numpy(codes), self.bits)
        else:
            packed = expect_part(payload, "codes", torch.uint8, bitpack.packed_bytes(numel, self.bits))
        if payload.unverified is not None:  # a steady message in a deferred_checks block (``decodes_steady``),
            if deferred.active() is not None:  # or a host message read as it is checked
                return self._deferred(payload, norms, packed, out)
            if self._reads_on_host(payload, packed, norms, out):
                return self._read_on_host(payload, norms, out)
            settle(payload)
        return dispatch.qsgd_values(packed, numel, self.bucket, norms, self.bits, self.levels, out)  # step 5

    def _deferred(self, payload: Payload, norms: torch.Tensor, packed: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        """Step 5 into ``out`` with nothing read: the norms' least and greatest judged at the
        block's end with the checksum (finite, non-negative), ``out`` NaN where they fail."""
        def spoil():  # one for both checks: a message that fails both is one damaged message
            return deferred.spoiled(out)
        if norms.numel():
            deferred.active().corrupt_unless(torch.stack(torch.aminmax(norms)), _norms_in_range, spoil,
                                             payload.unverified.what)
        return self._read_codes(payload, norms, out, spoil)

    @property
    def verifies_while_widening(self) -> bool:
        """A large host message's codes (up to 8 bits) are turned into ``out`` on the host as
        they are checked, a cached chunk at a time (``_read_on_host``)."""
        return self.coding == "fixed" and bitpack.one_plane(self.bits)

    def _reads_on_host(self, payload: Payload, packed: torch.Tensor, norms: torch.Tensor, out) -> bool:
        """Whether ``payload`` is a host message of codes and norms for a host ``out``."""
        return (self.verifies_while_widening and set(payload.parts) == {"codes", "norms"} and out is not None
                and not device.on_device(out) and not device.on_device(packed) and not device.on_device(norms))

    def _read_on_host(self, payload: Payload, norms: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        """Step 5 into ``out`` as the codes' checksum is taken (``qsgd.dequantize_packed``),
        then judged against the message's with the norms read (``wire.read_host_part``)."""
        step, values = dispatch.qsgd_steps(norms, self.levels), out.view(-1).numpy()
        read_host_part(payload, "codes", lambda part: qsgd.dequantize_packed(part, self.bucket, step, self.bits, values,
                                                                            checksum=True),
                       lambda: values.view(np.uint8).fill(0xFF))
        return out

    def _read_codes(self, payload: Payload, norms: torch.Tensor, out: torch.Tensor, spoil) -> torch.Tensor:
        """The codes decoded into ``out`` and the message checked (``read_part``)."""
        read_part(payload, "codes", lambda source, prefix: triton_qsgd.dequantize_packed(
            source, self.bucket, norms, self.bits, out), spoil)
        return out

    def variance_bound(self, bucket_norms_squared: torch.Tensor, sizes: torch.Tensor) -> float:
        """QSGD Lemma 3.1 summed over buckets: sum_b min(d_b / s^2, sqrt(d_b) / s) ||v_b||^2
        (for ``norm="l2"``)."""
        s = self.levels
        factor = torch.minimum(sizes / s**2, sizes.sqrt() / s)
        return float((factor * bucket_norms_squared).sum())


def bucket_sizes(numel: int, bucket: int) -> torch.Tensor:
    """The size of every bucket of a ``numel``-value tensor (float64)."""
    sizes = torch.full((math.ceil(numel / bucket),), float(bucket), dtype=torch.float64)
    if numel % bucket:
        sizes[-1] = numel % bucket
    return sizes


def _norms_in_range(ends: bytes) -> bool:
    """Whether the least and greatest bucket norm (two float32) are finite and non-negative."""
    least, greatest = np.frombuffer(ends, dtype=np.float32)
    return bool(least >= 0 and np.isfinite(greatest))
