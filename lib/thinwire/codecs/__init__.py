"""Codecs: tensor -> message bytes -> tensor. Pure tensor code; no torch.distributed here.

    base, registry, state, state_book, stats, payload, errors   the codec interface and its state
    wire/       the message layout and checksum
    dense/      fp32, fp16
    sparsify/   top-k, gradient dropping (threshold, drop pass, offsets, 1-2 bit levels), key caching (Slim-DP)
    quantize/   min-max quantizer, Oland & Raj's bin quantizer (fixed or per-message bits), QSGD
    entropy/    Huffman code and stream, raw and ANS symbol coders
    kernels/    compiled kernels (bit packing, min/max) and their cache; for a GPU tensor, torch
                operations on its device that write the same bytes (device.py, torch_pack, torch_uniform),
                and Triton kernels (triton_crc, triton_uniform)
    compose/    chains and error feedback
"""

from .kernels.jit_cache import keyed_cache

with keyed_cache():  # the compiled kernels: import them before anything else
    from .kernels import bitpack, drop, elias, extrema, gaps, half, order, qsgd, rows, sample, scatter, select  # noqa: F401
    from .quantize import bin_quantize  # noqa: F401
    from .entropy import huffman_stream, rans  # noqa: F401
    from .sparsify import drop_quantize  # noqa: F401

from .quantize.binquant import BinQuantize
from .quantize.qsgd import QSGD
from .base import Codec
from .compose.chain import Chain
from .compose.sized import Sized
from .errors import CorruptMessageError, DeviceChecksumError
from .compose.error_feedback import ErrorFeedback
from .sparsify.graddrop import GradDrop
from .dense.bf16 import BFloat16
from .dense.fp16 import Float16
from .dense.fp32 import Float32
from .payload import Payload
from .quantize.minmax import Quantize
from .registry import CODECS, make_codec, register
from .state import CodecState
from .state_book import StateBook
from .sparsify.key_cache import KeyCache
from .sparsify.topk import TopK

__all__ = [
    "BFloat16", "BinQuantize", "Codec", "Chain", "Sized", "GradDrop", "CorruptMessageError", "DeviceChecksumError", "ErrorFeedback", "Float16", "Float32", "Payload",
    "QSGD", "KeyCache", "Quantize", "CODECS", "make_codec", "register", "CodecState", "StateBook", "TopK",
]
