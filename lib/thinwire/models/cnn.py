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
"""

from __future__ import annotations

from torch import nn

from .dropout import SeededDropout

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
        lrn_at = tuple(lrn_at or ["pool" if lrn_params else "none"] * len(channels))
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
