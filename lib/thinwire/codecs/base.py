"""The codec interface: tensor (+ state) -> message bytes -> tensor (+ state)."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from types import SimpleNamespace
from typing import ClassVar

import torch

from ..engine import CorruptMessageError, Payload, checksum, team, tensor_message, warm_checksum, wire
from .state import CodecState
from .stats import SendStats


# Values a decode may allocate for a message whatever its size (4 MiB of float32): a tiny
# message of a sparse codec may stand for a large tensor of zeros, and a receiver that knows
# the tensor passes ``out`` or ``like`` (or ``max_values``) to take more.
DECODE_FLOOR = 1 << 20


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
        a message tensor's is copied from one kept on the device (``_is_steady``), and inside
        ``wire.deferred_checks`` a decode into ``out`` on the message's device does not read
        it (``_steady``)."""
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

    def _is_steady(self, payload: Payload, numel: int, shape: tuple) -> bool:
        """Whether ``payload``'s header is the steady one: parts fixed by the shape, and its
        meta ``steady_meta``'s fixed values and device float32 bytes."""
        want = self.steady_meta()
        return (self.steady_parts(numel, shape) is not None and list(payload.meta) == list(want)
                and all(isinstance(value, torch.Tensor) if fixed is None else value == fixed
                        for value, fixed in zip(payload.meta.values(), want.values())))

    def decodes_steady(self, out: torch.Tensor) -> bool:
        """Whether ``decompress`` reads a steady message (``_steady``) into ``out`` as it checks
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
        team.fit(tensor.numel() * tensor.element_size())  # one thread per core, more on a busy machine, one for a small tensor
        if decision is not None and not decision.send:
            raise ValueError("a decision not to send has no message: skip the encode")
        check_representable(tensor, key)
        if not (self.carries_non_finite or self.refuses_non_finite):
            check_finite(tensor, key, self)
        _check_same_size(state, key, tensor.numel())
        state.last = SendStats(values=tensor.numel())
        flat = tensor.detach().reshape(-1)
        if self.host_only and flat.device.type != "cpu":
            flat = flat.cpu()  # explicit copy: this codec's kernels read host memory
        rng = state.generator.get_state()
        try:
            plain = decision is None or (decision.bits is None and decision.keys is None and decision.core is None)
            payload = None
            if plain and isinstance(out, torch.Tensor) and out.device == flat.device and wire.deferred.active():
                payload = self.compress_deferred(flat, state, key, shape=tuple(tensor.shape))
            if payload is None and plain:
                payload = self.compress(flat, state, key, shape=tuple(tensor.shape))
            elif payload is None:
                payload = self.compress_decided(flat, state, key, decision, shape=tuple(tensor.shape))
            if decision is not None and decision.entropy is not None:
                state.last.entropy = decision.entropy
            to_device = isinstance(out, torch.Tensor) and out.device.type != "cpu" and flat.device.type == "cpu"
            message = wire.pack(self.codec_id, self.digest, tensor.dtype, tuple(tensor.shape), payload,
                                None if to_device else out, steady=self._is_steady(payload, flat.numel(), tensor.shape))
            if to_device:  # host kernels wrote host memory: the message goes to out's device once
                message = tensor_message.into(message, out)
        except BaseException:
            state.generator.set_state(rng)  # a refused message draws nothing
            raise
        if state.slots.get(key):  # stateful for this key: remember the size its state belongs to
            state.slots[key].setdefault("numel", torch.tensor(tensor.numel()))
        return message

    def _open(self, message, verify: bool = True) -> tuple[dict, Payload, int]:
        """(header, payload, numel) of a message this codec encoded, or ``CorruptMessageError``;
        ``verify=False``: its checksum left to ``decompress`` (``checks_own_copy``)."""
        header, payload = wire.unpack(message, verify=verify)
        if header["codec_id"] != self.codec_id or header["digest"] != self.digest:
            raise CorruptMessageError(
                f"message was encoded by codec id {header['codec_id']} with parameter digest {header['digest']:#010x}, "
                f"not by {self.spec()!r} (id {self.codec_id}, digest {self.digest:#010x})")
        return header, payload, math.prod(header["shape"])

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
        team.fit()
        message = self._readable(message, None if out is None else out.device)
        opened = self._steady(message, out, key)
        deferred = opened is not None or self.checks_own_copy(message, out)
        header, payload, numel = opened or self._open(message, verify=not deferred)
        team.fit(4 * numel)  # one thread for a small tensor
        if opened is None and isinstance(payload.unverified, tensor_message.Unverified) and wire.deferred.active():
            payload.unverified = payload.unverified._replace(what=f"{self.spec()} message for {key!r}")
        shape = header["shape"]
        if out is None and like is None:
            self._check_justified(numel, message, key, max_values)
        if like is not None and (tuple(like.shape) != shape or like.dtype != header["dtype"]):
            raise CorruptMessageError(f"{self.spec()}: tensor {key!r} is {like.dtype} {tuple(like.shape)} here, "
                                      f"the message claims {header['dtype']} {shape}")
        flat_out = None
        if out is not None:
            if tuple(out.shape) != shape or out.dtype != header["dtype"] or not out.is_contiguous():
                if deferred:  # a damaged header is a damaged message, not a wrong out
                    wire.verify(message)
                raise ValueError(f"out must be contiguous {header['dtype']} of shape {shape}, "
                                 f"got {out.dtype} {tuple(out.shape)}")
            flat_out = (out.view(-1) if out.dtype == torch.float32 and (out.device.type == "cpu" or self.decodes_on_device)
                        else None)
        elif isinstance(message, torch.Tensor) and message.device.type != "cpu":  # decoded on the message's device
            flat_out = torch.empty(numel, dtype=torch.float32, device=message.device)
        flat = _within_dtype(self._dense(payload, numel, state, key, flat_out, shape), header["dtype"])
        if payload.unverified is not None:  # a codec that deferred the check must have made it
            raise RuntimeError(f"{self.spec()}: decompress left the message's checksum unverified")
        if out is None:
            return flat.to(header["dtype"]).reshape(shape)
        if flat is not flat_out:
            out.view(-1).copy_(flat)
        return out

    def _check_justified(self, numel: int, message, key: str, max_values: int | None) -> None:
        """``CorruptMessageError`` for a header claiming more values than ``decode`` may
        allocate for this message (its docstring)."""
        floor = DECODE_FLOOR if max_values is None else max_values
        if isinstance(floor, bool) or not isinstance(floor, int) or floor < 0:
            raise ValueError(f"max_values={max_values!r} is not allowed: max_values must be an int >= 0 or None")
        nbytes = message.numel() if isinstance(message, torch.Tensor) else len(message)
        per_byte = self.values_per_byte()
        if numel > max(floor, nbytes * per_byte):
            raise CorruptMessageError(
                f"{self.spec()}: the message for {key!r} claims {numel} values, more than its {nbytes} bytes can "
                f"carry ({per_byte:g} values per byte at this codec's densest) or max_values={floor}; a receiver "
                "that expects a tensor that large passes out= or like= with it, or a larger max_values")

    def _steady(self, message, out: torch.Tensor | None, key: str) -> tuple[dict, Payload, int] | None:
        """(header, payload, numel) of a message tensor opened by the layout its codec always
        gives ``out``'s tensor (``steady_parts``), its header not read, for a codec that
        verifies as it copies or casts into a float32 ``out`` on the message's device, inside
        ``wire.deferred_checks``; else None. The expected header is the prefix of the
        checksum that the block's end compares (``tensor_message.unpack_steady``)."""
        if (wire.deferred.active() is None or out is None or not isinstance(message, torch.Tensor)
                or out.dtype != torch.float32 or not out.is_contiguous()
                or not tensor_message.checks_on_device(message, out) or not self.decodes_steady(out)):
            return None
        shape = tuple(out.shape)
        parts = self.steady_parts(out.numel(), shape)
        if parts is None:
            return None
        expected = tensor_message.steady_layout(self.codec_id, self.digest, out.dtype, shape, parts,
                                                tuple(self.steady_meta().items()))
        payload = tensor_message.unpack_steady(message, expected, f"{self.spec()} message for {key!r}",
                                               self.accepts_meta)
        return {"codec_id": self.codec_id, "digest": self.digest, "dtype": out.dtype, "shape": shape}, payload, \
            out.numel()

    def checks_own_copy(self, message, out: torch.Tensor | None) -> bool:
        """Whether ``decode`` leaves the message's checksum to ``decompress`` (which then
        copies its part out with ``wire.copy_part``), for a float32 ``out`` large enough: a
        host message and ``out`` on the host (the copy streamed) for a codec that
        ``verifies_while_copying`` or ``verifies_while_widening``. A message tensor is
        verified first (inside ``wire.deferred_checks``, ``_steady`` reads it as it checks it)."""
        if out is None or out.dtype != torch.float32 or not out.is_contiguous() or isinstance(message, torch.Tensor):
            return False
        return ((self.verifies_while_copying or self.verifies_while_widening) and out.device.type == "cpu"
                and wire.checked_copy.worth_it(4 * out.numel()))

    def _readable(self, message, values_on: torch.device | None):
        """``message`` as this codec decodes it: a message tensor on a GPU stays there when
        the codec ``reads_device_messages`` and the values go to that device (``values_on``
        it, or None); otherwise its bytes are copied to the host first."""
        if not isinstance(message, torch.Tensor):
            return message
        tensor_message.check(message)
        if message.device.type == "cpu" or (self.reads_device_messages and values_on in (None, message.device)):
            return message
        return tensor_message.to_host(message)

    def _dense(self, payload: Payload, numel: int, state: CodecState, key: str,
               out: torch.Tensor | None, shape: tuple = ()) -> torch.Tensor:
        """The flat values of an opened message (``out``: a flat float32 buffer, on the host or,
        for a codec that ``decodes_on_device``, on a GPU; or None)."""
        flat = self._guarded(self.decompress, payload, numel, state, key, out=out, shape=shape)
        if flat.numel() != numel:
            raise CorruptMessageError(f"{self.spec()}: decoded {flat.numel()} values, header says {numel}")
        return flat

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

    def _entries_for(self, message, into: torch.Tensor, state: CodecState, key: str):
        """(payload, numel, checked (index, values) or None for a dense message) of a
        message to be decoded into ``into``."""
        header, payload, numel = self._open(self._readable(message, torch.device("cpu")))  # entries are read on the host
        if tuple(into.shape) != header["shape"] or not into.is_contiguous():
            raise ValueError(f"into must be contiguous of shape {header['shape']}, got {tuple(into.shape)}")
        entries = self._guarded(self.sparse_entries, payload, numel, state, key, shape=header["shape"])
        if entries is not None:
            index, values = entries
            if index.numel() != values.numel():
                raise CorruptMessageError(f"{self.spec()}: {index.numel()} indices for {values.numel()} values")
            if index.numel() and (int(index.min()) < 0 or int(index.max()) >= numel):
                raise CorruptMessageError(f"{self.spec()}: index out of range for {numel} values")
            entries = index.to(into.device), values.to(device=into.device, dtype=into.dtype)
        return payload, numel, entries

    def merge(self, message, into: torch.Tensor, state: CodecState | None = None, key: str = "") -> int:
        """Merge decode: overwrite in ``into`` only the coordinates the message carries
        and return how many. A sent zero overwrites; an unsent coordinate keeps its value.
        A dense codec's message carries every coordinate, so it overwrites all of them."""
        state = state if state is not None else CodecState()
        team.fit(into.numel() * into.element_size())
        payload, numel, entries = self._entries_for(message, into, state, key)
        if entries is None:
            into.view(-1).copy_(_within_dtype(self._dense(payload, numel, state, key, None, tuple(into.shape)),
                                            into.dtype))
            return numel
        index, values = entries
        into.view(-1)[index] = values
        return index.numel()

    def accumulate(self, message, into: torch.Tensor, state: CodecState | None = None, key: str = "",
                   scratch: torch.Tensor | None = None) -> None:
        """``into += decode(message)``: a sparse message adds its entries only (the same
        float result, since x + 0 = x), a dense one decodes into ``scratch`` (a reused
        contiguous float32 host buffer of the message's shape, or None) and adds it."""
        state = state if state is not None else CodecState()
        team.fit(into.numel() * into.element_size())
        payload, numel, entries = self._entries_for(message, into, state, key)
        if entries is None:
            usable = scratch is not None and scratch.dtype == torch.float32 and scratch.device.type == "cpu"
            flat = self._dense(payload, numel, state, key, scratch.view(-1) if usable else None, tuple(into.shape))
            into.view(-1).add_(flat.to(device=into.device, dtype=into.dtype))
            return
        into.view(-1).index_add_(0, *entries)

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

    def _guarded(self, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except CorruptMessageError:
            raise
        except (KeyError, RuntimeError, IndexError, ValueError, TypeError, OverflowError) as exc:
            raise CorruptMessageError(f"{self.spec()}: payload does not decode: {exc}") from exc


def plain_decision(**fields) -> SimpleNamespace:
    """A decision as codecs read one (the fields of ``policies.Decision``, which sits above
    the codecs), for a codec that makes one itself (a warm-up, a stage of a chain)."""
    unset = dict(send=True, bits=None, levels=None, keys=None, core=None, refresh=False, entropy=None)
    return SimpleNamespace(**{**unset, **fields})


FLOAT32_MAX = float(torch.finfo(torch.float32).max)
FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _within_dtype(flat: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Decoded values clamped to the finite range of a narrower float ``dtype``: a lossy
    decode of finite float16 input (a QSGD level times its bucket's norm) may exceed
    float16's largest value, and must not come back as Inf."""
    if dtype in (torch.float16, torch.bfloat16) and flat.dtype != dtype:
        big = float(torch.finfo(dtype).max)
        return flat.clamp(-big, big)
    return flat


def check_representable(tensor: torch.Tensor, key: str) -> None:
    """Codecs carry real values in float32 or narrower: a complex tensor, or finite float64
    values beyond float32's range (which a cast would turn into +-Inf), are an error here
    rather than a silent Inf in the message, the threshold or the residual. A policy that
    reads the tensor before its codec does (``core_explorer``) checks it first too."""
    if tensor.is_complex():
        raise ValueError(f"tensor {key!r} is complex ({tensor.dtype}): codecs send real tensors only")
    if tensor.dtype not in wire.DTYPE_CODES:
        raise ValueError(f"tensor {key!r} has dtype {tensor.dtype}, which no message can carry")
    if tensor.dtype not in FLOATS:
        raise ValueError(f"tensor {key!r} has dtype {tensor.dtype}: codecs send floating-point tensors "
                         f"({', '.join(str(d) for d in FLOATS)}); a lossy code would not give its integers "
                         "(or bools) back. Convert it with .float() and round after decoding")
    if tensor.dtype == torch.float64 and tensor.numel():
        finite = tensor[torch.isfinite(tensor)]
        big = float(finite.abs().max()) if finite.numel() else 0.0
        if big > FLOAT32_MAX:
            raise ValueError(f"tensor {key!r} holds finite values beyond float32's range (max |x| = {big:.3g} > "
                             f"{FLOAT32_MAX:.3g}): scale it, or they would travel as Inf")


def check_finite(tensor: torch.Tensor, key: str, codec) -> None:
    """NaN or Inf refused before a lossy or stateful codec touches its state. One fast
    reduction, its value read (``isfinite`` of it would be four more launches on a GPU);
    only when it is not finite (NaN or Inf, or finite values near float32's limit
    overflowing) a full test."""
    if tensor.numel() and not math.isfinite(tensor.sum().item()) and not torch.isfinite(tensor).all():
        raise ValueError(f"tensor {key!r} contains NaN or Inf: {codec.spec()} cannot send it (fp32 and fp16 "
                         "carry them bit for bit)")


def _check_same_size(state: CodecState, key: str, numel: int) -> None:
    """A sender's state for ``key`` (a residual, cached keys) belongs to one tensor size."""
    kept = state.slots.get(key, {}).get("numel")
    if kept is not None and int(kept) != numel:
        raise ValueError(f"tensor {key!r} has {numel} values, but this sender's codec state for {key!r} was built "
                         f"for {int(kept)}: a residual or key cache belongs to one tensor; send a resized tensor "
                         "under a new key, or with a fresh CodecState")


def expect_range(payload: Payload, codec: str) -> tuple[float, float]:
    """The (lo, hi) meta of a quantized message: finite float32 values with lo <= hi
    (what every encoder sends), or ``CorruptMessageError``."""
    lo, hi = payload.meta.get("lo"), payload.meta.get("hi")
    if not (isinstance(lo, (int, float)) and isinstance(hi, (int, float))
            and -FLOAT32_MAX <= lo <= hi <= FLOAT32_MAX):
        raise CorruptMessageError(f"{codec}: range [{lo}, {hi}] is not a finite float32 interval")
    return float(lo), float(hi)


def expect_part(payload: Payload, name: str, dtype: torch.dtype, numel: int | None = None) -> torch.Tensor:
    """The part ``name`` with the given dtype (and size), or ``CorruptMessageError``."""
    part = payload.parts.get(name)
    if part is None or part.dtype != dtype or (numel is not None and part.numel() != numel):
        got = None if part is None else (part.dtype, part.numel())
        raise CorruptMessageError(f"part {name!r}: expected {dtype} x {numel}, got {got}")
    return part
