"""A codec's payload framed as a message, and opened again.

``Codec.encode`` / ``decode`` / ``merge`` / ``accumulate`` (``codecs/base.py``) hand their
work here: the tensor checks a message needs before any state is touched, the choice of
compress path (plain, under a decision, deferred into a device message), the layout
(``wire.pack``) and the reading side, where a message is opened by its header or by the
layout its codec always gives (a steady header, not read inside ``wire.deferred_checks``),
checked against the codec that decodes it, bounded in what it may make the receiver
allocate, and verified once: by the wire, or by the codec's own copy of its part.

The codec is read through what every codec has: ``codec_id``, ``digest``, ``spec()``, its
capability flags (``host_only``, ``decodes_on_device``, ``reads_device_messages``,
``carries_non_finite``, ``refuses_non_finite``, ``verifies_while_*``) and its
``compress*``/``decompress``/``sparse_entries``/``steady_*`` methods; a state by its
``generator``, ``slots`` and ``last``.
"""

from __future__ import annotations

import math

import torch

from . import wire
from .errors import CorruptMessageError
from .kernels import team
from .payload import FLOAT32_MAX, Payload
from .wire import tensor_message

# Values a decode may allocate for a message whatever its size (4 MiB of float32): a tiny
# message of a sparse codec may stand for a large tensor of zeros, and a receiver that knows
# the tensor passes ``out`` or ``like`` (or ``max_values``) to take more.
DECODE_FLOOR = 1 << 20
FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def encode(codec, tensor: torch.Tensor, state, key: str, decision, out, stats) -> wire.Message:
    """``Codec.encode``'s work (its docstring): ``stats`` makes the fresh ``state.last``."""
    team.fit(tensor.numel() * tensor.element_size())  # one thread per core, more on a busy machine, one for a small tensor
    if decision is not None and not decision.send:
        raise ValueError("a decision not to send has no message: skip the encode")
    check_representable(tensor, key)
    if not (codec.carries_non_finite or codec.refuses_non_finite):
        check_finite(tensor, key, codec)
    check_same_size(state, key, tensor.numel())
    state.last = stats(values=tensor.numel())
    flat = tensor.detach().reshape(-1)
    if codec.host_only and flat.device.type != "cpu":
        flat = flat.cpu()  # explicit copy: this codec's kernels read host memory
    rng = state.generator.get_state()
    try:
        plain = decision is None or (decision.bits is None and decision.keys is None and decision.core is None)
        payload = None
        if plain and isinstance(out, torch.Tensor) and out.device == flat.device and wire.deferred.active():
            payload = codec.compress_deferred(flat, state, key, shape=tuple(tensor.shape))
        if payload is None and plain:
            payload = codec.compress(flat, state, key, shape=tuple(tensor.shape))
        elif payload is None:
            payload = codec.compress_decided(flat, state, key, decision, shape=tuple(tensor.shape))
        if decision is not None and decision.entropy is not None:
            state.last.entropy = decision.entropy
        to_device = isinstance(out, torch.Tensor) and out.device.type != "cpu" and flat.device.type == "cpu"
        message = wire.pack(codec.codec_id, codec.digest, tensor.dtype, tuple(tensor.shape), payload,
                            None if to_device else out, steady=is_steady(codec, payload, flat.numel(), tensor.shape))
        if to_device:  # host kernels wrote host memory: the message goes to out's device once
            message = tensor_message.into(message, out)
    except BaseException:
        state.generator.set_state(rng)  # a refused message draws nothing
        raise
    if state.slots.get(key):  # stateful for this key: remember the size its state belongs to
        state.slots[key].setdefault("numel", torch.tensor(tensor.numel()))
    return message


def is_steady(codec, payload: Payload, numel: int, shape: tuple) -> bool:
    """Whether ``payload``'s header is the steady one: parts fixed by the shape, and its
    meta ``steady_meta``'s fixed values and device float32 bytes."""
    want = codec.steady_meta()
    return (codec.steady_parts(numel, shape) is not None and list(payload.meta) == list(want)
            and all(isinstance(value, torch.Tensor) if fixed is None else value == fixed
                    for value, fixed in zip(payload.meta.values(), want.values())))


def open_message(codec, message, verify: bool = True) -> tuple[dict, Payload, int]:
    """(header, payload, numel) of a message ``codec`` encoded, or ``CorruptMessageError``;
    ``verify=False``: its checksum left to ``decompress`` (``checks_own_copy``)."""
    header, payload = wire.unpack(message, verify=verify)
    if header["codec_id"] != codec.codec_id or header["digest"] != codec.digest:
        raise CorruptMessageError(
            f"message was encoded by codec id {header['codec_id']} with parameter digest {header['digest']:#010x}, "
            f"not by {codec.spec()!r} (id {codec.codec_id}, digest {codec.digest:#010x})")
    return header, payload, math.prod(header["shape"])


def decode(codec, message, state, key: str, out: torch.Tensor | None, like: torch.Tensor | None,
           max_values: int | None) -> torch.Tensor:
    """``Codec.decode``'s work (its docstring)."""
    team.fit()
    message = readable(codec, message, None if out is None else out.device)
    opened = _steady(codec, message, out, key)
    deferred = opened is not None or checks_own_copy(codec, message, out)
    header, payload, numel = opened or open_message(codec, message, verify=not deferred)
    team.fit(4 * numel)  # one thread for a small tensor
    if opened is None and isinstance(payload.unverified, tensor_message.Unverified) and wire.deferred.active():
        payload.unverified = payload.unverified._replace(what=f"{codec.spec()} message for {key!r}")
    shape = header["shape"]
    if out is None and like is None:
        _check_justified(codec, numel, message, key, max_values)
    if like is not None and (tuple(like.shape) != shape or like.dtype != header["dtype"]):
        raise CorruptMessageError(f"{codec.spec()}: tensor {key!r} is {like.dtype} {tuple(like.shape)} here, "
                                  f"the message claims {header['dtype']} {shape}")
    flat_out = None
    if out is not None:
        if tuple(out.shape) != shape or out.dtype != header["dtype"] or not out.is_contiguous():
            if deferred:  # a damaged header is a damaged message, not a wrong out
                wire.verify(message)
            raise ValueError(f"out must be contiguous {header['dtype']} of shape {shape}, "
                             f"got {out.dtype} {tuple(out.shape)}")
        flat_out = (out.view(-1) if out.dtype == torch.float32 and (out.device.type == "cpu" or codec.decodes_on_device)
                    else None)
    elif isinstance(message, torch.Tensor) and message.device.type != "cpu":  # decoded on the message's device
        flat_out = torch.empty(numel, dtype=torch.float32, device=message.device)
    flat = within_dtype(dense(codec, payload, numel, state, key, flat_out, shape), header["dtype"])
    if payload.unverified is not None:  # a codec that deferred the check must have made it
        raise RuntimeError(f"{codec.spec()}: decompress left the message's checksum unverified")
    if out is None:
        return flat.to(header["dtype"]).reshape(shape)
    if flat is not flat_out:
        out.view(-1).copy_(flat)
    return out


def _check_justified(codec, numel: int, message, key: str, max_values: int | None) -> None:
    """``CorruptMessageError`` for a header claiming more values than ``decode`` may
    allocate for this message (``Codec.decode``'s docstring)."""
    floor = DECODE_FLOOR if max_values is None else max_values
    if isinstance(floor, bool) or not isinstance(floor, int) or floor < 0:
        raise ValueError(f"max_values={max_values!r} is not allowed: max_values must be an int >= 0 or None")
    nbytes = message.numel() if isinstance(message, torch.Tensor) else len(message)
    per_byte = codec.values_per_byte()
    if numel > max(floor, nbytes * per_byte):
        raise CorruptMessageError(
            f"{codec.spec()}: the message for {key!r} claims {numel} values, more than its {nbytes} bytes can "
            f"carry ({per_byte:g} values per byte at this codec's densest) or max_values={floor}; a receiver "
            "that expects a tensor that large passes out= or like= with it, or a larger max_values")


def _steady(codec, message, out: torch.Tensor | None, key: str) -> tuple[dict, Payload, int] | None:
    """(header, payload, numel) of a message tensor opened by the layout its codec always
    gives ``out``'s tensor (``steady_parts``), its header not read, for a codec that
    verifies as it copies or casts into a float32 ``out`` on the message's device, inside
    ``wire.deferred_checks``; else None. The expected header is the prefix of the
    checksum that the block's end compares (``tensor_message.unpack_steady``)."""
    if (wire.deferred.active() is None or out is None or not isinstance(message, torch.Tensor)
            or out.dtype != torch.float32 or not out.is_contiguous()
            or not tensor_message.checks_on_device(message, out) or not codec.decodes_steady(out)):
        return None
    shape = tuple(out.shape)
    parts = codec.steady_parts(out.numel(), shape)
    if parts is None:
        return None
    expected = tensor_message.steady_layout(codec.codec_id, codec.digest, out.dtype, shape, parts,
                                            tuple(codec.steady_meta().items()))
    payload = tensor_message.unpack_steady(message, expected, f"{codec.spec()} message for {key!r}",
                                           codec.accepts_meta)
    return {"codec_id": codec.codec_id, "digest": codec.digest, "dtype": out.dtype, "shape": shape}, payload, \
        out.numel()


def checks_own_copy(codec, message, out: torch.Tensor | None) -> bool:
    """Whether ``decode`` leaves the message's checksum to ``decompress`` (which then
    copies its part out with ``wire.copy_part``), for a float32 ``out`` large enough: a
    host message and ``out`` on the host (the copy streamed) for a codec that
    ``verifies_while_copying`` or ``verifies_while_widening``. A message tensor is
    verified first (inside ``wire.deferred_checks``, ``_steady`` reads it as it checks it)."""
    if out is None or out.dtype != torch.float32 or not out.is_contiguous() or isinstance(message, torch.Tensor):
        return False
    return ((codec.verifies_while_copying or codec.verifies_while_widening) and out.device.type == "cpu"
            and wire.checked_copy.worth_it(4 * out.numel()))


def readable(codec, message, values_on: torch.device | None):
    """``message`` as ``codec`` decodes it: a message tensor on a GPU stays there when the
    codec ``reads_device_messages`` and the values go to that device (``values_on`` it, or
    None); otherwise its bytes are copied to the host first."""
    if not isinstance(message, torch.Tensor):
        return message
    tensor_message.check(message)
    if message.device.type == "cpu" or (codec.reads_device_messages and values_on in (None, message.device)):
        return message
    return tensor_message.to_host(message)


def dense(codec, payload: Payload, numel: int, state, key: str, out: torch.Tensor | None,
          shape: tuple = ()) -> torch.Tensor:
    """The flat values of an opened message (``out``: a flat float32 buffer, on the host or,
    for a codec that ``decodes_on_device``, on a GPU; or None)."""
    flat = guarded(codec, codec.decompress, payload, numel, state, key, out=out, shape=shape)
    if flat.numel() != numel:
        raise CorruptMessageError(f"{codec.spec()}: decoded {flat.numel()} values, header says {numel}")
    return flat


def entries_for(codec, message, into: torch.Tensor, state, key: str):
    """(payload, numel, checked (index, values) or None for a dense message) of a message
    to be decoded into ``into``."""
    header, payload, numel = open_message(codec, readable(codec, message, torch.device("cpu")))  # read on the host
    if tuple(into.shape) != header["shape"] or not into.is_contiguous():
        raise ValueError(f"into must be contiguous of shape {header['shape']}, got {tuple(into.shape)}")
    entries = guarded(codec, codec.sparse_entries, payload, numel, state, key, shape=header["shape"])
    if entries is not None:
        index, values = entries
        if index.numel() != values.numel():
            raise CorruptMessageError(f"{codec.spec()}: {index.numel()} indices for {values.numel()} values")
        if index.numel() and (int(index.min()) < 0 or int(index.max()) >= numel):
            raise CorruptMessageError(f"{codec.spec()}: index out of range for {numel} values")
        entries = index.to(into.device), values.to(device=into.device, dtype=into.dtype)
    return payload, numel, entries


def merge(codec, message, into: torch.Tensor, state, key: str) -> int:
    """``Codec.merge``'s work (its docstring)."""
    team.fit(into.numel() * into.element_size())
    payload, numel, entries = entries_for(codec, message, into, state, key)
    if entries is None:
        into.view(-1).copy_(within_dtype(dense(codec, payload, numel, state, key, None, tuple(into.shape)), into.dtype))
        return numel
    index, values = entries
    into.view(-1)[index] = values
    return index.numel()


def accumulate(codec, message, into: torch.Tensor, state, key: str, scratch: torch.Tensor | None) -> None:
    """``Codec.accumulate``'s work (its docstring)."""
    team.fit(into.numel() * into.element_size())
    payload, numel, entries = entries_for(codec, message, into, state, key)
    if entries is None:
        usable = scratch is not None and scratch.dtype == torch.float32 and scratch.device.type == "cpu"
        flat = dense(codec, payload, numel, state, key, scratch.view(-1) if usable else None, tuple(into.shape))
        into.view(-1).add_(flat.to(device=into.device, dtype=into.dtype))
        return
    into.view(-1).index_add_(0, *entries)


def guarded(codec, fn, *args, **kwargs):
    """``fn`` (a codec's decompress or entries), any failure of it on a payload read as a
    damaged message."""
    try:
        return fn(*args, **kwargs)
    except CorruptMessageError:
        raise
    except (KeyError, RuntimeError, IndexError, ValueError, TypeError, OverflowError) as exc:
        raise CorruptMessageError(f"{codec.spec()}: payload does not decode: {exc}") from exc


def within_dtype(flat: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
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


def check_same_size(state, key: str, numel: int) -> None:
    """A sender's state for ``key`` (a residual, cached keys) belongs to one tensor size."""
    kept = state.slots.get(key, {}).get("numel")
    if kept is not None and int(kept) != numel:
        raise ValueError(f"tensor {key!r} has {numel} values, but this sender's codec state for {key!r} was built "
                         f"for {int(kept)}: a residual or key cache belongs to one tensor; send a resized tensor "
                         "under a new key, or with a fresh CodecState")
