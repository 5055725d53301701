"""Optimizers by name, applied by whichever agent owns the parameters."""

from __future__ import annotations

from typing import Callable

import torch

OPTIMIZERS: dict[str, Callable] = {
    "sgd": lambda params, lr, momentum: torch.optim.SGD(params, lr=lr, momentum=momentum),
    "adagrad": lambda params, lr, momentum: torch.optim.Adagrad(params, lr=lr),
}


def make_optimizer(name: str, params: list[torch.Tensor], lr: float, momentum: float = 0.0):
    if name not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {sorted(OPTIMIZERS)}, got {name!r}")
    return OPTIMIZERS[name](params, lr, momentum)
