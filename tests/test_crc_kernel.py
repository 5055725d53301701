"""CRC-32C computed inside compiled kernels (``kernels/crc.py``) and joined into the message
checksum by ``wire.pack``: the trailer must equal the CRC-32C of the message's bytes."""

import crc32c
import numpy as np
import pytest
import torch

from thinwire.codecs import CodecState, CorruptMessageError, Payload, make_codec

from thinwire.engine import wire
from thinwire.engine.kernels import crc
from thinwire.engine import PartWriter

needs_instruction = pytest.mark.skipif(not crc.HARDWARE, reason="this CPU has no crc32 instruction")


def _trailer_is_the_crc(message) -> bool:
    return int.from_bytes(message[-4:], "little") == crc32c.crc32c(bytes(message[:-4]))


@needs_instruction
def test_the_compiled_crc_is_crc32c_for_every_length_and_alignment():
    """``crc32c`` (folded on CPUs with ``VPCLMULQDQ``) and the ``crc32`` streams alone, on
    lengths around the fold's 256-byte steps and its two-step minimum."""
    data = np.random.default_rng(0).integers(0, 256, 70_000).astype(np.uint8)
    steps = [k * 256 + d for k in (1, 2, 3, 8) for d in (-1, 0, 1, 8, 255)]
    for n in list(range(0, 60)) + steps + [1000, 16_384, 16_391, 69_993]:
        for start in (0, 1, 3, 7):
            piece = data[start:start + n]
            expected = crc32c.crc32c(piece.tobytes())
            assert int(crc.crc32c(piece)) == expected, (n, start)
            assert int(crc.streams(piece)) == expected, (n, start)


def test_the_fold_constants_are_powers_of_x_modulo_the_polynomial():
    """``crc_math.x_power`` against long division of x^k by the Castagnoli polynomial in
    its normal bit order, then reflected; the fold's multiplicands are x^(2048+63) and
    x^2047 placed in the upper half of a 64-bit word."""
    from thinwire.engine.kernels import crc_fold, crc_math

    def divided(k):
        remainder = 1
        for _ in range(k):
            remainder <<= 1
            if remainder >> 32:
                remainder ^= 0x11EDC6F41
        return int(f"{remainder:032b}"[::-1], 2)
    for k in (0, 1, 31, 32, 33, 64, 127, 2047, 2111, 5000):
        assert crc_math.x_power(k) == divided(k), k
    assert crc_fold.HIGH == divided(2048 + 63) << 32 and crc_fold.LOW == divided(2047) << 32
    assert crc_math.x_8n(1000) == divided(8000)


def test_joined_crcs_are_the_crc_of_the_whole():
    data = np.random.default_rng(1).integers(0, 256, 50_001).astype(np.uint8)
    for length in (1, 8, 4096, 16_384):
        pieces = [data[i:i + length] for i in range(0, data.size, length)]
        crcs = np.array([crc32c.crc32c(p.tobytes()) for p in pieces], np.uint32)
        assert crc.join(crcs, length, pieces[-1].size) == crc32c.crc32c(data.tobytes())


@pytest.mark.parametrize("spec", ["qsgd(bits=8, bucket=512)", "qsgd(bits=4, bucket=512, norm='max')",
                                  "qsgd(bits=3, bucket=100)", "qsgd(bits=12, bucket=512)"])
@pytest.mark.parametrize("n", [1, 7, 16_384 * 3 + 5, 200_000])
def test_qsgd_messages_carry_the_crc_of_their_bytes(spec, n):
    codec = make_codec(spec)
    message = codec.encode(torch.randn(n, generator=torch.Generator().manual_seed(n)), CodecState(0), "x")
    assert _trailer_is_the_crc(message)
    codec.decode(message, CodecState(0), "x")


def test_a_writer_that_reports_a_wrong_crc_makes_a_message_no_receiver_accepts():
    """The receiver checks every byte itself: a writer's CRC is trusted only by the sender."""
    def fill(view):
        view.copy_(torch.arange(view.numel(), dtype=torch.uint8))
        return crc32c.crc32c(bytes(view.numel())) ^ 1  # not the CRC of what it wrote

    payload = Payload(parts={"codes": PartWriter(torch.uint8, 1000, fill, checksummed=True),
                             "norms": PartWriter(torch.float32, 3, lambda v: v.fill_(1.0))})
    message = wire.pack(10, 0, torch.float32, (1000,), payload)
    assert not _trailer_is_the_crc(message)
    with pytest.raises(CorruptMessageError):
        wire.unpack(message)


def test_a_writer_that_reports_its_crc_gives_the_same_message_as_one_that_does_not():
    """Known pieces joined with the bytes around them (header, padding, other parts)."""
    data = torch.randint(0, 256, (5000,), dtype=torch.uint8, generator=torch.Generator().manual_seed(3))

    def fill(view):
        view.copy_(data)
        return crc32c.crc32c(data.numpy().tobytes())

    messages = [wire.pack(10, 5, torch.float32, (70, 71), Payload(
        meta={"count": 3}, parts={"lo": PartWriter(torch.float32, 3, lambda v: v.fill_(1.0)),
                                  "codes": PartWriter(torch.uint8, 5000, fill, checksummed=ok),
                                  "norms": PartWriter(torch.float32, 2, lambda v: v.fill_(2.0))}))
        for ok in (True, False)]
    assert messages[0] == messages[1] and _trailer_is_the_crc(messages[0])


def test_the_portable_crc_steps_compute_what_the_instruction_does():
    """Where the compiled target lacks the crc32 instruction (``NUMBA_CPU_NAME=generic``, say),
    ``crc32c`` advances a bit at a time: each step gives the ``crc32c`` package's value."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        data = rng.integers(0, 256, 8, dtype=np.uint8)
        word = int.from_bytes(data.tobytes(), "little")
        stepped = int(crc._software_word(np.uint64(0xFFFFFFFF), np.uint64(word))) ^ 0xFFFFFFFF
        assert stepped == crc32c.crc32c(data.tobytes())
        one = int(crc._software_byte(np.uint32(0xFFFFFFFF), np.uint8(data[0]))) ^ 0xFFFFFFFF
        assert one == crc32c.crc32c(data[:1].tobytes())


def test_kernels_know_the_target_cpu_features():
    from thinwire.engine.kernels import vector_width
    assert vector_width.target_features("+sse4.2,-f16c") == {"+sse4.2", "-f16c"}  # NUMBA_CPU_FEATURES
    assert vector_width.target_features("", "generic") is None  # NUMBA_CPU_NAME without features
    assert "+sse2" in vector_width.target_features("", "host")  # this machine's (x86-64)
