"""Codes written, and read, as the message is checksummed (one pass) or in two passes, timed
in one process by ``gpu_bench``'s ``one_passes`` part: QSGD's (``triton_qsgd.ONE_PASS``,
off), Oland & Raj's 8-bit raw bin codes (``binquant.ONE_PASS``, on) and MQGrad's 8-bit row
codes (``column_minmax.ONE_PASS``, on; a matrix of rows of 1,000 values).

Each codec's round trip (encode into a message kept on the device, decode into a reused
``out``, with the words CRC folded) is timed with its switch on and off, alternated round
by round (median of the rounds' best times); the one pass's kernel calls are counted on the
side that takes it, and the two sides' last messages and values are compared.
"""

from __future__ import annotations

import statistics

import torch

from thinwire.codecs.kernels import triton_qsgd, triton_range, triton_rows
from thinwire.codecs.quantize import binquant, column_minmax

SPECS = ("qsgd(bits=8, bucket=512)", "qsgd(bits=4, bucket=512)", "binquant(bits=8)", "colquant(bits=8)")
COLS = 1000  # colquant's rows: a matrix of n / COLS rows
# codec name: (the module whose ONE_PASS switches it, the module of the one pass's kernels, their names)
SWITCHES = {"qsgd": (triton_qsgd, triton_qsgd, ("quantize_crc", "dequantize_crc")),
            "binquant": (binquant, triton_range, ("quantize8_crc", "dequantize8_crc")),
            "colquant": (column_minmax, triton_rows, ("row_packed_crc", "row_values_crc"))}


def passes(n: int, seconds, device: str, specs=SPECS, rounds: int = 3) -> list[dict]:
    """Encode + decode of ``n`` normal values, the message kept on the device, for each of
    ``specs`` with its ``ONE_PASS`` on and off: the median over ``rounds`` of each setting's
    ``seconds(fn)``; how many calls the one pass's kernels took; and whether both sent the
    same last message and decoded the same values."""
    from thinwire.codecs import CodecState, make_codec
    from thinwire.codecs.kernels import triton_crc
    flat = torch.randn(n, device=device, generator=torch.Generator(device).manual_seed(4))
    rows = []
    for spec in specs:
        switch, kernels, names = SWITCHES[make_codec(spec).name]
        x = flat.reshape(-1, COLS) if make_codec(spec).name == "colquant" and n % COLS == 0 else flat
        sides = {on: {"codec": make_codec(spec), "sender": CodecState(0), "out": torch.empty_like(x),
                      "message": torch.empty(0, dtype=torch.uint8, device=device), "seconds": []} for on in (True, False)}
        calls = []

        def round_trip(side: dict) -> None:
            side["message"] = side["codec"].encode(x, side["sender"], "x", out=side["message"])
            side["codec"].decode(side["message"], CodecState(0), "x", out=side["out"])
        before = (switch.ONE_PASS, triton_crc.KERNEL, triton_crc.JOIN, *(getattr(kernels, name) for name in names))
        triton_crc.KERNEL, triton_crc.JOIN = "words", "fold"
        for name, real in zip(names, before[3:]):
            setattr(kernels, name, lambda *a, real=real, name=name, **k: calls.append(name) or real(*a, **k))
        try:
            for _ in range(rounds):
                for on, side in sides.items():
                    switch.ONE_PASS = on
                    side["seconds"].append(seconds(lambda side=side: round_trip(side)))
        finally:
            switch.ONE_PASS, triton_crc.KERNEL, triton_crc.JOIN = before[:3]
            for name, real in zip(names, before[3:]):
                setattr(kernels, name, real)
        rows.append({"codec": spec, "values": n, "rounds": rounds,
                     "one_pass_s": statistics.median(sides[True]["seconds"]),
                     "two_passes_s": statistics.median(sides[False]["seconds"]),
                     "one_pass_calls": len(calls),
                     "same_messages": torch.equal(sides[True]["message"], sides[False]["message"]),
                     "same_values": torch.equal(sides[True]["out"], sides[False]["out"])})
    return rows
