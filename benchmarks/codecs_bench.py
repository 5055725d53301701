"""Codec encode + decode throughput on 25M float32 values, as a fraction of the roofline.

fraction = (time of one add pass over the same values) / (time of encode + decode).
Both sides reuse their output buffers, as the roofline add does (``out=``): the sender
encodes into the message it sent before (``encode(..., out=)``), the receiver decodes into
one tensor. Each codec's encode, decode and add pass are timed in turns
(``roofline.interleaved``: in each round each is called twice and the second call timed),
so that its ratio's two sides see the same machine: each time is the median over the
rounds after warm-up rounds.
"""

from __future__ import annotations

import numpy as np
import torch

from roofline import add_pass, interleaved, timing
from thinwire.codecs import CodecState, make_codec
from thinwire.engine import wire
from thinwire.engine.kernels import stream
from thinwire.engine.wire.buffers import message_buffer

N = 25_000_000
SPECS = ["fp32", "fp16", "bf16", "quantize(bits=8)", "quantize(bits=4)", "quantize(bits=2)", "quantize(bits=1)",
         "quantize(bits=12)", "topk(ratio=0.01)", "qsgd(bits=8, bucket=512)", "qsgd(bits=4, bucket=512, norm='max')"]
TARGETS = {"fp32": 0.8, "fp16": 0.8, "quantize(bits=8)": 0.6, "topk(ratio=0.01)": 0.25,
           "qsgd(bits=8, bucket=512)": 0.5}


def run(n: int = N) -> list[dict]:
    x = torch.randn(n, generator=torch.Generator().manual_seed(0))
    add = add_pass(n)
    copy_target = torch.empty_like(x)
    src, dst = x.view(torch.uint8).numpy(), copy_target.view(torch.uint8).numpy()
    # fp32's kernels alone, in a row as its round trip runs them: the copy into a message
    # with its CRC, the copy out of it with its CRC (the receiver's check: wire/checked_copy.py)
    message_bytes = np.frombuffer(message_buffer(src.size), np.uint8)

    def fp32_kernels():
        stream.copy(src, message_bytes, checksum=True)
        stream.copy(message_bytes, dst, checksum=True)
    passes = interleaved({"add": add, "copy": lambda: copy_target.copy_(x), "stream": lambda: stream.copy(src, dst),
                          "kernels": fp32_kernels})
    rows = []
    for spec in SPECS:
        codec = make_codec(spec)
        state = CodecState(0)
        message = codec.encode(x, state, "x")
        out = torch.empty_like(x)  # receivers decode into a reused buffer
        t = interleaved({"add": add, "encode": lambda: codec.encode(x, state, "x", out=message),
                         "decode": lambda: codec.decode(message, state, "x", out=out)})
        rows.append({
            "codec": spec, "values": n, "bytes": len(message), "payload": wire.measure(message)[0],
            "encode_s": t["encode"], "decode_s": t["decode"], "add_pass_s": t["add"],
            "fraction_of_roofline": t["add"] / (t["encode"] + t["decode"]), "target": TARGETS.get(spec),
            "passes": passes, "timing": timing(what="rounds"),
        })
    return rows
