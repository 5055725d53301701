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

import importlib as _importlib
import pkgutil as _pkgutil

from ..engine import CorruptMessageError, DeviceChecksumError, Payload
from .base import Codec
from .registry import CODECS, make_codec, register

for _module in _pkgutil.walk_packages(__path__, f"{__name__}."):  # every codec registers itself (``@register``)
    _importlib.import_module(_module.name)

from .compose.chain import Chain  # noqa: E402  (the names users import; the registry has them all)
from .compose.error_feedback import ErrorFeedback  # noqa: E402
from .compose.sized import Sized  # noqa: E402
from .dense.bf16 import BFloat16  # noqa: E402
from .dense.fp16 import Float16  # noqa: E402
from .dense.fp32 import Float32  # noqa: E402
from .quantize.binquant import BinQuantize  # noqa: E402
from .quantize.minmax import Quantize  # noqa: E402
from .quantize.qsgd import QSGD  # noqa: E402
from .sparsify.graddrop import GradDrop  # noqa: E402
from .sparsify.key_cache import KeyCache  # noqa: E402
from .sparsify.topk import TopK  # noqa: E402
from .state import CodecState  # noqa: E402
from .state_book import StateBook  # noqa: E402

__all__ = [
    "BFloat16", "BinQuantize", "Codec", "Chain", "Sized", "GradDrop", "CorruptMessageError", "DeviceChecksumError", "ErrorFeedback", "Float16", "Float32", "Payload",
    "QSGD", "KeyCache", "Quantize", "CODECS", "make_codec", "register", "CodecState", "StateBook", "TopK",
]
