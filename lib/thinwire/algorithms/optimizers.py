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


def make_optimizer(name: str, params, lr: float, momentum: float = 0.0, weight_decay: float = 0.0,
                   eps: float = 1e-10, decay_only=None):
    """``params``: a list of tensors, or a dict name -> tensor. ``decay_only`` (names, with a
    dict): ``weight_decay`` applies to those parameters only, the others take none (MQGrad's
    L2 on its large fully connected weights)."""
    if decay_only is not None:
        if not isinstance(params, dict):
            raise ValueError("decay_only needs the parameters by name (a dict name -> tensor)")
        unknown = sorted(set(decay_only) - set(params))
        if unknown:
            raise ValueError(f"decay_only={list(decay_only)!r} is not allowed: {unknown} are not parameters; "
                             f"parameters: {sorted(params)}")
        params = [{"params": [p for n, p in params.items() if n in decay_only], "weight_decay": weight_decay},
                  {"params": [p for n, p in params.items() if n not in decay_only], "weight_decay": 0.0}]
    elif isinstance(params, dict):
        params = list(params.values())
    if name not in OPTIMIZERS:
        raise ValueError(f"optimizer={name!r} is not allowed: optimizer must be one of {sorted(OPTIMIZERS)}")
    if name == "adagrad" and momentum:
        raise ValueError(f"momentum={momentum!r} is not allowed with optimizer='adagrad': it must be 0")
    return OPTIMIZERS[name](params, lr, momentum, weight_decay, eps)
