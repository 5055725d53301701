"""The papers' own networks, by name (``RunConfig(model="eventgrad_mnist_cnn")``): specs
without options, each a fixed ``cnn(...)``.

- ``eventgrad_mnist_cnn``: EventGraD's MNIST network (Ghosh et al. 2021, official code
  ``dmnist``): conv 1->10 k3 valid, max-pool 2, ReLU; conv 10->20 k3 valid, channel
  dropout 0.5, max-pool 2, ReLU; fc 500->50, ReLU, dropout 0.5; fc 50->10. 27,480
  parameters in 8 tensors, as the official ``dmnist/event/event.cpp`` builds it.
- ``mqgrad_cnn``: MQGrad's CNN (Cui et al. 2018, Sec. 4.1: the TensorFlow CIFAR-10
  tutorial network with the paper's wider fully connected layers) on 28x28 inputs: conv
  5x5 -> 64, ReLU, max-pool 3x3 stride 2 (TF SAME: padding 1), LRN; conv 5x5 -> 64, ReLU,
  LRN, max-pool 3x3 / 2; fc 3136 (7 x 7 x 64) -> 2304 -> 3840 -> classes: 16,224,586
  parameters on CIFAR-10, 99.1% of them in the two large fully connected weights. TF's lrn(depth_radius=4, bias=1, alpha=0.001/9, beta=0.75) is
  ``LocalResponseNorm(size=9, alpha=0.001, beta=0.75, k=1)`` (torch divides alpha by size).
  MQGrad applies L2 weight decay 0.00175 to the two large fully connected weights only:
  ``MQGRAD_DECAYED`` names them for ``make_optimizer(..., decay_only=...)``.
- ``eventgrad_resnet18``: the "ResNet-18" of EventGraD's CIFAR-10 code
  (``dcifar10/common/resnet.hpp``), which builds 3 BasicBlocks per stage: 86 parameter
  tensors, 17,444,682 parameters (``resnet.py``). The standard one is
  ``resnet(blocks=(2, 2, 2, 2))``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch import nn

from .cnn import CNNSpec
from .resnet import ResNetSpec
from .spec import ModelSpec


@dataclass(frozen=True)
class Named(ModelSpec):
    """A paper's network: no options; ``network`` is the spec it stands for."""
    network: ClassVar[ModelSpec]

    def build(self, image_shape, num_classes: int) -> nn.Module:
        return self.network.build(image_shape, num_classes)


@dataclass(frozen=True)
class EventGradMnistCNN(Named):
    name: ClassVar[str] = "eventgrad_mnist_cnn"
    network: ClassVar[ModelSpec] = CNNSpec(channels=(10, 20), kernel=3, padding="valid", conv_dropout=(0.0, 0.5),
                                           hidden=(50,), dropout=0.5)


@dataclass(frozen=True)
class MQGradCNN(Named):
    name: ClassVar[str] = "mqgrad_cnn"
    network: ClassVar[ModelSpec] = CNNSpec(channels=(64, 64), kernel=5, pool=(3, 2), pool_padding=1,
                                           lrn=(9, 0.001, 0.75, 1.0), lrn_at=("pool", "conv"), hidden=(2304, 3840))


@dataclass(frozen=True)
class EventGradResNet18(Named):
    name: ClassVar[str] = "eventgrad_resnet18"
    network: ClassVar[ModelSpec] = ResNetSpec(blocks=(3, 3, 3, 3))


MQGRAD_DECAYED = ("net.9.weight", "net.12.weight")  # fc 3136->2304 and 2304->3840
ARCHITECTURES = (EventGradMnistCNN, MQGradCNN, EventGradResNet18)
