"""All agents in one Python process: delivery is a sort. Deterministic; the notebooks' default."""

from __future__ import annotations

from .envelope import Envelope
from .transport import Transport


class InProcessTransport(Transport):
    tensor_messages = True

    @property
    def world_size(self) -> int:
        return 1

    @property
    def rank(self) -> int:
        return 0

    def _deliver(self, outbox: list[Envelope]) -> list[Envelope]:
        return list(outbox)

    def all_gather_object(self, obj) -> list:
        return [obj]
