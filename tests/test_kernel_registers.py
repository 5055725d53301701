"""Every Triton codec kernel compiled for an H100 (sm_90a) on this machine, without a GPU
(``benchmarks/kernel_registers.py``): none spills to local memory, and every one but the
CRC's lookup trees leaves room for several programs per multiprocessor."""

import sys
from pathlib import Path

import pytest

from thinwire.codecs.kernels import triton_crc

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import kernel_registers  # noqa: E402


@pytest.mark.skipif(not triton_crc.AVAILABLE or kernel_registers.tools() is None,
                    reason="triton (with its CUDA tools) is in requirements.lock; absent only outside make setup")
def test_no_codec_kernel_spills_and_the_streaming_ones_stay_small():
    rows = kernel_registers.report("sm_90a")
    assert len(rows) == len(list(kernel_registers._kernels())) > 20
    for r in rows:
        assert r["local_bytes"] == 0, r
        assert r["kernel"] in kernel_registers.TREES or r["registers"] <= kernel_registers.REGISTERS, r
        assert not r["kernel"].startswith(kernel_registers.FLOAT64_EXACT) or r["float64_fma"] == 0, r
