"""Residual networks of BasicBlocks for 32x32 images (He et al. 2016, in the CIFAR layout
that EventGraD's CIFAR-10 code builds: ``dcifar10/common/resnet.hpp`` of
soumyadipghosh/eventgrad), and their spec ``resnet(...)``.

- stem: conv 3x3 / 1 -> ``width`` channels, batch norm, ReLU; no max-pool;
- four stages of ``blocks[s]`` BasicBlocks with width, 2x, 4x, 8x channels; the first
  block of stages 2-4 has stride 2 and a 1x1 conv + batch norm shortcut;
- a BasicBlock: conv 3x3 -> BN -> ReLU -> conv 3x3 -> BN, plus the shortcut, then ReLU;
- global average pooling (the code's ``avg_pool2d(out, 4)`` on a 4x4 map), fc -> classes.
Convolutions carry no bias. Parameters are registered in the code's order (stem conv, stem
BN, then per block conv1, bn1, conv2, bn2, shortcut), so tensor i is the same tensor in
both.

The standard ResNet-18 is ``resnet(blocks=(2, 2, 2, 2))``: 62 parameter tensors,
11,173,962 parameters on 10 classes. The official code calls ``make_layer`` with 2 but
builds the first block and then 2 more, so its "ResNet-18" is ``resnet(blocks=(3, 3, 3,
3))``: 86 tensors, 17,444,682 parameters (``eventgrad_resnet18`` in
``architectures.py``). Batch-norm running statistics are buffers, never parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch import nn

from ..validation import check, int_in
from .spec import ModelSpec, ints


def _conv(c_in: int, c_out: int, kernel: int, stride: int) -> nn.Conv2d:
    return nn.Conv2d(c_in, c_out, kernel, stride=stride, padding=kernel // 2, bias=False)


class BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int = 1):
        super().__init__()
        self.conv1, self.bn1 = _conv(c_in, c_out, 3, stride), nn.BatchNorm2d(c_out)
        self.conv2, self.bn2 = _conv(c_out, c_out, 3, 1), nn.BatchNorm2d(c_out)
        self.shortcut = (nn.Sequential(_conv(c_in, c_out, 1, stride), nn.BatchNorm2d(c_out))
                         if stride != 1 or c_in != c_out else nn.Identity())

    def forward(self, x):
        out = self.bn1(self.conv1(x)).relu()
        return (self.bn2(self.conv2(out)) + self.shortcut(x)).relu()


class ResNet(nn.Module):
    def __init__(self, in_channels: int, blocks: tuple[int, ...], width: int, num_classes: int):
        super().__init__()
        self.conv, self.bn = _conv(in_channels, width, 3, 1), nn.BatchNorm2d(width)
        stages, c = [], width
        for s, count in enumerate(blocks):
            out = width * 2 ** s
            stages.append(nn.Sequential(*[BasicBlock(c if b == 0 else out, out, 2 if s and b == 0 else 1)
                                          for b in range(count)]))
            c = out
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(c, num_classes)

    def forward(self, x):
        out = self.stages(self.bn(self.conv(x)).relu())
        return self.fc(self.pool(out).flatten(1))


@dataclass(frozen=True)
class ResNetSpec(ModelSpec):
    """``resnet(blocks=(2, 2, 2, 2), width=64)``: BasicBlocks per stage (1 to 4 stages) and
    the stem's channels (each stage doubles them)."""
    name: ClassVar[str] = "resnet"
    blocks: tuple[int, ...] = (2, 2, 2, 2)
    width: int = 64

    def check(self) -> None:
        check("blocks", self.blocks, ints(self.blocks) and len(self.blocks) <= 4,
              "a tuple of 1 to 4 positive ints (BasicBlocks per stage), e.g. (2, 2, 2, 2)")
        int_in("width", self.width, 1, 1024)

    def build(self, image_shape, num_classes: int) -> nn.Module:
        return ResNet(image_shape[0], self.blocks, self.width, num_classes)
