"""Weight initialisation by name (``RunConfig.init``), for the initialisation ablations.

- ``default``: torch's own (Linear and Conv: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights
  and biases, via Kaiming-uniform with a = sqrt(5));
- ``normal(std=s)``: every Linear/Conv weight from N(0, s^2), biases zero;
- ``uniform(a=r)``: every Linear/Conv weight from U(-r, r), biases zero;
- ``layers(std=(...), bias=(...))``: one entry per Linear/Conv layer in the model's order,
  its weight from a normal of that std truncated at two std (TensorFlow's
  ``truncated_normal_initializer``), std 0 meaning 1/fan_in, its bias the constant given.
  MQGrad's code initialises its CNN so (``papers/mqgrad/runs.py``: ``CODE_INIT``).

Oland & Raj (2015) do not say how they initialise; a uniform start gives a weight
histogram of the largest entropy, and the weights of always-blank MNIST pixels keep it.
Draws come from torch's global generator inside ``build_model``'s seeded fork.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..spec_syntax import call_parts, parse

INITS = {"default": (), "normal": ("std",), "uniform": ("a",), "layers": ("std", "bias")}


def check_init(spec) -> str:
    """The canonical form of an init spec (``normal(std=0.01)``); ``ValueError`` names a bad one."""
    name, args, values = call_parts(parse(spec, "init"), spec, "init", INITS)
    wanted = INITS[name]
    if args or set(values) != set(wanted):
        raise ValueError(f"init={spec!r} is not allowed: {name} takes exactly {list(wanted) or 'no arguments'}"
                         + (f", e.g. {name}({wanted[0]}=0.01)" if wanted else ""))
    if name == "layers":
        return _check_layers(spec, values)
    for key, value in values.items():
        if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                and value > 0):
            raise ValueError(f"init={spec!r} is not allowed: {key} must be a finite number > 0, got {value!r}")
    return name if not wanted else f"{name}({', '.join(f'{k}={float(values[k])!r}' for k in wanted)})"


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_layers(spec, values) -> str:
    std, bias = values["std"], values["bias"]
    if not (isinstance(std, tuple) and isinstance(bias, tuple) and std and len(std) == len(bias)
            and all(_finite(v) and v >= 0 for v in std) and all(_finite(v) for v in bias)):
        raise ValueError(f"init={spec!r} is not allowed: layers takes std=(...) and bias=(...), tuples of one "
                         "finite number per Linear/Conv layer (std >= 0, 0 meaning 1/fan_in), of equal length")
    return f"layers(std={tuple(float(v) for v in std)!r}, bias={tuple(float(v) for v in bias)!r})"


def _truncated_normal_(weight: torch.Tensor, std: float) -> None:
    """N(0, std^2) cut at two std, redrawing what falls outside (TensorFlow's rule)."""
    nn.init.trunc_normal_(weight, 0.0, std, -2 * std, 2 * std)


def apply_init(model: nn.Module, spec: str) -> nn.Module:
    """Re-initialise ``model``'s Linear and Conv layers in place as ``spec`` says."""
    name, _, values = call_parts(parse(spec, "init"), spec, "init", INITS)
    if name == "default":
        return model
    if name == "layers":
        layers = [m for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv2d))]
        if len(layers) != len(values["std"]):
            raise ValueError(f"init={spec!r} is not allowed for this model: it has {len(layers)} Linear/Conv layers, "
                             f"the spec gives {len(values['std'])}")
        with torch.no_grad():
            for layer, std, bias in zip(layers, values["std"], values["bias"]):
                _truncated_normal_(layer.weight, float(std) or 1.0 / layer.weight[0].numel())
                if layer.bias is not None:
                    layer.bias.fill_(float(bias))
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
