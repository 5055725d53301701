"""Every Triton codec kernel compiled for an H100 (sm_90a) on this machine, without a GPU
(``benchmarks/kernel_registers.py``): none spills to local memory, and every one but the
CRC's lookup trees leaves room for several programs per multiprocessor; the streaming ones
read or write four float32 values in one access."""

import json
import sys
from pathlib import Path

import pytest

from thinwire.engine.kernels import triton_crc

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import kernel_registers  # noqa: E402


@pytest.mark.skipif(not triton_crc.AVAILABLE or kernel_registers.tools() is None,
                    reason="triton (with its CUDA tools) is in requirements.lock; absent only outside make setup")
def test_no_codec_kernel_spills_and_the_streaming_ones_stay_small():
    rows = kernel_registers.report("sm_90a")
    assert len(rows) == len(list(kernel_registers._kernels())) > 20
    for r in rows:
        assert r["local_bytes"] == 0, r
        heavy = kernel_registers.TREES | kernel_registers.UNROLLED
        assert r["kernel"] in heavy or r["registers"] <= kernel_registers.REGISTERS, r
        assert not r["kernel"].startswith(kernel_registers.FLOAT64_EXACT) or r["float64_fma"] == 0, r
        assert r["instructions"] > r["conversions"] + r["float64_ops"], r
    for r in rows:  # four float32 values in one access, as launched on aligned tensors
        streams = r["kernel"].startswith(kernel_registers.STREAMING) and not r["kernel"].endswith("unaligned")
        assert not streams or r["loads"][16] + r["stores"][16] > 0, r
    unaligned = next(r for r in rows if r["kernel"] == "triton_drop count, unaligned")
    assert unaligned["loads"][16] == unaligned["stores"][16] == 0, unaligned  # chunks at any value: one at a time
    kept = json.loads(kernel_registers.RESULTS.read_text())  # the README's table: these kernels as they are now
    assert kept["arch"] == "sm_90a" and kept["rows"] == kernel_registers.kept(rows), "run make bench (or " \
        "python benchmarks/kernel_registers.py --json=benchmarks/kernel_registers.json): the kept table is stale"
    qsgd = next(r for r in rows if r["kernel"] == "triton_qsgd quantize 8")  # the L2 norm and the level in float64
    assert qsgd["float64_ops"] > 0 and qsgd["conversions"] > 0, qsgd


def test_the_machine_code_is_counted_by_opcode():
    sass = """
        Function : _quantize
        /*0000*/                   LDC R1, c[0x0][0x28] ;                     /* 0x00000a00ff017b82 */
                                                                              /* 0x000fe40000000800 */
        /*0010*/                   S2R R0, SR_TID.X ;                         /* 0x0000000000007919 */
        /*0020*/              @!P0 F2F.F64.F32 R4, R2 ;                       /* 0x0000000200048310 */
        /*0030*/               @P1 F2F.F32.F64 R2, R4 ;                       /* 0x0000000400028310 */
        /*0040*/                   BRA 0x40;                                  /* 0xfffffffc00fc7947 */
"""
    assert kernel_registers.opcodes(sass) == {"LDC": 1, "S2R": 1, "F2F": 2, "BRA": 1}
