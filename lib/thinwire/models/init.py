"""Weight initialisation by name (``RunConfig.init``), for the initialisation ablations.

- ``default``: torch's own (Linear and Conv: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights
  and biases, via Kaiming-uniform with a = sqrt(5));
- ``normal(std=s)``: every Linear/Conv weight from N(0, s^2), biases zero;
- ``uniform(a=r)``: every Linear/Conv weight from U(-r, r), biases zero.

Oland & Raj (2015) do not say how they initialise; a uniform start gives a weight
histogram of the largest entropy, and the weights of always-blank MNIST pixels keep it.
Draws come from torch's global generator inside ``build_model``'s seeded fork.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..spec_syntax import call_parts, parse

INITS = {"default": (), "normal": ("std",), "uniform": ("a",)}


def check_init(spec) -> str:
    """The canonical form of an init spec (``normal(std=0.01)``); ``ValueError`` names a bad one."""
    name, args, values = call_parts(parse(spec, "init"), spec, "init", INITS)
    wanted = INITS[name]
    if args or set(values) != set(wanted):
        raise ValueError(f"init={spec!r} is not allowed: {name} takes exactly {list(wanted) or 'no arguments'}"
                         + (f", e.g. {name}({wanted[0]}=0.01)" if wanted else ""))
    for key, value in values.items():
        if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                and value > 0):
            raise ValueError(f"init={spec!r} is not allowed: {key} must be a finite number > 0, got {value!r}")
    return name if not wanted else f"{name}({', '.join(f'{k}={float(values[k])!r}' for k in wanted)})"


def apply_init(model: nn.Module, spec: str) -> nn.Module:
    """Re-initialise ``model``'s Linear and Conv layers in place as ``spec`` says."""
    name, _, values = call_parts(parse(spec, "init"), spec, "init", INITS)
    if name == "default":
        return model
    with torch.no_grad():
        for layer in model.modules():
            if isinstance(layer, (nn.Linear, nn.Conv2d)):
                if name == "normal":
                    layer.weight.normal_(0.0, float(values["std"]))
                else:
                    layer.weight.uniform_(-float(values["a"]), float(values["a"]))
                if layer.bias is not None:
                    layer.bias.zero_()
    return model
