"""Seconds spent framing host messages: the workbench's own cost, apart from the codec's.

A message is the codec's payload inside a frame (``format.py``: header, padding, CRC-32C
trailer). Laying the payload's parts into the frame and checksumming it on the way out, and
reading the header and verifying the checksum on the way in, is work no peer system pays:
DDP's all-reduce sends the tensor's own bytes. ``format.pack`` (less the time a part's writer
spends computing the payload into the frame), ``format.unpack`` and ``format.verify`` add
their host time here; ``algorithms/round.py`` reads it around each encode and decode and
reports it as the codec time's ``frame`` part. Per thread, so a checksum's helper threads
add nothing twice. Not counted: the check fused into a large part's copy
(``checked_copy.py``) and device messages (``tensor_message.py``), whose checks are
interleaved with the codec's own reads.
"""

from __future__ import annotations

import threading

_LOCAL = threading.local()


def spent() -> float:
    """Framing seconds this thread has spent so far."""
    return getattr(_LOCAL, "seconds", 0.0)


def add(seconds: float) -> None:
    _LOCAL.seconds = spent() + seconds
