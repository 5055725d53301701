"""Any thinwire codec as a PyTorch DDP communication hook.

``DistributedDataParallel.register_comm_hook`` hands a hook each bucket of gradients (a
flat ``buffer`` of several parameters' gradients) and expects a future of the averaged
bucket. ``CodecHook`` does, for each bucket of each backward pass:

1. Encode: each parameter's gradient (``granularity="tensor"``, as thinwire's algorithms
   and the papers compress per layer) or the whole bucket (``"bucket"``) becomes one real
   message of the codec, with the sender's ``CodecState`` (an ``ef(...)`` spec keeps its
   residual there, so error feedback works as in the in-process runs). The bucket's
   messages are encoded in one ``wire.deferred_checks`` block: min-max, bin (raw codes),
   per-row and QSGD quantization of a GPU gradient into a message tensor keep their ranges
   or norms on the device, and a NaN or Inf is refused at the block's end, before anything is sent.
2. All-gather: every message goes to every other rank through the torch.distributed
   transport (``comm/distributed.py``: exact message sizes, no padding; one frame per
   peer per bucket). The ledger records each message's bytes, payload and framing, per
   step, bucket tensor and receiver; a stalled rank is named, as in every thinwire run.
3. Decode and average: every rank decodes every message, its own included, with its
   receiver state for that sender, sums them in sender order and divides by the world
   size (as Plump-DP's center does, ``algorithms/plump_dp.py`` step 3), so all ranks apply
   the same gradient and the replicas stay equal. Each tensor is decoded into one buffer
   kept for it on the bucket's device (``decode(..., out=)``): on a GPU the codecs that
   set ``Codec.decodes_on_device`` write the values there, and no dense tensor crosses
   from the host. The bucket's message tensors are decoded in one
   ``wire.deferred_checks`` block: their checksums are compared in one copy at its end,
   not one wait for the device per message, and a damaged message raises there, before
   the bucket's buffer is written.

Messages (``messages=``): ``"tensors"`` keeps each message in a uint8 tensor on the
bucket's device (``engine/wire/tensor_message.py``): written there by the codecs' device
paths, checksummed there, sent device to device in one frame per peer
(``comm/tensor_frame.py``), and decoded in place by the codecs that
``reads_device_messages``; only the frames' tables and each message's header cross to
the host. ``"bytes"`` makes host messages (``bytearray``), framed on the host. ``"auto"``
(the default): tensors under NCCL, bytes under gloo. The bytes of every message are the
same either way.

Dense codecs (fp32, fp16, bf16) may instead ``collective="allreduce"``: the bucket cast to
the codec's dtype is summed by the backend's all-reduce (what ``torch``'s own fp16 hook
does); its ledger row is the tensor handed to the collective (a ring moves 2(n-1)/n of it
per rank), with no framing.

Seeds: rank r's sender state takes ``SeedTree(seed).seed("worker", r, "push_codec")``,
the seed Plump-DP gives worker r's push codec, so a randomized codec (QSGD) draws the same
noise in both.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from ..codecs import Codec, CodecState, CorruptMessageError, StateBook, make_codec
from ..engine import deferred_checks
from ..comm import DistributedTransport, Envelope
from ..comm.distributed import DEFAULT_TIMEOUT_S
from ..experiment.result import atomic_write
from ..seed_tree import SeedTree
from ..specs import codec_under_policy

GRANULARITIES = ("tensor", "bucket")
COLLECTIVES = ("allgather", "allreduce")
MESSAGES = ("auto", "tensors", "bytes")
ALLREDUCE_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
PHASE = "allgather"


class CodecHook:
    """A codec as a DDP communication hook; ``register(model)`` installs it.

    ``ledger`` (a ``comm.Ledger``) holds this rank's messages; ``seconds`` one dict per
    step with the codec's ``encode``, ``exchange`` and ``decode`` seconds; ``save(path)``
    writes both (``merged=True``: every rank's rows, a collective).
    """

    def __init__(self, codec: str | Codec, *, granularity: str = "tensor", collective: str = "allgather",
                 seed: int = 0, timeout_s: float = DEFAULT_TIMEOUT_S, messages: str = "auto"):
        self.codec = make_codec(codec) if isinstance(codec, str) else codec
        if not isinstance(self.codec, Codec):
            raise ValueError(f"codec={codec!r} is not allowed: give a codec spec (\"ef(topk(ratio=0.01))\") or a Codec")
        if granularity not in GRANULARITIES:
            raise ValueError(f"granularity={granularity!r} is not allowed: it must be one of {list(GRANULARITIES)}")
        if collective not in COLLECTIVES:
            raise ValueError(f"collective={collective!r} is not allowed: it must be one of {list(COLLECTIVES)}")
        if collective == "allreduce" and self.codec.spec() not in ALLREDUCE_DTYPES:
            raise ValueError(f"collective='allreduce' is not allowed with codec {self.codec.spec()!r}: only the dense "
                             f"codecs {sorted(ALLREDUCE_DTYPES)} sum under an all-reduce; use collective='allgather'")
        if messages not in MESSAGES:
            raise ValueError(f"messages={messages!r} is not allowed: it must be one of {list(MESSAGES)}")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed={seed!r} is not allowed: it must be an int >= 0")
        # a codec that takes its keys or bit width from a policy's decision cannot run here
        codec_under_policy("codec", self.codec)
        self.granularity, self.collective, self.seeds, self.timeout_s = granularity, collective, SeedTree(seed), timeout_s
        self.message_kind = messages
        self.codec.warm_up()  # compiled kernels load now, not inside the first timed bucket
        self.step = 0
        self.seconds: list[dict[str, float]] = []
        self.transport: DistributedTransport | None = None
        self.messages: dict[str, bytearray | torch.Tensor] = {}
        self.decoded: dict[str, torch.Tensor] = {}

    def register(self, model: DistributedDataParallel) -> CodecHook:
        """Install the hook on ``model`` (before its first backward pass) and return self."""
        if not isinstance(model, DistributedDataParallel):
            raise ValueError(f"model={type(model).__name__} is not allowed: register the hook on a "
                             "torch.nn.parallel.DistributedDataParallel model")
        if self.transport is not None:
            raise ValueError("this CodecHook is registered already: make one hook per model")
        self.names = {p: name for name, p in model.module.named_parameters()}
        device = next(iter(self.names)).device if self.names else torch.device("cpu")
        nccl = dist.get_backend() == "nccl"
        if self.message_kind == "auto":
            self.message_kind = "tensors" if nccl else "bytes"
        self.transport = DistributedTransport(device if nccl else "cpu", self.timeout_s,
                                              tensor_messages=self.message_kind == "tensors")
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self._check_ranks_agree(model)
        self.sender = CodecState(self.seeds.seed("worker", self.rank, "push_codec"))
        self.receivers = StateBook(self.seeds.pairs("worker", "push_receive"))
        model.register_comm_hook(None, self._hook)
        return self

    def _check_ranks_agree(self, model: DistributedDataParallel) -> None:
        """Every rank must build the same hook on the same parameters, or the messages one
        rank sends are not those another decodes: refused here, naming the ranks (a
        collective: every rank registers)."""
        mine = {"codec": self.codec.spec(), "granularity": self.granularity, "collective": self.collective,
                "messages": self.message_kind,
                "parameters": [(n, tuple(p.shape)) for n, p in model.module.named_parameters()]}
        every = self.transport.all_gather_object(mine)
        for field in mine:
            differ = [r for r, theirs in enumerate(every) if theirs[field] != every[0][field]]
            if not differ:
                continue
            if field == "parameters":
                names = [set(theirs[field]) ^ set(every[0][field]) for theirs in every]
                shown = sorted(set().union(*names))[:4]
                raise ValueError(f"CodecHook: rank(s) {differ} hold other parameters than rank 0 (differing: {shown}); "
                                 "every rank must register the hook on the same model")
            raise ValueError(f"CodecHook: rank(s) {differ} set {field}={every[differ[0]][field]!r}, rank 0 "
                             f"{field}={every[0][field]!r}; every rank must build the hook alike")

    @property
    def ledger(self):
        return self.transport.ledger

    def _parts(self, bucket) -> list[tuple[str, int, int, tuple]]:
        """(key, offset, numel, shape) of each message of a bucket."""
        if self.granularity == "bucket":
            return [(self._bucket_key(bucket), 0, bucket.buffer().numel(), (bucket.buffer().numel(),))]
        parts, offset = [], 0
        for p in bucket.parameters():
            parts.append((self.names[p], offset, p.numel(), tuple(p.shape)))
            offset += p.numel()
        return parts

    def _bucket_key(self, bucket) -> str:
        """A bucket's name: its first and last parameters' (DDP may rebuild its buckets
        after the first step, so the index alone would not name the same tensors)."""
        params = bucket.parameters()
        first, last = self.names[params[0]], self.names[params[-1]]
        return first if len(params) == 1 else f"{first}..{last}"

    def _hook(self, state, bucket):  # no annotations: DDP checks them, and here they are strings
        buffer = bucket.buffer()
        times = self.seconds[-1] if self.seconds and self.seconds[-1]["step"] == self.step else None
        if times is None:
            times = {"step": self.step, "encode": 0.0, "exchange": 0.0, "decode": 0.0}
            self.seconds.append(times)
        if self.collective == "allreduce":
            self._all_reduce(bucket, buffer, times)
        else:
            self._all_gather(bucket, buffer, times)
        if bucket.is_last():
            self.step += 1
        future = torch.futures.Future()
        future.set_result(buffer)
        return future

    def _all_gather(self, bucket, buffer: torch.Tensor, times: dict) -> None:
        parts = self._parts(bucket)
        t0 = time.perf_counter()                                                  # 1. encode
        with deferred_checks():  # what an encode left on the device (a range) judged once, before anything is sent
            own = [Envelope(self.rank, self.rank, key, self._encode(buffer[o:o + n].view(shape), key))
                   for key, o, n, shape in parts]
        t1 = time.perf_counter()                                                  # 2. all-gather
        outbox = [Envelope(self.rank, peer, e.tensor, e.message) for e in own
                  for peer in range(self.world) if peer != self.rank]
        inbox = self.transport.exchange(outbox, self.step, PHASE)
        t2 = time.perf_counter()                                                  # 3. decode, average
        received = {(e.sender, e.tensor): e.message for e in [*own, *inbox]}
        total = torch.zeros(buffer.numel(), dtype=torch.float32, device=buffer.device)
        try:
            with deferred_checks():  # the bucket's message tensors verified together, before the buffer is written
                for key, o, n, shape in parts:
                    out = self._decoded(key, shape, buffer)
                    for sender in range(self.world):
                        message = received.get((sender, key))
                        if message is None:
                            raise CorruptMessageError(f"rank {sender} sent no message for {key!r}")
                        try:
                            decoded = self.codec.decode(message, self.receivers(self.rank, sender), key, out=out,
                                                        like=out)
                        except CorruptMessageError as exc:
                            raise CorruptMessageError(f"the message from rank {sender} for {key!r}: {exc}") from exc
                        total[o:o + n] += decoded.reshape(-1).to(torch.float32)
        except CorruptMessageError as exc:
            raise CorruptMessageError(f"CodecHook on rank {self.rank}, step {self.step}: {exc}") from exc
        buffer.copy_(total.div_(self.world))
        times["encode"] += t1 - t0
        times["exchange"] += t2 - t1
        times["decode"] += time.perf_counter() - t2

    def _decoded(self, key: str, shape: tuple, buffer: torch.Tensor) -> torch.Tensor:
        """The buffer ``key``'s messages are decoded into, on the bucket's device (kept
        from step to step; made again if DDP's rebuilt buckets change what it holds)."""
        out = self.decoded.get(key)
        if out is None or tuple(out.shape) != shape or out.dtype != buffer.dtype or out.device != buffer.device:
            out = self.decoded[key] = torch.empty(shape, dtype=buffer.dtype, device=buffer.device)
        return out

    def _encode(self, gradient: torch.Tensor, key: str) -> bytearray | torch.Tensor:
        """The message for ``key``, written into the buffer of its previous message (sent and
        decoded by now: the transport copies what it sends); a tensor on the gradient's
        device for ``messages="tensors"``."""
        out = self.messages.get(key)
        if out is None and self.message_kind == "tensors":
            out = torch.empty(0, dtype=torch.uint8, device=gradient.device)
        message = self.codec.encode(gradient, self.sender, key, out=out)
        self.messages[key] = message
        return message

    def _all_reduce(self, bucket, buffer: torch.Tensor, times: dict) -> None:
        dtype = ALLREDUCE_DTYPES[self.codec.spec()]
        t0 = time.perf_counter()
        sent = buffer.to(dtype)
        key, nbytes = self._bucket_key(bucket), sent.numel() * sent.element_size()
        self.ledger.record(self.step, "allreduce", self.rank, -1, key, nbytes, nbytes)
        t1 = time.perf_counter()
        self.transport.collective("allreduce", lambda: dist.all_reduce(sent))
        t2 = time.perf_counter()
        buffer.copy_(sent.to(torch.float32).div_(self.world))
        times["encode"] += t1 - t0
        times["exchange"] += t2 - t1
        times["decode"] += time.perf_counter() - t2

    def per_step(self) -> dict:
        """This rank's per-step sums of bytes, payload, framing and messages (``Ledger.per_step``)."""
        return {k: v.tolist() for k, v in self.ledger.per_step(max(self.step, 1)).items()}

    def save(self, path, merged: bool = False) -> Path:
        """Write the ledger rows (step, phase, sender, receiver, tensor, bytes, payload) and the
        per-step seconds as JSON, atomically; ``merged``: every rank's (call it on every rank)."""
        ledger = self.transport.merged_ledger() if merged else self.ledger
        seconds = self.transport.all_gather_object(self.seconds) if merged else [self.seconds]
        path = Path(path)
        document = {"codec": self.codec.spec(), "granularity": self.granularity, "collective": self.collective,
                    "messages": self.message_kind,
                    "world_size": self.world, "rank": None if merged else self.rank, "steps": self.step,
                    "columns": ["step", "phase", "sender", "receiver", "tensor", "bytes", "payload"],
                    "rows": [list(r) for r in ledger.rows()], "seconds": seconds}
        atomic_write(path, lambda f: f.write(json.dumps(document).encode()))
        return path
