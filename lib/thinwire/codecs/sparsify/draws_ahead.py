"""The sampled threshold's positions drawn one message ahead, on a device (``graddrop.py``).

The sampled threshold (``drop_threshold``, Aji & Heafield Sec. 4: 0.1% of the values) draws
its positions from the endpoint's generator, a host one, so that the messages do not depend
on the device. On a GPU that draw is host work: 250,000 positions of 250M values take about
a millisecond, during which the device has nothing to do, and the gradient cannot be added
inside the drop pass (Alg. 1 line 2 fused with lines 3-6) unless the positions are known
before the pass starts.

So the next message's positions are drawn (``draw_next``) from a copy of the generator
taken where the generator stands, on a thread of their own (``torch.randint`` and the
copy into page-locked memory let go of Python's lock), while this message's drop pass,
its waits for the device and everything after run; the next message waits for that thread
only if it has not finished (``take``). Drawn in the caller's thread, the draw would sit
between the drop pass's launch and its wait and could outlast the pass (the engine's
README records the measurement).
Which draws the next message asks for (its spans and sample sizes) is predicted from the
order seen so far: the draws that followed this message's draws last time (a model's
tensors, or DDP's buckets, are sent in the same order every step), else the same draws
again (one tensor). The next message uses them (``take``) only when it asks for exactly
those draws and finds the generator where the copy was taken; it then moves the generator
on to where the copy ended, exactly as drawing then would have. A wrong prediction, or
anything else that drew in between (a restored checkpoint, another consumer of the
generator), leaves the draws ahead unused, and the message draws its own. Either way every
message gets the positions, and leaves the generator, as drawing in order does, so the
messages are the host path's byte for byte.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import torch

from .drop_threshold import narrowed, sample_positions

Draws = tuple[tuple[int, int, int], ...]  # (start, n, m) per span: m positions among span [start, start + n)

_drawer: ThreadPoolExecutor | None = None
_drawer_lock = threading.Lock()


def _submit(work) -> Future:
    """``work()`` on the one drawing thread, made on first use."""
    global _drawer
    with _drawer_lock:
        if _drawer is None:
            _drawer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="thinwire-draws")
    return _drawer.submit(work)


def _forget_drawer() -> None:
    """In a forked child the parent's drawing thread does not exist: make a new one there."""
    global _drawer, _drawer_lock
    _drawer, _drawer_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_drawer)


class DrawsAhead:
    """One endpoint's draws ahead (kept in ``CodecState.scratch``: a cache, not state)."""

    def __init__(self):
        self.copy = torch.Generator()
        # (draws, generator state before, after, positions), or a Future of it while drawn
        self.ahead: tuple[Draws, torch.Tensor, torch.Tensor, list[torch.Tensor]] | Future | None = None
        self.last: Draws | None = None  # the latest message's draws
        self.follows: dict[Draws, Draws] = {}  # the draws that came after each, last time
        self.taken = 0  # messages that used draws made ahead (statistics)

    def take(self, generator: torch.Generator, draws: Draws, device: torch.device) -> list[torch.Tensor] | None:
        """The positions drawn ahead for ``draws`` on ``device``, the generator moved on past
        them, or None (nothing drawn ahead that fits: the caller draws)."""
        if self.last is not None:
            self.follows[self.last] = draws
        self.last = draws
        ahead, self.ahead = self.ahead, None
        if isinstance(ahead, Future):
            ahead = ahead.result()  # a failed draw raises here, in the message that needs it
        if ahead is None or ahead[0] != draws or not torch.equal(generator.get_state(), ahead[1]):
            return None
        generator.set_state(ahead[2])
        self.taken += 1
        return [p.to(device, non_blocking=True) for p in ahead[3]]

    def draw_next(self, generator: torch.Generator, draws: Draws, pin: bool) -> None:
        """For the message after one that drew ``draws``, draw what is predicted from a copy
        of ``generator`` (``pin``: into page-locked memory, so that ``take`` copies them to the
        device without a wait)."""
        following = self.follows.get(draws, draws)
        before = generator.get_state()

        def draw():
            self.copy.set_state(before)
            positions = [narrowed(sample_positions(n, m, "random", self.copy) + start, start + n)
                         for start, n, m in following]
            return following, before, self.copy.get_state(), [p.pin_memory() if pin else p for p in positions]
        self.ahead = _submit(draw)
