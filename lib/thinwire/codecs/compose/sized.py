"""A codec for some tensors only: ``sized(inner, min_numel=..., ndim=..., otherwise='fp32')``.

A tensor of at least ``min_numel`` entries (and, when ``ndim`` is given, of that many
dimensions) goes through ``inner``; any other through ``otherwise``. MQGrad quantizes only
the two large fully connected weight matrices of its CNN and sends the rest in full
(Cui et al. 2018, Sec. 4); torch's PowerSGD communication hook has the same test
(``_should_compress``: compress a tensor only where it pays). The message says which
branch wrote it (meta ``branch``: 1 for ``inner``, 0 for ``otherwise``), so the receiver
needs no shape rule of its own.
"""

from __future__ import annotations

import torch

from ..base import Codec
from ..registry import register
from ...engine import CorruptMessageError, Payload, check_finite
from ..state import CodecState


@register
class Sized(Codec):
    name = "sized"
    codec_id = 12

    def __init__(self, inner: Codec, min_numel: int = 0, ndim: int | None = None, otherwise: str | Codec = "fp32"):
        from ..registry import make_codec  # the registry lists this class: import it when building
        if not isinstance(inner, Codec):
            raise ValueError(f"sized: inner must be a codec, got {inner!r}")
        if not isinstance(min_numel, int) or isinstance(min_numel, bool) or min_numel < 0:
            raise ValueError(f"min_numel={min_numel!r} is not allowed: min_numel must be an int >= 0")
        if ndim is not None and (not isinstance(ndim, int) or isinstance(ndim, bool) or ndim < 1):
            raise ValueError(f"ndim={ndim!r} is not allowed: ndim must be None or an int >= 1")
        self.inner, self.min_numel, self.ndim = inner, min_numel, ndim
        self.otherwise = make_codec(otherwise)
        self.host_only = inner.host_only or self.otherwise.host_only
        self.decodes_on_device = inner.decodes_on_device and self.otherwise.decodes_on_device
        self.reads_device_messages = inner.reads_device_messages and self.otherwise.reads_device_messages
        # NaN and Inf: refused by ``inner``'s own first pass where it has one (no extra pass
        # over the tensor), and for ``otherwise`` as ``encode`` would refuse them (``_compress``)
        self.refuses_non_finite = inner.refuses_non_finite

    @property
    def memory(self) -> bool:
        return self.inner.memory or self.otherwise.memory

    def values_per_byte(self) -> float:
        return max(self.inner.values_per_byte(), self.otherwise.values_per_byte())

    def spec(self) -> str:
        ndim = f", ndim={self.ndim}" if self.ndim is not None else ""
        return f"sized({self.inner.spec()}, min_numel={self.min_numel}{ndim}, otherwise={self.otherwise.spec()!r})"

    def applies(self, numel: int, shape: tuple) -> bool:
        """Whether a tensor of ``numel`` entries and ``shape`` goes through ``inner``."""
        return numel >= self.min_numel and (self.ndim is None or len(shape or (numel,)) == self.ndim)

    def compress(self, flat, state: CodecState, key: str, shape: tuple = ()) -> Payload:
        return self._compress(flat, state, key, shape, None)

    def compress_decided(self, flat, state: CodecState, key: str, decision, shape: tuple = ()) -> Payload:
        """The decision goes to ``inner``; a tensor for ``otherwise`` is sent as it says."""
        return self._compress(flat, state, key, shape, decision)

    def _compress(self, flat, state, key, shape, decision) -> Payload:
        branch = self.applies(flat.numel(), shape)
        codec = self.inner if branch else self.otherwise
        if self.refuses_non_finite and not branch and not self.otherwise.refuses_non_finite:
            check_finite(flat, key, self)
        payload = (codec.compress(flat, state, key, shape=shape) if decision is None or not branch else
                   codec.compress_decided(flat, state, key, decision, shape=shape))
        payload.meta["branch"] = int(branch)
        return payload

    def _branch(self, payload: Payload) -> tuple[Codec, Payload]:
        branch = payload.meta.get("branch")
        if branch not in (0, 1):
            raise CorruptMessageError(f"sized: branch {branch!r} is not 0 or 1")
        rest = Payload(parts=payload.parts, meta={k: v for k, v in payload.meta.items() if k != "branch"})
        return (self.inner if branch else self.otherwise), rest

    def decompress(self, payload: Payload, numel: int, state: CodecState, key: str, out=None,
                   shape: tuple = ()) -> torch.Tensor:
        codec, rest = self._branch(payload)
        return codec.decompress(rest, numel, state, key, out=out, shape=shape)

    def sparse_entries(self, payload: Payload, numel: int, state: CodecState, key: str, shape: tuple = ()):
        codec, rest = self._branch(payload)
        return codec.sparse_entries(rest, numel, state, key, shape=shape)

    def warm_up(self) -> None:
        self.inner.warm_up()
        self.otherwise.warm_up()
