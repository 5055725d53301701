"""What one message asks of the host on a GPU, counted on a machine without one.

A message small enough that its kernels take microseconds costs what its encode and
decode do on the host: each torch operation that is not a view is a kernel launch, each
Triton kernel a launch through Triton's launcher, and each read of a device value by the
host (``.item()``, ``.cpu()``, ``.tolist()``, ``bool()``, an operation whose output size
depends on the data such as ``nonzero``) waits for the device to finish everything queued
before it. ``gpu_bench``'s ``message_overhead`` times that on a GPU; this counts it, for
every codec of ``gpu_bench.SPECS``, with each codec's device path run on CPU tensors
(``kernels/device.py``'s ``forced``, message tensors treated as device ones) and the
Triton kernels run by Triton's interpreter (``TRITON_INTERPRET=1``, so in a process of its
own), as the library runs them on a GPU (its one path: ``PATH``); the encode and the
decode are counted again inside one ``wire.deferred_checks`` block ("encode_deferred",
"decode_deferred"), with the block's end, which judges the checksums (and a range an encode
left on the device), apart ("block_end").

What is counted, per encode and per decode, after one message of warm-up, of the tensors
that would live on the device (``Audit`` says which):

- ``ops``: torch operations dispatched (``TorchDispatchMode``), views and other metadata
  operations left out, and tensors made on the device or copied there;
- ``triton``: Triton kernel launches (inside one, nothing else is counted);
- ``reads``: host reads of tensor values, each a wait for the device on a GPU, with the
  line of the library that asked (``where``), and blocking copies of host tensors to the
  device, which wait too: torch synchronizes the stream after a copy to a GPU unless it is
  ``non_blocking`` (``kernels/device.py``'s ``put``);
- ``bytes``: the bytes of the device tensors each launch touches (each tensor once per
  launch; of a tensor written or read at some indices only, such as ``out[index] = v``,
  only the indices and values), by launch (``bytes_by_launch``). Per value, against the 12
  bytes of an add pass (two reads, one write), it bounds the fraction of the add pass a
  codec can reach where both run at the same bandwidth: 12 / (encode + decode bytes).

``python benchmarks/device_audit.py [FILE]`` prints the table and writes the counts as JSON
to ``FILE`` (default ``benchmarks/out/device_audit.json``).
"""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported

import datetime  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
import weakref  # noqa: E402
from collections import Counter  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
import torch.utils._pytree as pytree  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))

SPECS = ["fp32", "fp16", "bf16", "quantize(bits=8)", "quantize(bits=4)", "quantize(bits=1)", "topk(ratio=0.01)",
         "qsgd(bits=8, bucket=512)", "graddrop(ratio=0.99)", "graddrop(ratio=0.99, bits=1)", "binquant(bits=8)",
         "colquant(bits=8)"]  # gpu_bench.SPECS (not imported: it imports triton before the interpreter is set)
# values per message: ("small") a message small enough that what is counted is what the host
# does; ("large") one of several CRC blocks; "larger" is there for the bytes moved per value:
# the difference between it and "large", over the values between them, leaves out what does
# not grow with the tensor (tables, a sample, the header)
SIZES = {"small": 4_096, "large": 32_768, "larger": 65_536}
PATH = "library"  # the name of the counted path in a row: the Triton codec kernels and the device CRC
OUT = Path(__file__).with_name("out") / "device_audit.json"

# aten operations that only make a new view of a tensor's storage, or read its metadata
VIEWS = {"view", "_unsafe_view", "as_strided", "slice", "select", "detach", "alias", "unsqueeze", "squeeze",
         "reshape", "_reshape_alias", "expand", "permute", "t", "transpose", "split", "split_with_sizes",
         "unbind", "narrow", "view_as_real", "view_as_complex", "lift_fresh", "set_", "resize_", "empty",
         "empty_strided", "empty_like", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "unfold",
         "diagonal", "chunk", "flatten", "unflatten", "_reshape_copy", "resolve_conj", "resolve_neg", "conj",
         "_neg_view", "_conj", "is_same_size", "squeeze_", "unsqueeze_", "view_as", "contiguous"}
# aten operations whose output the host must read, or whose size depends on the values
READS = {"_local_scalar_dense", "nonzero", "masked_select", "unique", "_unique", "_unique2", "unique_consecutive",
         "unique_dim", "equal", "is_nonzero", "repeat_interleave", "allclose"}
# operations that touch only the indexed elements of their first tensor (written in place,
# or read): its bytes are not counted as moved, the indices', values' and result's are
INDEXED = {"index_put", "_index_put_impl", "index", "scatter", "scatter_add", "scatter_reduce", "index_add",
           "index_copy", "index_fill", "masked_scatter", "gather", "take", "index_select", "put"}
GATHERS = {"index", "gather", "take", "index_select"}  # ... of which these make a new tensor of what they read
# ... and these, where an index is a boolean mask (``x[mask]``, ``x[mask] = v``: a nonzero inside)
MASKED = {"index", "index_put", "_index_put_impl"}
LIBRARY = str(Path(__file__).parents[1] / "lib" / "thinwire")


def _caller() -> str:
    """The innermost line of the library on the stack: which call read a value."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        if frame.filename.startswith(LIBRARY):
            return f"{Path(frame.filename).relative_to(LIBRARY).as_posix()}:{frame.lineno}"
    return "?"


class Audit:
    """What the device path of the calls made while ``counting`` asks of the host: torch
    operations on device tensors, Triton launches and host reads of device tensors (with
    where). Which tensors would live on the device in a GPU run is followed through the
    calls: those marked (the codec's input, ``out``, the message), those a torch operation
    makes from one of them, and those made with an explicit ``device=`` (``torch.empty(n,
    device=x.device)``, ``.to(x.device)``); the rest (a CPU generator's draw, a host buffer)
    stay on the host on a GPU too, and are not counted."""

    def __init__(self):
        self._device: dict[int, weakref.ref] = {}
        self.host_arguments: Counter = Counter()  # Triton launches given a host tensor, counted or not
        self.paused = 0
        self.counting = False
        self.reset()

    def reset(self) -> None:
        self.ops: Counter = Counter()
        self.triton: Counter = Counter()
        self.reads: Counter = Counter()
        self.bytes: Counter = Counter()

    def moved(self, name: str, *tensors) -> None:
        """Count the bytes of each distinct tensor launch ``name`` touches (read, written or both)."""
        seen = {}
        for t in tensors:
            if t.numel():
                seen[(t.data_ptr(), t.numel() * t.element_size())] = t.numel() * t.element_size()
        self.bytes[name] += sum(seen.values())

    def mark(self, *tensors) -> None:
        for t in tensors:
            if isinstance(t, torch.Tensor):
                self._device[id(t)] = weakref.ref(t)

    def unmark(self, t: torch.Tensor) -> None:
        self._device.pop(id(t), None)

    def on_device(self, t) -> bool:
        ref = self._device.get(id(t)) if isinstance(t, torch.Tensor) else None
        return ref is not None and ref() is t

    def read(self, what: str) -> None:
        if self.counting and not self.paused:
            self.reads[f"{what} at {_caller()}"] += 1

    def as_row(self) -> dict:
        return {"ops": sum(self.ops.values()), "triton": sum(self.triton.values()), "reads": sum(self.reads.values()),
                "bytes": sum(self.bytes.values()), "bytes_by_launch": dict(self.bytes.most_common()), "op_names": dict(self.ops.most_common()), "triton_names": dict(self.triton),
                "where": dict(self.reads)}


def _tensors(tree) -> list[torch.Tensor]:
    return [t for t in pytree.tree_leaves(tree) if isinstance(t, torch.Tensor)]


# Triton kernels that touch some of their tensors only at another's entries: (those
# tensors, the tensor as long as the entries). ``triton_drop._compact`` and ``_compact_dense``
# read the survivors' values from ``src``, zero them in ``residual``, and write ``values``.
AT_ENTRIES = {"_compact": (("src", "residual"), "values"), "_compact_dense": (("src", "residual"), "values")}


def _launch_tensors(fn, args, kwargs) -> list[torch.Tensor]:
    """The tensors a Triton launch of ``fn`` touches, those of ``AT_ENTRIES`` cut to the
    entries' length (as ``bytes`` counts ``out[index] = v``: the indices and values only)."""
    named = {**dict(zip(inspect.signature(fn).parameters, args)), **kwargs}
    sparse, entries = AT_ENTRIES.get(getattr(fn, "__name__", "?"), ((), None))
    return [t.reshape(-1)[:named[entries].numel()] if name in sparse else t
            for name, t in named.items() if isinstance(t, torch.Tensor)]


class _Dispatch(TorchDispatchMode):
    def __init__(self, audit: Audit):
        super().__init__()
        self.audit = audit

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        audit = self.audit
        if audit.paused or not any(audit.on_device(t) for t in _tensors((args, kwargs))):
            return result
        audit.mark(*_tensors(result))
        name = func.overloadpacket.__name__
        base = name[:-1] if name.endswith("_") and not name.endswith("__") else name  # copy_ is copy
        if audit.counting and name not in VIEWS and base not in VIEWS:
            audit.ops[base] += 1
            if base == "copy" and _blocking_copy_in(args, kwargs, audit):
                audit.read("a blocking copy to the device")
            if base in INDEXED and args and isinstance(args[0], torch.Tensor):
                rest = _tensors((args[1:], kwargs))
                audit.moved(base, *(rest + _tensors(result) if base in GATHERS else rest))
            else:
                audit.moved(base, *_tensors((args, kwargs, result)))
            if base in READS or (base in MASKED and any(t.dtype == torch.bool for t in _tensors(args[1:2]))):
                audit.read(f"aten.{base}")
        return result


def _blocking_copy_in(args, kwargs, audit: Audit) -> bool:
    """Whether ``dst.copy_(src, non_blocking)`` copies a host tensor to the device and waits:
    torch synchronizes the stream after such a copy unless ``non_blocking`` (a copy from
    pageable memory is staged at once and waits for nothing; from pinned memory too)."""
    dst, src = args[0], args[1]
    non_blocking = args[2] if len(args) > 2 else kwargs.get("non_blocking", False)
    return audit.on_device(dst) and isinstance(src, torch.Tensor) and not audit.on_device(src) and not non_blocking


def _to_a_device(func, args, kwargs) -> bool:
    """Whether a call names the device its result goes to (``device=``, ``.to(device)``)."""
    if kwargs.get("device") is not None:
        return True
    if func in (torch.Tensor.to, torch.Tensor.cuda):
        return func is torch.Tensor.cuda or any(isinstance(a, (torch.device, str)) for a in args[1:])
    return False


class _Function(TorchFunctionMode):
    """Host reads without an aten operation (``cpu()``, ``tolist()``; ``item()``, ``bool()``
    and ``int()`` are the ``_local_scalar_dense`` they dispatch, and ``numpy()`` refuses a GPU
    tensor), and the tensors made with an explicit device."""

    def __init__(self, audit: Audit):
        super().__init__()
        self.audit = audit

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        audit = self.audit
        result = func(*args, **kwargs)
        if audit.paused:
            return result
        if func in (torch.Tensor.cpu, torch.Tensor.tolist) and audit.on_device(args[0]):
            audit.read(func.__name__)
            if func is torch.Tensor.cpu:  # the host's copy (here the same tensor: a view of it)
                result = result.detach()
                audit.unmark(result)
        elif _to_a_device(func, args, kwargs):
            name = getattr(func, "__name__", str(func))
            if func in (torch.Tensor.to, torch.Tensor.cuda):  # a copy to the device, unless it is there
                launches = not audit.on_device(args[0])
                if launches and result is args[0]:
                    result = result.detach()  # here the same tensor: a view of it
                waits = launches and not kwargs.get("non_blocking", False)
            else:  # made on the device: a launch that fills it, or copies it from the host
                launches = name not in VIEWS
                waits = func in (torch.tensor, torch.as_tensor)  # from host data, blocking
            if launches and audit.counting:
                audit.ops[name] += 1
                audit.moved(name, *_tensors(result))
                if waits:
                    audit.read(f"a blocking copy to the device ({name})")
            audit.mark(*_tensors(result))
        return result


@contextmanager
def counting(audit: Audit):
    """Within the block, tensors are followed to the device, and while ``audit.counting``
    every torch operation on one, Triton launch and host read of one goes to ``audit``."""
    from triton.runtime.interpreter import InterpretedFunction
    run = InterpretedFunction.run

    def counted_run(self, *args, **kwargs):
        if not audit.paused:  # on a GPU, a host tensor given to a kernel is refused ("cannot be accessed")
            name = getattr(self.fn, "__name__", "?")
            for i, t in enumerate(args):
                if isinstance(t, torch.Tensor) and t.numel() and not audit.on_device(t):
                    audit.host_arguments[f"{name} argument {i} at {_caller()}"] += 1
        if audit.counting and not audit.paused:
            audit.triton[getattr(self.fn, "__name__", "?")] += 1
            audit.moved(getattr(self.fn, "__name__", "?"), *_launch_tensors(self.fn, args, kwargs))
        audit.paused += 1
        try:
            return run(self, *args, **kwargs)
        finally:
            audit.paused -= 1

    from thinwire.engine.kernels import triton_crc, triton_drop
    from thinwire.engine.wire import tensor_message
    runs = triton_crc.triton_runs
    caches = (triton_crc._tables, triton_crc._lane_shifts, triton_crc._word_tables, triton_drop._chunks,
              triton_drop._span_ends, tensor_message._kept_bytes)

    def runs_on_device(*tensors):  # as on a GPU: a kernel takes device tensors only
        return runs(*tensors) and all(audit.on_device(t) for t in tensors)

    InterpretedFunction.run, triton_crc.triton_runs = counted_run, runs_on_device
    for cache in caches:  # made again within the block, so that their tables are followed to the device
        cache.cache_clear()
    try:
        with _Function(audit), _Dispatch(audit):
            yield audit
    finally:
        InterpretedFunction.run, triton_crc.triton_runs = run, runs
        for cache in caches:
            cache.cache_clear()


@contextmanager
def counted(audit: Audit):
    """Within the block, ``audit`` counts (its counts reset first)."""
    audit.reset()
    audit.counting = True
    try:
        yield audit
    finally:
        audit.counting = False


@contextmanager
def path():
    """The device path, on CPU tensors: message tensors on the CPU taken as device ones."""
    from thinwire.engine.kernels import device
    from thinwire.engine.wire import tensor_message
    before = tensor_message._on_device
    tensor_message._on_device = lambda t: True
    try:
        with device.forced():
            yield
    finally:
        tensor_message._on_device = before


def _deferred_round_trip(audit: Audit, encode, decode) -> dict:
    """The counts of ``encode()`` and then ``decode()`` inside one ``wire.deferred_checks``
    block ("encode_deferred", "decode_deferred") and of that block's end, which judges what
    they left (the checksums, a range: "block_end"), after one such block uncounted."""
    from thinwire.engine.wire import deferred_checks
    with deferred_checks():  # a warm-up of its own: this path may make tables the other did not
        encode()
        decode()
    with counted(audit):
        with deferred_checks():
            encode()
            encoded = audit.as_row()
            audit.reset()
            decode()
            decoded = audit.as_row()
            audit.reset()
        end = audit.as_row()
    return {"encode_deferred": encoded, "decode_deferred": decoded,
            "block_end": {k: end[k] for k in ("ops", "triton", "reads")}}


def audit_codec(spec: str, size: str) -> dict:
    """The counts of one encode and one decode of a message of ``size`` on the device path,
    and of both inside a ``wire.deferred_checks`` block."""
    from thinwire.codecs import CodecState, make_codec
    n = SIZES[size]
    x = torch.randn(n, generator=torch.Generator().manual_seed(0))
    out = torch.empty_like(x)
    row = {"codec": spec, "size": size, "values": n}
    with path(), counting(Audit()) as audit:
        codec, state = make_codec(spec), CodecState(0)
        message = torch.empty(0, dtype=torch.uint8)
        audit.mark(x, out, message)
        message = codec.encode(x, state, "x", out=message)
        codec.decode(message, state, "x", out=out)
        with counted(audit):
            codec.encode(x, state, "x", out=message)
        encode = audit.as_row()
        with counted(audit):
            codec.decode(message, state, "x", out=out)
        decode = audit.as_row()
        row[PATH] = {"encode": encode, "decode": decode}
        row[PATH].update(_deferred_round_trip(audit, lambda: codec.encode(x, state, "x", out=message),
                                              lambda: codec.decode(message, state, "x", out=out)))
    return row


def table(rows: list[dict]) -> str:
    """Markdown: per codec, launches (torch operations + Triton kernels) and host reads."""
    lines = ["| codec | values | encode: torch ops + Triton kernels | encode: host reads | "
             "decode: torch ops + Triton kernels | decode: host reads |", "|---|---|---|---|---|---|"]
    for r in rows:
        e, d = r[PATH]["encode"], r[PATH]["decode"]
        lines.append(f"| {r['codec']} | {r['values']:,} ({r['size']}) | {e['ops']} + {e['triton']} | {e['reads']} | "
                     f"{d['ops']} + {d['triton']} | {d['reads']} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    target = Path(argv[0]) if argv else OUT
    rows = [audit_codec(spec, size) for size in SIZES for spec in SPECS]
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    from wait_policy import commit
    tmp.write_text(json.dumps({"date": datetime.date.today().isoformat(), "commit": commit(), "sizes": SIZES, "path": PATH, "rows": rows}, indent=1))
    tmp.replace(target)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
