"""Words written into a message after its CRC-32C was taken added to that CRC on the
device, in one launch and with no host read: the CRC is affine, so writing a word w into
bytes that were zero when the body's CRC was made changes it by w's raw CRC (zero register,
no final xor) moved past the body's bytes after it, a product with x^(8 k) in GF(2)[x]
modulo the CRC-32C polynomial (``triton_crc._times``). Min-max quantization's range, found
on the device after the host took the message's prefix, is added this way
(``wire/tensor_message.py``, ``kernels/triton_range.py``).
"""

from __future__ import annotations

import torch

from .crc_math import x_8n
from .triton_crc import AVAILABLE, _bits

if AVAILABLE:
    import triton
    import triton.language as tl

    from .triton_crc import _times

    @triton.jit
    def _raw_word(word):
        """The raw CRC (zero register, no final xor) of the 4 bytes at ``word``, bit by bit."""
        one = tl.arange(0, 1)
        raw = tl.zeros([1], dtype=tl.uint32)
        for b in tl.static_range(4):
            raw ^= tl.load(word + b + one).to(tl.uint32)
            for _ in tl.static_range(8):
                raw = (raw >> 1) ^ tl.where((raw & 1) != 0, 0x82F63B78, 0).to(tl.uint32)
        return raw

    @triton.jit
    def _with_words(crc, word0, power0, word1, power1, trailer, TWO: tl.constexpr, STORE: tl.constexpr):
        """``crc`` (a message body's CRC made with zeros in the 4 bytes ``word0`` holds now,
        and ``word1``'s when ``TWO``) turned into the CRC with those bytes there: each word's
        raw CRC times its ``power`` (x^(8 k), k the body's bytes after it), xor-ed in; with
        ``STORE`` also written into the trailer."""
        one = tl.arange(0, 1)
        total = tl.load(crc + one).to(tl.uint32, bitcast=True)
        total ^= _times(_raw_word(word0), (power0 + tl.zeros([1], tl.int32)).to(tl.uint32, bitcast=True))
        if TWO:
            total ^= _times(_raw_word(word1), (power1 + tl.zeros([1], tl.int32)).to(tl.uint32, bitcast=True))
        tl.store(crc + one, total.to(tl.int32, bitcast=True))
        if STORE:
            shift = (8 * tl.arange(0, 4)).to(tl.uint32)
            tl.store(trailer + tl.arange(0, 4), ((total >> shift) & 255).to(tl.uint8))


WITH_WORDS = 2  # the most words ``with_words`` adds in its one launch


def with_words(crc: torch.Tensor, message: torch.Tensor, offsets: tuple[int, ...],
               trailer: torch.Tensor | None = None) -> torch.Tensor:
    """``crc`` (one int32 on the message's device: the CRC-32C of the message's body, before
    its 4-byte trailer, computed with zeros in the 4-byte words at ``offsets``, at most
    ``WITH_WORDS`` of them) made, in place, the CRC of the body with the message's own bytes
    there, which may have been written on the device after the CRC's prefix was taken on
    the host (a range): the CRC is affine, so the difference is each word's raw CRC moved
    past the body's bytes after it. Also written into ``trailer`` when given. One launch, no
    host read."""
    body = message.numel() - 4
    if not (1 <= len(offsets) <= WITH_WORDS and all(0 <= at <= body - 4 for at in offsets)):
        raise ValueError(f"offsets {offsets} are not 1 to {WITH_WORDS} words within a message body of {body} bytes")
    at0, at1 = offsets[0], offsets[-1]
    _with_words[(1,)](crc, message[at0:at0 + 4], _bits(x_8n(body - at0 - 4)), message[at1:at1 + 4],
                      _bits(x_8n(body - at1 - 4)), crc if trailer is None else trailer, TWO=len(offsets) == 2,
                      STORE=trailer is not None)
    return crc
