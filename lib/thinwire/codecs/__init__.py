"""Codecs: tensor -> message bytes -> tensor. Pure tensor code; no torch.distributed here."""

from .jit_cache import keyed_cache

with keyed_cache():  # the compiled kernels: import them before anything else
    from . import bin_quantize, bitpack, extrema  # noqa: F401

from .adaptive_quantize import BinQuantize, OlandRaj
from .base import Codec
from .chain import Chain
from .errors import CorruptMessageError
from .error_feedback import ErrorFeedback
from .graddrop import GradDrop
from .identity import Float16, Float32
from .payload import Payload
from .quantize import Quantize
from .registry import CODECS, make_codec, register
from .state import CodecState
from .state_book import StateBook, pair_seed
from .topk import TopK

__all__ = [
    "BinQuantize", "OlandRaj", "Codec", "Chain", "GradDrop", "CorruptMessageError", "ErrorFeedback", "Float16", "Float32", "Payload",
    "Quantize", "CODECS", "make_codec", "register", "CodecState", "StateBook", "pair_seed", "TopK",
]
