"""The byte engine: how a codec's tensors become message bytes, fast, on a CPU or a GPU.

Below the codecs and above nothing but ``paths``: the codecs say what to send (a paper's
section in each file); the engine says how the bytes are laid out, checksummed and
computed (README.md in this folder: what it guarantees, its benchmark tables, how to add a
kernel). Code outside this package imports only the names below.

    wire/       the message layout (header, parts, CRC-32C) and its checksum; message tensors
    payload     the parts a codec hands to the wire (``Payload``, ``PartWriter``), read back checked
    framing     a codec's payload framed as a message and opened again (``Codec.encode``/``decode``)
    errors      ``CorruptMessageError``, ``RefusedInputError``, ``DeviceChecksumError``
    kernels/    numba kernels on the host (bit packing, min/max, QSGD levels, gaps, drop passes,
                CRC-32C), torch operations on a GPU tensor's device that write the same bytes,
                Triton kernels, and the compile cache they share (``jit_cache``)

The kernel modules are named here as the engine's primitives; each host module and its
device twin (``qsgd`` / ``torch_qsgd`` / ``triton_qsgd``) write the same bytes, which
``tests/test_device_path.py`` checks.
"""

from .kernels.jit_cache import keyed_cache

with keyed_cache():  # every module that compiles kernels, imported inside it (kernels/jit_cache.py)
    from .kernels import (bitpack, crc, device, dispatch, drop, drop_quantize, drop_survivors, elias, gaps, half,
                          huffman_stream, order, qsgd, rans, rows, sample, scatter, select, stream, team,
                          torch_bins, torch_qsgd, torch_select, triton_drop, triton_qsgd, triton_range, triton_rows,
                          triton_uniform, uniform)
    from .kernels.bin_quantize import (FLOAT32_TINY, bin_centres, bin_codes, bin_pack_crc, bin_unpack_centres,
                                       check_bits, code_dtype, entropy_bits, estimate_entropy, histogram)
    from .kernels.drop_pass import drop_pass
    from .kernels.huffman_code import code_lengths
    from .kernels.offsets import decode_offsets, encode_offsets
    from .kernels.device import on_device, put
    from .kernels.extrema import extrema
    from .kernels.kept import kept
    from .kernels.rows import row_codes, row_values
    from .kernels.sample import sample_outside
    from .kernels.torch_select import kth_smallest
    from .kernels.uniform import float32_numpy
    from . import wire
    from .wire import (checksum, copy_part, deferred, deferred_checks, read_host_part, read_part, settle,
                       tensor_message)
    from .wire.checksum import warm_up as warm_checksum
    from .wire.format import MAX_NUMEL
    from .wire.tensor_message import Unverified

from .errors import CorruptMessageError, DeviceChecksumError, RefusedInputError
from .payload import FLOAT32_MAX, PartWriter, Payload, expect_part, expect_range
from . import framing
from .framing import DECODE_FLOOR, check_finite, check_representable

__all__ = [
    "CorruptMessageError", "DECODE_FLOOR", "DeviceChecksumError", "FLOAT32_MAX", "FLOAT32_TINY", "MAX_NUMEL",
    "PartWriter", "Payload", "RefusedInputError", "Unverified", "bin_centres", "bin_codes", "bin_pack_crc",
    "bin_unpack_centres", "bitpack", "check_bits", "check_finite", "check_representable", "checksum",
    "code_dtype", "code_lengths", "copy_part", "crc", "decode_offsets", "deferred",
    "deferred_checks", "device", "dispatch", "drop", "drop_pass", "drop_quantize", "drop_survivors", "elias",
    "encode_offsets", "entropy_bits", "estimate_entropy", "expect_part", "expect_range", "extrema",
    "float32_numpy", "framing", "gaps", "half", "histogram", "huffman_stream", "kept",
    "kth_smallest", "on_device", "order", "put", "qsgd", "rans",
    "read_host_part", "read_part", "row_codes", "row_values", "rows", "sample", "sample_outside", "scatter",
    "select", "settle", "stream", "team", "tensor_message", "torch_bins", "torch_qsgd",
    "torch_select", "triton_drop", "triton_qsgd", "triton_range", "triton_rows", "triton_uniform", "uniform",
    "warm_checksum", "wire",
]
