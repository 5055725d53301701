"""Codecs: tensor -> message bytes -> tensor. Pure tensor code; no torch.distributed here.

    base, registry, state, state_book, stats   the codec interface and its state
    dense/      fp32, fp16
    sparsify/   top-k, gradient dropping (threshold, draws; its drop pass, offsets and levels are the
                engine's), key caching (Slim-DP)
    quantize/   min-max quantizer, Oland & Raj's bin quantizer (fixed or per-message bits), QSGD
    entropy/    raw, Huffman and ANS symbol coders (their kernels: the engine's)
    compose/    chains and error feedback

The bytes themselves (message layout, checksum, kernels on the host and on a GPU) are the
engine's (``thinwire.engine``), which every codec reaches through its public names.
"""

from ..engine import CorruptMessageError, DeviceChecksumError, Payload

from .quantize.binquant import BinQuantize
from .quantize.qsgd import QSGD
from .base import Codec
from .compose.chain import Chain
from .compose.sized import Sized
from .compose.error_feedback import ErrorFeedback
from .sparsify.graddrop import GradDrop
from .dense.bf16 import BFloat16
from .dense.fp16 import Float16
from .dense.fp32 import Float32
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
