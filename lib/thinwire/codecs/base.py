"""The codec interface: tensor (+ state) -> message bytes -> tensor (+ state)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import SimpleNamespace
from typing import ClassVar

import torch

from ..engine import Payload, checksum, framing, warm_checksum, wire
from .state import CodecState
from .stats import SendStats


class Codec(ABC):
    """A compressor. Subclasses implement ``compress`` / ``decompress`` on flat tensors.

    ``encode`` and ``decode`` wrap them in the checksummed wire format (``wire/format.py``), so
    a message is decodable from its bytes alone plus the state both ends legitimately
    share. ``carrier`` names the part a following stage of a ``Chain`` compresses.

    Devices: a codec whose ``host_only`` is False compresses a GPU tensor on the GPU
    (selection, casts) and only its parts are copied to the host message. A host-only
    codec (numba kernels, entropy coders) gets an explicit device-to-host copy of the
    tensor first, inside ``encode``, so callers that time encoding count the copy; its
    residuals then live on the host. Decoding writes into ``out`` on any device.
    """

    name: ClassVar[str]
    codec_id: ClassVar[int]          # the wire's one-byte codec id; fixed per class (registry)
    carrier: ClassVar[str | None] = None
    host_only: ClassVar[bool] = True  # compress needs host memory (numpy / numba kernels)
    # decompress writes a GPU ``out`` on the GPU (the message's parts go there, not the
    # decoded values); without it a GPU ``out`` gets the values decoded on the host
    decodes_on_device: ClassVar[bool] = False
    # decompress reads a message kept in GPU memory in place (its parts are views there:
    # ``wire/tensor_message.py``); without it such a message is copied to the host first
    reads_device_messages: ClassVar[bool] = False
    # A codec that sends NaN and Inf bit for bit (fp32, fp16) sets this; any other refuses
    # them in ``encode`` before its state (residual, cache) is touched, with one extra pass
    # over the tensor unless ``refuses_non_finite``: its own first pass refuses them and it
    # changes no state but the generator, which ``encode`` restores on a refusal.
    carries_non_finite: ClassVar[bool] = False
    refuses_non_finite: ClassVar[bool] = False
    # A codec whose decompress copies its one large part out with ``wire.copy_part`` sets
    # this: ``decode`` then opens a large host message unverified (``checks_own_copy``)
    # and the copy verifies it, so the message is read once, not twice.
    verifies_while_copying: ClassVar[bool] = False
    # a message tensor on a GPU whose one part is 16-bit floats: inside ``wire.deferred_checks``
    # decompress casts it into a float32 ``out`` there and the device CRC checks it (``fp16``)
    verifies_while_casting: ClassVar[bool] = False
    # the same for a large host message whose one part a kernel turns into a float32 ``out``
    # on the host as it checks it (``wire.read_host_part``: fp16 widens, quantize rescales)
    verifies_while_widening: ClassVar[bool] = False
    # Bumped when the same spec starts to produce different messages; the results of runs
    # that use the codec are then recomputed (``RunConfig.key``), not taken from the cache.
    revision: ClassVar[int] = 0

    def values_per_byte(self) -> float:
        """The most values one byte of this codec's message stands for at its densest: a
        bit-packed code of one bit, 8 (a sparse or entropy-coded codec says its own). A
        ``decode`` that allocates its own output refuses a header claiming more than this
        many values per message byte, or ``DECODE_FLOOR`` values if more."""
        return 8.0

    @property
    def memory(self) -> bool:
        """True when the sender keeps what it did not send and sends it later (a residual)."""
        return False

    def params(self) -> dict:
        """Constructor arguments, for ``spec``."""
        return {}

    def spec(self) -> str:
        """Canonical text form, parseable by ``registry.make_codec``."""
        args = [f"{k}={v!r}" for k, v in self.params().items()]
        return f"{self.name}({', '.join(args)})" if args else self.name

    @property
    def digest(self) -> int:
        """CRC-32C of ``spec()``: the wire header's digest of this codec's parameters."""
        cached = self.__dict__.get("_digest")
        if cached is None:
            cached = self.__dict__["_digest"] = checksum(memoryview(self.spec().encode()))
        return cached

    def __repr__(self) -> str:
        return self.spec()

    def __eq__(self, other) -> bool:
        return isinstance(other, Codec) and other.spec() == self.spec()

    def __hash__(self) -> int:
        return hash(self.spec())

    @abstractmethod
    def compress(self, flat: torch.Tensor, state: CodecState, key: str, shape: tuple = ()) -> Payload:
        """Turn a 1-D tensor into a payload. ``shape``: the tensor's shape before it was
        flattened (``flat`` is its row-major order), for codecs that treat rows or columns
        apart; ``()`` when unknown (read it as ``(flat.numel(),)``)."""

    def compress_decided(self, flat: torch.Tensor, state: CodecState, key: str, decision, shape: tuple = ()) -> Payload:
        """``compress`` under a policy's decision (bit width, keys); codecs that take one override it."""
        raise ValueError(f"{self.spec()} takes no per-message decision (bits={decision.bits!r}, "
                         f"keys={'given' if decision.keys is not None else None})")

    def steady_parts(self, numel: int, shape: tuple = ()) -> tuple[tuple[str, torch.dtype, int], ...] | None:
        """The parts (name, dtype, numel) of every message of a ``numel``-value tensor of
        ``shape`` (``()``: unknown), for a codec whose messages carry no meta but
        ``steady_meta`` and parts fixed by the tensor's shape (fp32, fp16, bf16; min-max,
        bin (raw codes), per-row and QSGD quantization), else None. Such a codec's header is fixed by the
        tensor's shape and dtype, up to the bytes of the meta values it writes on the device:
        a message tensor's is copied from one kept on the device (``framing.is_steady``), and inside
        ``wire.deferred_checks`` a decode into ``out`` on the message's device does not read
        it (``framing._steady``)."""
        return None

    def steady_meta(self) -> dict[str, int | None]:
        """The meta of every steady message, in the order the codec writes it: a value fixed
        by the codec's parameters (a bit width), or None for a float32 written on the device
        (min-max quantization's range: ``compress_deferred``)."""
        return {}

    def accepts_meta(self, meta: dict[str, float]) -> bool:
        """Whether the float32 ``steady_meta`` values of a steady message read at a
        ``deferred_checks`` block's end are ones this codec sends (a finite range)."""
        return True

    def decodes_steady(self, out: torch.Tensor) -> bool:
        """Whether ``decompress`` reads a steady message (``framing._steady``) into ``out`` as it checks
        it: a codec that verifies as it copies or casts its part."""
        return self.verifies_while_copying or self.verifies_while_casting

    def compress_deferred(self, flat: torch.Tensor, state: CodecState, key: str, shape: tuple = ()) -> Payload | None:
        """``compress`` into a message tensor on ``flat``'s device inside ``wire.deferred_checks``,
        for a codec that can leave what it would read on the device (its meta: a range) and
        register what it must check at the block's end; None (the default) to ``compress``."""
        return None

    @abstractmethod
    def decompress(self, payload: Payload, numel: int, state: CodecState, key: str,
                   out: torch.Tensor | None = None, shape: tuple = ()) -> torch.Tensor:
        """Rebuild a 1-D float tensor of ``numel`` entries from a payload (into ``out``
        when the codec can; the caller copies otherwise); ``shape`` as in ``compress``."""

    def encode(self, tensor: torch.Tensor, state: CodecState | None = None, key: str = "",
               decision=None, out: bytearray | None = None) -> wire.Message:
        """Compress ``tensor`` into a message (a ``bytearray``). ``decision`` (a policy's
        ``Decision``) may fix this message's bit width or keys, for codecs that take them.
        ``out``: a message no longer needed (sent and decoded) to write this one into, so a
        sender that encodes every step reuses one buffer; it is resized to fit. ``out`` a uint8
        tensor: the message is written into it, on its device (``wire/tensor_message.py``),
        and that tensor (or a larger one on its device) is returned; a codec that compresses
        on the host then copies its message there. Into a message tensor on the tensor's
        device inside ``wire.deferred_checks``, a codec that can leave what it would read on
        the device does (``compress_deferred``): its refusal of NaN or Inf then comes at the
        block's end."""
        state = state if state is not None else CodecState()
        return framing.encode(self, tensor, state, key, decision, out, SendStats)

    def _open(self, message, verify: bool = True) -> tuple[dict, Payload, int]:
        """(header, payload, numel) of a message this codec encoded, or ``CorruptMessageError``."""
        return framing.open_message(self, message, verify)

    def decode(self, message, state: CodecState | None = None, key: str = "",
               out: torch.Tensor | None = None, like: torch.Tensor | None = None,
               max_values: int | None = None) -> torch.Tensor:
        """Rebuild the tensor a message carries; ``CorruptMessageError`` if it is damaged.

        ``state`` is the receiver's own state for this sender (``StateBook``); ``out``
        (optional, contiguous, of the message's shape and dtype, on any device) receives
        the values and is returned: callers that decode every step reuse one buffer.
        ``like``: a tensor of the shape and dtype the receiver expects; a header that
        claims another is refused before anything is allocated (so is one that does not
        fit ``out``). Without either, a header may claim no more values than the message
        can carry (``values_per_byte`` times its length) or ``max_values`` (default
        ``DECODE_FLOOR``), whichever is more: a forged small message cannot make the
        receiver allocate gigabytes.
        """
        state = state if state is not None else CodecState()
        return framing.decode(self, message, state, key, out, like, max_values)

    def checks_own_copy(self, message, out: torch.Tensor | None) -> bool:
        """Whether ``decode`` leaves the message's checksum to ``decompress``, which verifies it
        as it copies its part out (``framing.checks_own_copy``)."""
        return framing.checks_own_copy(self, message, out)

    def subtract_decoded(self, payload: Payload, numel: int, into: torch.Tensor, state: CodecState,
                         key: str, shape: tuple = ()) -> bool:
        """``into -= decompress(payload)`` in place (``into``: flat float32), where the codec
        can do it without decoding into a tensor of its own: a sparse message only where it
        carries a value (elsewhere its decode is zero, and x - 0 is x, -0.0 included).
        Returns whether it did; False (here) leaves the decode and subtraction to the caller.
        Error feedback's step 3."""
        return False

    def sparse_entries(self, payload: Payload, numel: int, state: CodecState,
                       key: str, shape: tuple = ()) -> tuple[torch.Tensor, torch.Tensor] | None:
        """(index int64, values float32) of the coordinates a sparse message carries, or
        None for a codec whose messages carry every coordinate."""
        return None

    def merge(self, message, into: torch.Tensor, state: CodecState | None = None, key: str = "") -> int:
        """Merge decode: overwrite in ``into`` only the coordinates the message carries
        and return how many. A sent zero overwrites; an unsent coordinate keeps its value.
        A dense codec's message carries every coordinate, so it overwrites all of them."""
        return framing.merge(self, message, into, state if state is not None else CodecState(), key)

    def accumulate(self, message, into: torch.Tensor, state: CodecState | None = None, key: str = "",
                   scratch: torch.Tensor | None = None) -> None:
        """``into += decode(message)``: a sparse message adds its entries only (the same
        float result, since x + 0 = x), a dense one decodes into ``scratch`` (a reused
        contiguous float32 host buffer of the message's shape, or None) and adds it."""
        framing.accumulate(self, message, into, state if state is not None else CodecState(), key, scratch)

    def warm_up(self) -> None:
        """Encode and decode a small tensor once, so that the compiled kernels this codec uses
        are loaded (or compiled) before anything is timed."""
        x = torch.linspace(-1.0, 1.0, 1024)
        self.decode(self.encode(x, CodecState(0), "warm_up", self.warm_up_decision()), CodecState(0), "warm_up")
        warm_checksum()  # large messages are checksummed by a parallel kernel

    def warm_up_decision(self):
        """The decision ``warm_up`` encodes with: None, or for a codec that needs one (a bit
        width from a policy) a typical one."""
        return None


def plain_decision(**fields) -> SimpleNamespace:
    """A decision as codecs read one (the fields of ``policies.Decision``, which sits above
    the codecs), for a codec that makes one itself (a warm-up, a stage of a chain)."""
    unset = dict(send=True, bits=None, levels=None, keys=None, core=None, refresh=False, entropy=None)
    return SimpleNamespace(**{**unset, **fields})
