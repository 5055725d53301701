"""Gradient dropping on 25M float32 values in steady state: residual add + sampled
threshold + drop + encode, then decode into a reused buffer.

fraction = (one add pass over the same values) / (encode + decode); speed-up = an exact
top-k at 1% that sorts (``torch.topk``'s selection, the indices sorted, the values
gathered, then the same decode) / gradient dropping at 99%: the comparison of Aji &
Heafield's Sec. 4 (sampling against sorting). thinwire's own top-k codec selects without
a sort (``kernels/select.py``) and is in the codec table. Density error = |mean achieved
density - 1%| / 1% over the timed messages. Each message carries a fresh gradient and
the residual the previous ones left, as in training. In each round, two add passes and
two messages run in turn, and the second of each is timed (``roofline.interleaved``'s
reasons); each time is the median over the rounds after warm-up rounds, and the density
is the timed messages'.
"""

from __future__ import annotations

import statistics
import time

import torch

from roofline import WARMUP, add_pass, median_seconds
from thinwire.codecs import CodecState, make_codec
from thinwire.engine import wire

N = 25_000_000
SPECS = ["graddrop(ratio=0.99)", "graddrop(ratio=0.99, sampling='stride')",
         "graddrop(ratio=0.99, encoding='index_value')", "graddrop(ratio=0.99, bits=1)",
         "graddrop(ratio=0.999)"]
TARGETS = {"graddrop(ratio=0.99)": {"fraction_of_roofline": 0.5, "speedup_vs_topk": 10.0, "density_error": 0.10}}
REPEATS = 7  # rounds timed, after roofline.WARMUP untimed ones: each time their median


def run(n: int = N) -> list[dict]:
    gen = torch.Generator().manual_seed(0)
    grads = [torch.randn(n, generator=gen) for _ in range(2)]
    add = add_pass(n)
    topk = make_codec("topk(ratio=0.01)")
    topk_message = topk.encode(grads[0])
    out = torch.empty(n)
    k = topk.k_for(n)

    def sorting_top_k():
        index = torch.topk(grads[0].abs(), k, sorted=False).indices.sort().values
        return index, grads[0][index]
    topk_s = median_seconds(sorting_top_k) + median_seconds(lambda: topk.decode(topk_message, out=out))
    rows = []
    for spec in SPECS:
        codec, state = make_codec(spec), CodecState(0)
        codec.encode(grads[1], state, "x")  # a residual to start from
        encode, decode, kept, roof = [], [], [], []
        for i in range(WARMUP + REPEATS):  # in turns: two add passes, two messages; the second of each timed
            add()
            t_add = time.perf_counter()
            add()
            t0 = time.perf_counter()
            roof.append(t0 - t_add)
            message = codec.encode(grads[0], state, "x")
            codec.decode(message, None, "x", out=out)
            t0 = time.perf_counter()
            message = codec.encode(grads[1], state, "x")
            t1 = time.perf_counter()
            codec.decode(message, None, "x", out=out)
            t2 = time.perf_counter()
            encode.append(t1 - t0)
            decode.append(t2 - t1)
            kept.append(state.last.kept / n)
        encode, decode, kept, roof = encode[WARMUP:], decode[WARMUP:], kept[WARMUP:], roof[WARMUP:]
        encode, decode, roof = statistics.median(encode), statistics.median(decode), statistics.median(roof)
        size, payload = len(message), wire.measure(message)[0]
        target_density = 1 - codec.ratio
        density = sum(kept) / len(kept)
        rows.append({
            "codec": spec, "values": n, "bytes": size, "payload": payload, "encode_s": encode, "decode_s": decode,
            "add_pass_s": roof, "fraction_of_roofline": roof / (encode + decode),
            "topk_1pct_s": topk_s, "speedup_vs_topk": topk_s / (encode + decode),
            "density": density, "density_error": abs(density - target_density) / target_density,
            "target": TARGETS.get(spec),
            "timing": (f"the median of {REPEATS} rounds after {WARMUP} warm-up rounds, in each round two add passes "
                       f"and two messages, the second of each timed"),
        })
    return rows
