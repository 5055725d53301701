"""torch.distributed transport (gloo on CPU, NCCL on GPU).

One phase of ``exchange``:
1. group outgoing envelopes by the rank hosting the receiver; envelopes for local
   agents are delivered in place;
2. frame each group as one byte buffer: a table (sender, receiver, name length,
   message length) followed by the names and messages;
3. all-gather every rank's vector of outgoing frame sizes, so each rank knows what
   to receive;
4. post the non-blocking receives, then the sends, for the non-empty frames, and wait.
Only the encoded messages are ledgered; the frame table is transport overhead. With
``tensor_messages`` the frames are tensors on the transport's device (``tensor_frame.py``:
messages kept in GPU memory go from GPU to GPU), and step 3 also carries each frame's
table length, so only the tables cross to the host.

Every collective waits at most the process group's timeout (``init_process_group``
here sets it; ``DEFAULT_TIMEOUT_S`` unless told otherwise, where torch's default for gloo
is 30 minutes). When one fails, the error names the ranks that never arrived
(``stall.py``), so a stopped or dead rank brings its peers down with a clear message.
"""

from __future__ import annotations

import math
import struct
from datetime import timedelta

import torch
import torch.distributed as dist

from . import tensor_frame
from .envelope import Envelope
from .stall import ProgressBoard, StalledRankError
from .transport import Transport

DEFAULT_TIMEOUT_S = 300.0


def check_timeout(timeout_s) -> float:
    """``timeout_s`` as a float, or a ``ValueError`` naming it."""
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not (
            math.isfinite(timeout_s) and timeout_s > 0):
        raise ValueError(f"timeout_s={timeout_s!r} is not allowed: the collective timeout must be a number of "
                         "seconds > 0")
    return float(timeout_s)


def init_process_group(backend: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
    """``torch.distributed.init_process_group`` with every collective limited to ``timeout_s``."""
    dist.init_process_group(backend, timeout=timedelta(seconds=check_timeout(timeout_s)))


def _default_store():
    try:
        return dist.distributed_c10d._get_default_store()
    except (AttributeError, RuntimeError, ValueError):  # no store to post progress to
        return None


def frame(envelopes: list[Envelope]) -> bytearray:
    """Host messages as one buffer: count, one row per envelope, then each name and message."""
    names = [e.tensor.encode() for e in envelopes]
    out = tensor_frame.rows(envelopes, names)
    for e, n in zip(envelopes, names):
        out += n
        out += e.message
    return out


def unframe(buffer: bytearray) -> list[Envelope]:
    (count,) = struct.unpack_from("<I", buffer, 0)
    rows = [tensor_frame.ROW.unpack_from(buffer, 4 + i * tensor_frame.ROW.size) for i in range(count)]
    off = 4 + count * tensor_frame.ROW.size
    envelopes = []
    for sender, receiver, name_len, msg_len in rows:
        name = bytes(buffer[off:off + name_len]).decode()
        off += name_len
        envelopes.append(Envelope(sender, receiver, name, bytearray(buffer[off:off + msg_len])))
        off += msg_len
    return envelopes


class DistributedTransport(Transport):
    """Requires an initialised default process group. ``tensor_messages``: messages are uint8
    tensors on ``device``, framed and received there (``tensor_frame.py``); every rank must
    set it alike."""

    def __init__(self, device: torch.device | str = "cpu", timeout_s: float = DEFAULT_TIMEOUT_S,
                 tensor_messages: bool = False):
        super().__init__()
        if not dist.is_initialized():
            raise RuntimeError("DistributedTransport needs torch.distributed.init_process_group first")
        self.device = torch.device(device)
        self.tensor_messages = tensor_messages
        self.board = ProgressBoard(_default_store(), dist.get_rank(), dist.get_world_size(), check_timeout(timeout_s))

    def collective(self, what: str, fn):
        """Run ``fn`` (collective number n on every rank); a failure names the stalled ranks."""
        self.board.enter(what)
        try:
            return fn()
        except StalledRankError:
            raise
        except Exception as exc:  # gloo/NCCL time-outs and closed connections
            raise self.board.diagnose(exc) from exc

    @property
    def world_size(self) -> int:
        return dist.get_world_size()

    @property
    def rank(self) -> int:
        return dist.get_rank()

    def _deliver(self, outbox: list[Envelope]) -> list[Envelope]:
        return self.collective("exchange", lambda: self._send_and_receive(outbox))

    def _send_and_receive(self, outbox: list[Envelope]) -> list[Envelope]:
        world, me = self.world_size, self.rank
        groups: list[list[Envelope]] = [[] for _ in range(world)]
        for env in outbox:
            groups[self.rank_of(env.receiver)].append(env)
        inbox = groups[me]
        if self.tensor_messages:
            return inbox + self._send_and_receive_tensors(groups)
        frames = [frame(g) if g and r != me else bytearray() for r, g in enumerate(groups)]
        sizes = torch.tensor([len(f) for f in frames], dtype=torch.int64, device=self.device)
        table = [torch.empty_like(sizes) for _ in range(world)]
        dist.all_gather(table, sizes)
        incoming = [int(t[me]) for t in table]
        requests, received = [], {}
        # Every receive is posted before any send: gloo holds a send until its receiver has
        # posted the matching receive (its pairs write a send's data only after the peer's
        # "receive ready" notification; gloo/transport Pair::send, onNotifyRecvReady), so
        # posting per peer (send, receive, next peer) chains the
        # transfers; measured on shaped links (thinwire netcheck), a node sending to and
        # receiving from two peers took 1.5x as long that way as with the receives first.
        for peer in range(world):
            if peer != me and incoming[peer]:
                received[peer] = torch.empty(incoming[peer], dtype=torch.uint8, device=self.device)
                requests.append(dist.irecv(received[peer], src=peer))
        for peer in range(world):
            if peer != me and len(frames[peer]):
                # copy=True: a tensor viewing a Python bytearray keeps a Python reference, and
                # gloo may drop its last reference to a finished send from a C++ thread while the
                # interpreter shuts down (SIGABRT at exit). A torch-owned copy has no such reference.
                data = torch.frombuffer(frames[peer], dtype=torch.uint8).to(self.device, copy=True)
                requests.append(dist.isend(data, dst=peer))
        for req in requests:
            req.wait()
        for peer in sorted(received):
            inbox.extend(unframe(bytearray(received[peer].cpu().numpy().tobytes())))
        return inbox

    def _send_and_receive_tensors(self, groups: list[list[Envelope]]) -> list[Envelope]:
        """Steps 2-4 with frames on the device (``tensor_frame``): the sizes table carries
        each frame's length and its table's length, so only the tables cross to the host."""
        world, me = self.world_size, self.rank
        framed = [tensor_frame.frame(g, self.device) if g and r != me else None for r, g in enumerate(groups)]
        sizes = torch.tensor([f[0].numel() if f else 0 for f in framed] + [f[1] if f else 0 for f in framed],
                             dtype=torch.int64, device=self.device)
        table = [torch.empty_like(sizes) for _ in range(world)]
        dist.all_gather(table, sizes)
        rows = torch.stack(table).cpu()
        incoming, heads = rows[:, me].tolist(), rows[:, world + me].tolist()
        requests, received = [], {}
        for peer in range(world):  # receives first, as in _send_and_receive
            if peer != me and incoming[peer]:
                received[peer] = torch.empty(incoming[peer], dtype=torch.uint8, device=self.device)
                requests.append(dist.irecv(received[peer], src=peer))
        for peer in range(world):
            if framed[peer] is not None:
                requests.append(dist.isend(framed[peer][0], dst=peer))
        for req in requests:
            req.wait()
        inbox = []
        for peer in sorted(received):
            head = bytes(received[peer][:heads[peer]].cpu().numpy())
            inbox.extend(tensor_frame.unframe(received[peer], head))
        return inbox

    def all_gather_object(self, obj) -> list:
        out = [None] * self.world_size
        self.collective("all_gather_object", lambda: dist.all_gather_object(out, obj))
        return out

    def barrier(self) -> None:
        self.collective("barrier", dist.barrier)
