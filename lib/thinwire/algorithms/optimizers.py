"""Optimizers by name, applied by whichever agent owns the parameters."""

from __future__ import annotations

from typing import Callable

import torch

OPTIMIZERS: dict[str, Callable] = {
    "sgd": lambda params, lr, momentum, weight_decay, eps: torch.optim.SGD(
        params, lr=lr, momentum=momentum, weight_decay=weight_decay),
    "adagrad": lambda params, lr, momentum, weight_decay, eps: torch.optim.Adagrad(
        params, lr=lr, weight_decay=weight_decay, eps=eps),
}


def make_optimizer(name: str, params: list[torch.Tensor], lr: float, momentum: float = 0.0,
                   weight_decay: float = 0.0, eps: float = 1e-10):
    if name not in OPTIMIZERS:
        raise ValueError(f"optimizer={name!r} is not allowed: optimizer must be one of {sorted(OPTIMIZERS)}")
    if name == "adagrad" and momentum:
        raise ValueError(f"momentum={momentum!r} is not allowed with optimizer='adagrad': it must be 0")
    return OPTIMIZERS[name](params, lr, momentum, weight_decay, eps)
