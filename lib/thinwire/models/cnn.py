"""Convolutional classifiers for the next papers: conv -> ReLU (-> channel dropout) ->
max-pool blocks with local response normalization where a paper puts it, then fully
connected layers with dropout.

One parameterized builder covers the papers' networks (``architectures.py`` names them):
- ``channels`` per conv block, square ``kernel``, ``padding="same"`` (output as large as
  the input) or ``"valid"`` (no padding);
- ``pool = (size, stride)`` max-pooling after each block, with ``pool_padding`` (TF's SAME
  pooling of 3x3 / 2 on an even size is PyTorch's padding 1);
- ``lrn = (size, alpha, beta, k)`` as ``torch.nn.LocalResponseNorm`` (which divides alpha
  by size, unlike TF's ``lrn``), placed per block by ``lrn_at``: ``"pool"`` after the
  pooling, ``"conv"`` between the ReLU and the pooling, ``"none"``;
- ``conv_dropout``: per block, the probability of dropping whole channels after the ReLU
  (``nn.Dropout2d``'s rule), from the agent's own generator;
- ``hidden`` fully connected widths, each followed by ReLU and ``dropout``.
Max-pooling and ReLU commute (both monotone), so conv -> pool -> ReLU is this network too.
``CNNSpec`` is its text form, ``cnn(...)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch import nn

from ..validation import check, float_in, int_in, one_of
from .dropout import SeededDropout
from .spec import ModelSpec, ints, per_block

PADDINGS = ("same", "valid")
LRN_AT = ("pool", "conv", "none")
DEFAULT_LRN = (5, 1e-4, 0.75, 2.0)


def _pooled(size: int, pool: tuple[int, int], padding: int) -> int:
    return (size + 2 * padding - pool[0]) // pool[1] + 1


class CNN(nn.Module):
    def __init__(self, image_shape: tuple[int, int, int], num_classes: int = 10, channels: tuple[int, ...] = (32, 64),
                 kernel: int = 5, hidden: tuple[int, ...] = (512,), dropout: float = 0.0, lrn: bool | tuple = False,
                 padding: str = "same", pool: tuple[int, int] = (2, 2), pool_padding: int = 0,
                 lrn_at: tuple[str, ...] | None = None, conv_dropout: tuple[float, ...] | None = None):
        super().__init__()
        if padding not in PADDINGS:
            raise ValueError(f"padding={padding!r} is not allowed: padding must be one of {list(PADDINGS)}")
        lrn_params = (DEFAULT_LRN if lrn is True else tuple(lrn)) if lrn else None
        lrn_at = tuple(lrn_at or _lrn_places(lrn_params, len(channels)))
        conv_dropout = tuple(conv_dropout or [0.0] * len(channels))
        for name, values in (("lrn_at", lrn_at), ("conv_dropout", conv_dropout)):
            if len(values) != len(channels):
                raise ValueError(f"{name}={values!r} is not allowed: it needs one entry per conv block ({len(channels)})")
        if any(a not in LRN_AT for a in lrn_at) or (lrn_params is None and any(a != "none" for a in lrn_at)):
            raise ValueError(f"lrn_at={lrn_at!r} is not allowed: entries must be in {list(LRN_AT)}, and not "
                             "'none' only when lrn is set")
        c, h, w = image_shape
        layers: list[nn.Module] = []
        for out, at, p in zip(channels, lrn_at, conv_dropout):
            layers += [nn.Conv2d(c, out, kernel, padding=kernel // 2 if padding == "same" else 0), nn.ReLU()]
            if padding == "valid":
                h, w = h - kernel + 1, w - kernel + 1
            if p:
                layers.append(SeededDropout(p, channels=True))
            if at == "conv":
                layers.append(nn.LocalResponseNorm(*lrn_params))
            layers.append(nn.MaxPool2d(pool[0], pool[1], padding=pool_padding))
            if at == "pool":
                layers.append(nn.LocalResponseNorm(*lrn_params))
            c, h, w = out, _pooled(h, pool, pool_padding), _pooled(w, pool, pool_padding)
            if h < 1 or w < 1:
                raise ValueError(f"channels={channels!r} is not allowed: {len(channels)} conv and pooling steps "
                                 f"shrink a {image_shape[1]}x{image_shape[2]} image below 1x1")
        layers.append(nn.Flatten())
        width = c * h * w
        for size in hidden:
            layers += [nn.Linear(width, size), nn.ReLU(), SeededDropout(dropout)]
            width = size
        layers.append(nn.Linear(width, num_classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x, masks: dict | None = None):
        if masks:
            modules = dict(self.net.named_modules())
            for name, mask in masks.items():
                modules[name.removeprefix("net.")].mask = mask
        try:
            return self.net(x)
        finally:
            if masks:
                for name in masks:
                    modules[name.removeprefix("net.")].mask = None


@dataclass(frozen=True)
class CNNSpec(ModelSpec):
    """``cnn(channels=(32, 64), kernel=5, padding='same', pool=(2, 2), pool_padding=0,
    lrn=None, lrn_at=None, conv_dropout=None, hidden=(512,), dropout=0.0)``: the options of
    ``CNN`` (module docstring). ``lrn=True`` is ``DEFAULT_LRN``; ``lrn_at`` and
    ``conv_dropout`` take one entry per conv block."""
    name: ClassVar[str] = "cnn"
    channels: tuple[int, ...] = (32, 64)
    kernel: int = 5
    padding: str = "same"
    pool: tuple[int, int] = (2, 2)
    pool_padding: int = 0
    lrn: tuple | None = None
    lrn_at: tuple[str, ...] | None = None
    conv_dropout: tuple[float, ...] | None = None
    hidden: tuple[int, ...] = (512,)
    dropout: float = 0.0

    def check(self) -> None:
        blocks = len(self.channels) if isinstance(self.channels, tuple) else 0
        check("channels", self.channels, ints(self.channels), "a non-empty tuple of positive ints, e.g. (32, 64)")
        int_in("kernel", self.kernel, 1, 15)
        one_of("padding", self.padding, PADDINGS)
        check("pool", self.pool, ints(self.pool) and len(self.pool) == 2, "(size, stride), two positive ints")
        int_in("pool_padding", self.pool_padding, 0, self.pool[0] // 2)
        lrn = DEFAULT_LRN if self.lrn is True else (None if self.lrn is False else self.lrn)
        check("lrn", self.lrn, lrn is None or (
            isinstance(lrn, tuple) and len(lrn) == 4 and isinstance(lrn[0], int) and not isinstance(lrn[0], bool)
            and lrn[0] >= 1 and all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
                                    for v in lrn[1:])), "None, True or (size, alpha, beta, k) with size an int >= 1 "
              "and the others > 0")
        object.__setattr__(self, "lrn", None if lrn is None else (lrn[0], *map(float, lrn[1:])))
        per_block("lrn_at", self.lrn_at, blocks)
        per_block("conv_dropout", self.conv_dropout, blocks)
        if self.lrn_at is not None:
            check("lrn_at", self.lrn_at, all(a in LRN_AT for a in self.lrn_at) and (
                self.lrn is not None or set(self.lrn_at) == {"none"}), f"entries in {list(LRN_AT)}, other than "
                  "'none' only when lrn is set")
            if self.lrn_at == _lrn_places(self.lrn, blocks):
                object.__setattr__(self, "lrn_at", None)
        if self.conv_dropout is not None:
            check("conv_dropout", self.conv_dropout, all(isinstance(p, (int, float)) and not isinstance(p, bool)
                                                         and 0 <= p <= 0.99 for p in self.conv_dropout),
                  "None or a probability in [0, 0.99] per block")
            drop = tuple(float(p) for p in self.conv_dropout)
            object.__setattr__(self, "conv_dropout", None if not any(drop) else drop)
        check("hidden", self.hidden, ints(self.hidden, empty=True), "a tuple of positive ints, e.g. (512,)")
        float_in("dropout", self.dropout, 0.0, 0.99)

    def build(self, image_shape, num_classes: int) -> nn.Module:
        return CNN(tuple(image_shape), num_classes, self.channels, self.kernel, self.hidden, self.dropout,
                   self.lrn or False, self.padding, self.pool, self.pool_padding, self.lrn_at, self.conv_dropout)


def _lrn_places(lrn, blocks: int) -> tuple[str, ...]:
    return ("pool" if lrn else "none",) * blocks
