"""A one-way delay for every packet a namespace receives, where the kernel has no ``netem``:
the kernel queues the packets to this process (netfilter's NFQUEUE, asked for by an iptables
rule in the ``raw`` table's PREROUTING chain), and the process lets each one through
``delay_s`` after it arrived, in arrival order. A link's propagation delay, made real.

Why on the receiver's way in, not the sender's way out: a packet held on its way out is
still charged to its socket, and TCP's small-queue limit (about 1 ms of the flow's rate
queued below the socket) then throttles the sender to a small fraction of the link; a
packet that crossed the veth pair has left the sender's accounting. Held after the shaped
links, the packet pays the link's rate first and the delay after, as on a wire.

The protocol is netlink's (``NETLINK_NETFILTER``, subsystem queue, linux/netfilter/nfnetlink_queue.h):
bind queue ``queue``, copy only the packets' metadata (the packet stays in the kernel), take
segmentation-offload packets whole (``NFQA_CFG_F_GSO``: fewer, larger packets), and release
every packet due with one batch verdict (``NFQNL_MSG_VERDICT_BATCH`` accepts all ids up to
the one given; a constant delay keeps arrival order, so the due packets are a prefix).
Packets still held when the process ends are dropped by the kernel; the cluster deletes the
namespace with it.

Run by the cluster as ``python -m thinwire.netcheck.delay_line DELAY_S OWNER_PID`` inside a
node's namespace (queue 0); it prints ``ready`` once bound and runs until SIGTERM, or until the process
that started it ends.
"""

from __future__ import annotations

import collections
import ctypes
import os
import select
import signal
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
SUBSYS_QUEUE = 3
PACKET, VERDICT, CONFIG, VERDICT_BATCH = 0, 1, 2, 3  # NFQNL_MSG_*
REQUEST, ACK = 1, 4  # NLM_F_*
NLMSG_ERROR = 2
CFG_CMD, CFG_PARAMS, CFG_QUEUE_MAXLEN, CFG_MASK, CFG_FLAGS = 1, 2, 3, 4, 5  # NFQA_CFG_*
CMD_BIND = 1
COPY_META = 1
FLAG_GSO = 4
PACKET_HDR, VERDICT_HDR = 1, 2  # NFQA_*
ACCEPT = 1  # NF_ACCEPT
QUEUE_MAXLEN = 1 << 16


def _attribute(kind: int, payload: bytes) -> bytes:
    size = 4 + len(payload)
    return struct.pack("=HH", size, kind) + payload + b"\0" * (-size % 4)


def _message(kind: int, queue: int, attributes: list[bytes], flags: int = REQUEST, seq: int = 0) -> bytes:
    body = struct.pack("!BBH", socket.AF_UNSPEC, 0, queue) + b"".join(attributes)
    return struct.pack("=IHHII", 16 + len(body), (SUBSYS_QUEUE << 8) | kind, flags, seq, 0) + body


def packet_ids(data: bytes) -> list[int]:
    """The packet ids of the queued-packet messages in one netlink datagram."""
    ids, offset = [], 0
    while offset + 16 <= len(data):
        size, kind = struct.unpack_from("=IH", data, offset)
        if size < 16:
            break
        if kind == (SUBSYS_QUEUE << 8) | PACKET:
            at = offset + 20  # after the netlink header and nfgenmsg
            while at + 4 <= offset + size:
                length, attr = struct.unpack_from("=HH", data, at)
                if length < 4:
                    break
                if attr & 0x7FFF == PACKET_HDR:
                    ids.append(struct.unpack_from("!I", data, at + 4)[0])
                    break
                at += (length + 3) & ~3
        offset += (size + 3) & ~3
    return ids


class DelayLine:
    """Bound to NFQUEUE ``queue`` of the current network namespace; ``run`` holds each packet
    ``delay_s`` (see the module docstring)."""

    def __init__(self, delay_s: float, queue: int = 0):
        if not (isinstance(delay_s, (int, float)) and 0 < delay_s <= 1):
            raise ValueError(f"delay_s={delay_s!r} is not allowed: a number of seconds in (0, 1]")
        if not (isinstance(queue, int) and 0 <= queue < 65536):
            raise ValueError(f"queue={queue!r} is not allowed: an int in 0..65535")
        self.delay_s, self.queue = float(delay_s), queue
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        self.sock.bind((0, 0))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self._config(1, [_attribute(CFG_CMD, struct.pack("!BBH", CMD_BIND, 0, 0))])
        self._config(2, [_attribute(CFG_PARAMS, struct.pack("!IB", 0, COPY_META))])
        self._config(3, [_attribute(CFG_QUEUE_MAXLEN, struct.pack("!I", QUEUE_MAXLEN))])
        self._config(4, [_attribute(CFG_MASK, struct.pack("!I", FLAG_GSO)),
                         _attribute(CFG_FLAGS, struct.pack("!I", FLAG_GSO))])
        self.held: collections.deque[tuple[float, int]] = collections.deque()

    def _config(self, seq: int, attributes: list[bytes]) -> None:
        self.sock.send(_message(CONFIG, self.queue, attributes, REQUEST | ACK, seq))
        reply = self.sock.recv(65536)
        _, kind = struct.unpack_from("=IH", reply)
        if kind == NLMSG_ERROR:
            error = struct.unpack_from("=i", reply, 16)[0]
            if error:
                raise OSError(-error, f"NFQUEUE {self.queue} configuration step {seq}: {os.strerror(-error)}")

    def _take(self) -> None:
        while True:
            try:
                data = self.sock.recv(65536, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            due = time.monotonic() + self.delay_s
            self.held.extend((due, pid) for pid in packet_ids(data))

    def _release(self) -> None:
        now, last = time.monotonic(), None
        while self.held and self.held[0][0] <= now:
            last = self.held.popleft()[1]
        if last is not None:
            self.sock.send(_message(VERDICT_BATCH, self.queue, [_attribute(VERDICT_HDR, struct.pack("!II", ACCEPT, last))]))

    def run(self, stop=lambda: False) -> None:
        while not stop():
            timeout = max(0.0, self.held[0][0] - time.monotonic()) if self.held else 0.5
            readable, _, _ = select.select([self.sock], [], [], timeout)
            if readable:
                self._take()
            self._release()


def main(argv: list[str]) -> int:
    delay_s, owner = float(argv[0]), int(argv[1])
    stopped = []
    signal.signal(signal.SIGTERM, lambda *_: stopped.append(True))
    # end with the cluster's process (``owner``), even one killed outright: PR_SET_PDEATHSIG
    # (1), and the check that it was still there when that was set
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != owner:
        return 1
    line = DelayLine(delay_s)
    print("ready", flush=True)
    line.run(lambda: bool(stopped))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
