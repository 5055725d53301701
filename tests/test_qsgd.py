"""QSGD (``codecs/quantize/qsgd.py``): unbiased, within Lemma 3.1's variance, bytes as
laid out, reproducible from the seed, and corrupt norms refused."""

import math

import pytest
import torch

from thinwire.codecs import CodecState, CorruptMessageError, make_codec

from thinwire.engine import wire
from thinwire.engine.kernels import bitpack, fused
from thinwire.codecs.quantize.qsgd import QSGD, bucket_sizes

DRAWS = 400


def draws(codec, x, seed=3, count=DRAWS):
    state = CodecState(seed)
    return torch.stack([codec.decode(codec.encode(x, state, "g")).double() for _ in range(count)])


def bucket_norms_squared(x, bucket):
    padded = torch.zeros(math.ceil(x.numel() / bucket) * bucket, dtype=torch.float64)
    padded[:x.numel()] = x.double()
    return padded.view(-1, bucket).square().sum(1)


@pytest.mark.parametrize("bits,bucket,norm", [(2, 64, "l2"), (4, 512, "l2"), (8, 512, "l2"), (8, 100, "max"),
                                              (3, 7, "max"), (12, 1000, "l2")])
def test_unbiased_within_a_statistical_bound(bits, bucket, norm):
    """E[Q(v)] = v: the mean of 400 independent encodes, taken in float64, lies within 5
    standard errors of every input value. One draw's error on a value is at most one
    level step, norm / s, so its standard deviation is at most step / 2."""
    codec = QSGD(bits, bucket, norm)
    x = torch.randn(3001, generator=torch.Generator().manual_seed(bits)) * torch.linspace(0.01, 3, 3001)
    y = draws(codec, x)
    sq = bucket_norms_squared(x, bucket)
    norms = sq.sqrt() if norm == "l2" else torch.nn.functional.pad(x.double().abs(), (0, len(sq) * bucket - x.numel())
                                                                   ).view(-1, bucket).amax(1)
    step = (norms / codec.levels).repeat_interleave(bucket)[:x.numel()]
    bound = 5 * (step / 2) / math.sqrt(DRAWS) + 1e-6 * x.double().abs()
    error = (y.mean(0) - x.double()).abs()
    assert bool((error <= bound).all()), float((error / bound).max())
    # and not trivially: a single draw is not the input
    assert float((y[0] - x.double()).abs().max()) > 0


@pytest.mark.parametrize("bits,bucket", [(2, 512), (4, 512), (8, 512), (8, 8192)])
def test_variance_within_lemma_3_1(bits, bucket):
    """E||Q(v) - v||^2 <= sum over buckets of min(d / s^2, sqrt(d) / s) ||v_b||^2 (L2 norm)."""
    codec = QSGD(bits, bucket, "l2")
    x = torch.randn(20_000, generator=torch.Generator().manual_seed(7))
    y = draws(codec, x, count=50)
    mse = float((y - x.double()).square().sum(1).mean())
    bound = codec.variance_bound(bucket_norms_squared(x, bucket), bucket_sizes(x.numel(), bucket))
    assert 0 < mse <= bound


@pytest.mark.parametrize("bits", [2, 3, 8, 9, 16])
def test_bytes_are_codes_and_norms(bits):
    """Payload = ceil(n bits / 8) code bytes + 4 bytes per bucket; framing is the rest."""
    n, bucket = 100_003, 512
    codec = QSGD(bits, bucket)
    message = codec.encode(torch.randn(n), CodecState(0), "g")
    payload, framing = wire.measure(message)
    assert payload == bitpack.packed_bytes(n, bits) + 4 * math.ceil(n / bucket)
    assert payload + framing == len(message) and framing < 40
    if bits == 8:  # the Quant-DP setting: a byte per value + a float per 512 values
        assert payload / (4 * n) == pytest.approx(0.25 + 1 / 512, abs=1e-4)


def test_codes_are_sign_and_level():
    codec = QSGD(8, 4)
    x = torch.tensor([0.0, -3.0, 0.0, 0.0, 1.0, -1.0, 1.0, -1.0])
    _, payload = wire.unpack(codec.encode(x, CodecState(0), "g"))
    assert payload.parts["norms"].tolist() == [3.0, 2.0]
    # a bucket's largest value sits on the top level exactly: no rounding
    assert payload.parts["codes"][1] == 128 | 127
    assert codec.decode(codec.encode(x, CodecState(0), "g"))[1] == -3.0
    assert torch.equal(codec.decode(codec.encode(torch.zeros(10), CodecState(0), "g")), torch.zeros(10))


def test_messages_depend_on_the_seed_only():
    codec, x = QSGD(4, 512), torch.randn(5000)
    a, b, c = CodecState(1), CodecState(1), CodecState(2)
    first = [codec.encode(x, a, "g") for _ in range(3)]
    assert first == [codec.encode(x, b, "g") for _ in range(3)]
    assert first[0] != first[1]  # each message draws a fresh key
    assert codec.encode(x, c, "g") != first[0]


def test_forged_norms_are_corrupt():
    codec = QSGD(8, 512)
    message = codec.encode(torch.randn(1000), CodecState(0), "g")
    header, payload = wire.unpack(message)
    for bad in (-1.0, math.inf, math.nan):
        forged = payload.parts["norms"].clone()
        forged[1] = bad
        body = wire.pack(codec.codec_id, codec.digest, torch.float32, (1000,),
                         type(payload)(parts={"codes": payload.parts["codes"], "norms": forged}))
        with pytest.raises(CorruptMessageError, match="norms"):
            codec.decode(body)


@pytest.mark.parametrize("spec,match", [("qsgd(bits=1)", "bits"), ("qsgd(bits=17)", "bits"),
                                        ("qsgd(bucket=0)", "bucket"), ("qsgd(norm='l1')", "norm")])
def test_bad_parameters_name_themselves(spec, match):
    with pytest.raises(ValueError, match=match):
        make_codec(spec)


def _double_rounding_case():
    """A bucket [big, v] and a key whose value v rounds twice (float64, then float32) to a
    level one above its once-rounded sum: v = 1 + 2^-23, scale = 2^-25 (1 - 2^-23), u = 1 - 2^-24
    make S = 1 - 2^-25 - 2^-71, whose float64 is the float32 midpoint 1 - 2^-25 (ties to 1.0:
    level 1) while S itself lies below it (level 0)."""
    import numpy as np
    from thinwire.engine.kernels.qsgd import lowbias32
    v = np.float32(1 + 2.0 ** -23)
    scale = np.float32(2.0 ** -25 * (1 - 2.0 ** -23))
    big = np.float32(127 / np.float64(scale))
    for _ in range(64):  # the bucket's largest value whose norm gives exactly this scale
        norm = np.float32(np.sqrt(np.float64(big) ** 2 + np.float64(v) ** 2))
        got = np.float32(min(127 / np.float64(norm), np.finfo(np.float32).max))
        if got == scale:
            break
        big = np.nextafter(big, np.float32(np.inf) if got > scale else np.float32(0))
    assert got == scale
    k1 = 12345
    k2 = int(lowbias32(np.uint32(k1 + 1))) ^ 0xFFFFFFFF  # counter 1 draws u = (2^24 - 1) / 2^24
    return np.array([big, v], np.float32), scale, k1 | k2 << 32


def test_rounding_is_the_definitions_where_rounding_twice_differs_from_once():
    """``kernels/qsgd.py`` rounds in float32 with a fused multiply-add first, and rounds a
    bucket again in float64 where a level may differ: its codes are the definition's
    (the device path's float64 arithmetic) in the one case where the two roundings differ."""
    from fractions import Fraction

    import numpy as np
    from thinwire.engine.kernels import qsgd, torch_qsgd
    x, scale, key = _double_rounding_case()
    exact = Fraction(float(x[1])) * Fraction(float(scale)) + Fraction(2 ** 24 - 1, 2 ** 24)
    midpoint = 1 - Fraction(1, 2 ** 25)
    assert exact < midpoint and float(exact) == float(midpoint)  # once: level 0; twice: level 1
    norms, out = np.empty(1, np.float32), np.empty(2, np.uint8)
    qsgd.quantize_packed(x, 2, "l2", 8, key, norms, out)
    rows = torch.from_numpy(x).view(1, 2)
    want = torch_qsgd.codes(rows, 2, torch_qsgd.norms(rows, False), 8, key)
    assert want.tolist() == [127, 1]
    assert out.tolist() == [127, 1]


WITHOUT_FMA = r"""
import sys
import numpy as np
from thinwire.engine.kernels import bitpack, fused, qsgd
assert not fused.HARDWARE and not qsgd.FUSED
x = np.frombuffer(sys.stdin.buffer.read(), np.float32)
for bits in (8, 3):
    norms = np.empty(-(-x.size // 512), np.float32)
    out = np.empty(bitpack.packed_bytes(x.size, bits), np.uint8)
    qsgd.quantize_packed(x, 512, "l2", bits, 0x1234_5678_9ABC_DEF0, norms, out)
    sys.stdout.buffer.write(norms.tobytes() + out.tobytes())
"""


# make test-long, beside the goldens on an emulated other CPU: the kernels compiled again for another CPU
@pytest.mark.long
@pytest.mark.skipif(not fused.HARDWARE, reason="this CPU has no FMA: the suite's own runs take the float64 path")
def test_codes_are_the_same_where_the_cpu_has_no_fused_multiply_add(tmp_path):
    """A CPU without FMA rounds every bucket in float64 (``_round``): the same norms and codes."""
    import os
    import subprocess
    import sys

    import numpy as np
    from thinwire.engine.kernels import qsgd
    from thinwire.engine.kernels.vector_width import target_features
    features = ",".join(sorted(f for f in target_features() if f not in ("+fma", "+avx512f"))) + ",-fma,-avx512f"
    x = torch.randn(3 * 512 * 64 + 100, generator=torch.Generator().manual_seed(4)).numpy()
    x[:512] *= 1e-30  # a bucket of tiny values, scaled by up to the largest float32
    env = dict(os.environ, NUMBA_CPU_FEATURES=features, NUMBA_CACHE_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", WITHOUT_FMA], input=x.tobytes(), env=env, capture_output=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    here = b""
    for bits in (8, 3):
        norms = np.empty(-(-x.size // 512), np.float32)
        out = np.empty(bitpack.packed_bytes(x.size, bits), np.uint8)
        qsgd.quantize_packed(x, 512, "l2", bits, 0x1234_5678_9ABC_DEF0, norms, out)
        here += norms.tobytes() + out.tobytes()
    assert done.stdout == here
