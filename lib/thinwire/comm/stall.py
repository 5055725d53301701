"""Which rank stalled, when a collective times out.

gloo and NCCL end a collective that waits longer than the process group's timeout with
an error that does not say which peer never came. The ranks therefore share what they
know through the rendezvous store (the key-value store every rank already uses; under
torchrun the launcher hosts it, so it answers even when a rank is stopped):

- each rank posts how many collectives it has entered, and the last one's name (one store
  write per collective, tens of microseconds on one host);
- a rank whose collective fails posts that it is alive, then waits ``GRACE_S`` for its
  peers to do the same. Live peers waiting in the same collective time out together, so
  the ranks that never answer are the stopped or dead ones. The error names them, with
  the collective each last entered.
- a rank that has printed that error posts so, and waits (up to ``GRACE_S`` more) for the
  live peers to post theirs before it exits: torchrun stops every other rank within a
  tenth of a second of the first exit, which would cut short a peer whose grace ended a
  little later.
"""

from __future__ import annotations

import time
from datetime import timedelta

PREFIX = "thinwire/progress/"
ALIVE = "thinwire/alive/"
REPORTED = "thinwire/reported/"
GRACE_S = 5.0


class StalledRankError(RuntimeError):
    """A collective timed out or failed; the message names the ranks that did not arrive.
    ``live`` lists the peers that answered (they are reporting the same failure)."""

    def __init__(self, message: str, live: list[int] | None = None):
        super().__init__(message)
        self.live = list(live or [])


class ProgressBoard:
    """This rank's count of collectives entered, posted to a shared store."""

    def __init__(self, store, rank: int, world_size: int, timeout_s: float):
        self.store, self.rank, self.world_size, self.timeout_s = store, rank, world_size, timeout_s
        self.count = 0
        self.what = ""
        self.entered = time.monotonic()

    def enter(self, what: str) -> None:
        self.count += 1
        self.what = what
        self.entered = time.monotonic()
        if self.store is not None:
            self.store.set(f"{PREFIX}{self.rank}", f"{self.count} {what}")

    def _read(self, key: str) -> str | None:
        return self.store.get(key).decode() if self.store.check([key]) else None

    def peers(self) -> dict[int, tuple[int, str] | None]:
        """Every other rank's (count, collective name), None where it never posted."""
        out: dict[int, tuple[int, str] | None] = {}
        for r in range(self.world_size):
            if r != self.rank:
                value = self._read(f"{PREFIX}{r}")
                count, _, what = (value or "0 ").partition(" ")
                out[r] = (int(count), what) if value is not None else None
        return out

    def silent_peers(self, grace_s: float) -> list[int]:
        """Post that this rank is alive, and return the peers that do not within ``grace_s``."""
        self.store.set(f"{ALIVE}{self.rank}", str(self.count))
        waiting = [r for r in range(self.world_size) if r != self.rank]
        end = time.monotonic() + grace_s
        while waiting and time.monotonic() < end:
            waiting = [r for r in waiting if not self.store.check([f"{ALIVE}{r}"])]
            if waiting:
                time.sleep(0.1)
        return waiting

    def reported(self, live: list[int], wait_s: float = GRACE_S + 1.0) -> None:
        """Post that this rank has reported its error, and wait for the ``live`` peers to post
        theirs (their graces may end up to a collective's skew later), at most ``wait_s``."""
        if self.store is None:
            return
        try:
            self.store.set(f"{REPORTED}{self.rank}", "1")
            end = time.monotonic() + wait_s
            waiting = list(live)
            while waiting and time.monotonic() < end:
                waiting = [r for r in waiting if not self.store.check([f"{REPORTED}{r}"])]
                if waiting:
                    time.sleep(0.02)
        except Exception:  # the store is gone: nothing to wait for
            pass

    def diagnose(self, cause: BaseException, grace_s: float = GRACE_S) -> StalledRankError:
        """The error to raise when this rank's current collective failed with ``cause``."""
        waited = time.monotonic() - self.entered
        here = f"rank {self.rank} waited {waited:.1f} s in collective {self.count} ({self.what})"
        timed_out = waited >= 0.9 * self.timeout_s
        how = (f"for longer than the collective timeout of {self.timeout_s:g} s" if timed_out else
               f"and it failed before the timeout of {self.timeout_s:g} s (a peer's connection closed)")
        if self.store is None:
            return StalledRankError(f"{here} {how}: {cause}")
        try:
            self.store.set_timeout(timedelta(seconds=5))
            silent = self.silent_peers(grace_s)
            peers = self.peers()
        except Exception as exc:  # the store is gone too: its host died, and with it rank 0 under torchrun
            return StalledRankError(f"{here} {how} ({cause}); the rendezvous store is unreachable ({exc}): the "
                                    f"host that holds it (torchrun's master node, where rank 0 runs) stopped, "
                                    "or the network to it is down")
        if not silent:
            return StalledRankError(f"{here} {how}, but every peer is alive: a rank spent longer than the "
                                    f"collective timeout of {self.timeout_s:g} s between collectives (raise "
                                    f"--timeout if that is expected). Cause: {cause}",
                                    [r for r in range(self.world_size) if r != self.rank])
        where = "; ".join(f"rank {r} " + ("never entered a collective" if peers[r] is None
                                          else f"last entered collective {peers[r][0]} ({peers[r][1]})")
                          for r in silent)
        live = [r for r in range(self.world_size) if r != self.rank and r not in silent]
        return StalledRankError(f"rank(s) {', '.join(map(str, silent))} stalled or died: {here} {how}, and they "
                                f"did not answer within {grace_s:g} s; {where}. Cause: {cause}", live)
