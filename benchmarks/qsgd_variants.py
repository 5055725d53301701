"""QSGD's two Triton kernels (``kernels/triton_qsgd.py``) timed one at a time on a GPU with
other shapes of program, by ``gpu_bench``'s ``qsgd_variants`` part.

``_quantize`` computes each bucket's norm, its float64 square root and the float64 division
s / norm in every thread of the program that holds the bucket. With 2,048 values (4 buckets
of 512) over 4 warps, each thread repeats 4 square roots and 4 divisions for its 16 values.
Compiled for sm_90a by Triton 3.9 (``kernel_registers.py``: ``triton_qsgd quantize 8``),
8-bit codes with the L2 norm take 67 instructions per value, 7 conversions and 9.6 float64
operations at that shape; one bucket over one warp (the same 16 values per thread) 50.5,
6.25 and 5.3, with 75 registers where 2,048 values' take 79. This part times whether the
fewer instructions pay against smaller programs:

- ``library``: ``VALUES`` values over ``WARPS`` warps per program (one bucket of 512 over
  one warp, since this part's run on an H200 at aa12aef);
- ``2,048 values, 4 warps`` (the library's shape until then) and ``1,024 values, 2 warps``:
  16 values per thread, more buckets per program.

Each variant's norms, codes and decoded values are compared with the library's. QSGD's
round trip in one pass and in two is ``one_passes.py``'s.
"""

from __future__ import annotations

import torch

from thinwire.codecs.kernels import triton_qsgd

SHAPES = (("library", None, None), ("2,048 values, 4 warps", 2048, 4), ("1,024 values, 2 warps", 1024, 2))
SPECS = ((8, 512, False), (4, 512, False), (8, 512, True))  # (bits, bucket, max norm)


def variants(n: int, seconds, device: str, shapes=SHAPES, specs=SPECS) -> list[dict]:
    """For each (bits, bucket, max norm) of ``specs`` and each program shape: the best time
    (``seconds(fn)``: the bench's timer) of ``quantize_packed`` and of ``dequantize_packed``
    over ``n`` normal values, and whether its outputs equal the library's."""
    from thinwire.codecs.kernels import bitpack
    x = torch.randn(n, device=device, generator=torch.Generator(device).manual_seed(3))
    rows = []
    for bits, bucket, use_max in specs:
        norms = torch.empty(-(-n // bucket), dtype=torch.float32, device=device)
        codes = torch.empty(bitpack.packed_bytes(n, bits), dtype=torch.uint8, device=device)
        values = torch.empty_like(x)
        want = None
        for label, per_program, warps in shapes:
            before = triton_qsgd.VALUES, triton_qsgd.WARPS
            if per_program is not None:
                triton_qsgd.VALUES, triton_qsgd.WARPS = per_program, warps
            try:
                quantize_s = seconds(lambda: triton_qsgd.quantize_packed(x, bucket, use_max, bits, 7, norms, codes))
                dequantize_s = seconds(lambda: triton_qsgd.dequantize_packed(codes, bucket, norms, bits, values))
                shape = (triton_qsgd.VALUES, triton_qsgd.WARPS)
            finally:
                triton_qsgd.VALUES, triton_qsgd.WARPS = before
            got = (norms.clone(), codes.clone(), values.clone())
            want = want or got
            rows.append({"variant": label, "values_per_program": shape[0], "warps": shape[1], "bits": bits,
                         "bucket": bucket, "norm": "max" if use_max else "l2", "values": n, "quantize_s": quantize_s,
                         "dequantize_s": dequantize_s,
                         "equal_to_library": all(torch.equal(a, b) for a, b in zip(got, want))})
    return rows
