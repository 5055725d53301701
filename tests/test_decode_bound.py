"""A decode allocates no more than its message can justify: a small checksum-valid message
whose header claims 2^28 values is refused with ``CorruptMessageError`` before anything is
allocated, measured under an address-space limit; receivers that know the tensor still
decode any size."""

import subprocess
import sys
import textwrap

import pytest
import torch

from thinwire.codecs import CodecState, CorruptMessageError, make_codec

from thinwire.engine import wire
from thinwire.engine import DECODE_FLOOR
from thinwire.policies import Decision

SPARSE = ["graddrop(ratio=0.99)", "topk(ratio=0.1)", "keycache", "sized(graddrop(ratio=0.99), min_numel=10)",
          "chain(graddrop(ratio=0.99), quantize(bits=8))", "ef(topk(ratio=0.1))", "binquant(bits=4, coder='ans')",
          "qsgd(bits=4, coding='elias')"]


def _message(spec: str, x: torch.Tensor) -> bytearray:
    codec = make_codec(spec)
    if spec == "keycache":
        decision = Decision(core=torch.arange(30), keys=torch.arange(30, 40), refresh=True)
    else:
        decision = codec.warm_up_decision()
    return codec.encode(x, CodecState(0), "w", decision)


def _forged(spec: str, numel: int) -> bytearray:
    """A real message of 100 values, its header rewritten to claim ``numel`` (checksum valid)."""
    header, payload = wire.unpack(_message(spec, torch.randn(100, generator=torch.Generator().manual_seed(0))))
    return wire.pack(header["codec_id"], header["digest"], header["dtype"], (numel,), payload)


def test_forged_claims_are_refused_within_a_few_megabytes():
    """In a process whose address space may grow by 32 MiB only: a 1 GiB allocation would fail
    with another error than the refusal."""
    script = textwrap.dedent(f"""
        import resource, sys
        sys.path.insert(0, {str(__file__.rsplit('/', 1)[0])!r})
        from test_decode_bound import SPARSE, _forged
        from thinwire.codecs import CodecState, CorruptMessageError, make_codec
        forged = {{spec: _forged(spec, 1 << 28) for spec in SPARSE}}
        assert all(len(m) <= 2000 for s, m in forged.items() if s != "topk(ratio=0.1)"), {{s: len(m) for s, m in forged.items()}}
        pages = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (pages + (32 << 20), resource.RLIM_INFINITY))
        for spec, message in forged.items():
            try:
                make_codec(spec).decode(message, CodecState(0), "w")
            except CorruptMessageError as exc:
                assert "claims 268435456 values, more than its" in str(exc), (spec, str(exc))
            else:
                raise AssertionError(spec + " decoded")
        print("refused", len(forged))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.split()[-2:] == ["refused", str(len(SPARSE))], done.stderr[-3000:]


@pytest.mark.parametrize("spec", SPARSE)
def test_the_bound_names_the_message_and_how_to_take_more(spec):
    message = _forged(spec, DECODE_FLOOR + 1) if make_codec(spec).values_per_byte() < 1 else _forged(spec, 1 << 28)
    with pytest.raises(CorruptMessageError, match=r"the message for 'w' claims \d+ values, more than its \d+ bytes "
                                                  r"can carry .* passes out= or like= with it, or a larger max_values"):
        make_codec(spec).decode(message, CodecState(0), "w")


def test_a_receiver_that_knows_the_tensor_decodes_beyond_the_bound():
    """keycache's values say nothing of the tensor's size: past the floor it needs like=, out=
    or max_values=; top-k of 2^21 values decodes as it is."""
    n = DECODE_FLOOR + 4096
    x = torch.randn(n, generator=torch.Generator().manual_seed(1))
    keycache, message = make_codec("keycache"), _message("keycache", x)
    with pytest.raises(CorruptMessageError, match="claims 1052672 values"):
        keycache.decode(message, CodecState(0), "w")
    for kwargs in ({"like": x}, {"out": torch.empty(n)}, {"max_values": n}):
        decoded = keycache.decode(message, CodecState(0), "w", **kwargs)
        assert torch.equal(decoded[:40], x[:40]) and not decoded[40:].any()
    topk = make_codec("topk(ratio=0.01)")
    big = torch.randn(1 << 21, generator=torch.Generator().manual_seed(2))
    assert topk.decode(topk.encode(big, CodecState(0), "w"), CodecState(0), "w").count_nonzero() == 20972
    with pytest.raises(ValueError, match="max_values=-1 is not allowed"):
        topk.decode(topk.encode(x[:10], CodecState(0), "w"), CodecState(0), "w", max_values=-1)


def test_codecs_say_how_dense_they_can_be():
    assert make_codec("topk(ratio=0.5)").values_per_byte() == 16
    assert make_codec("fp32").values_per_byte() == 0.25 and make_codec("bf16").values_per_byte() == 0.5
    assert make_codec("graddrop(ratio=0.99)").values_per_byte() == pytest.approx(6400)
