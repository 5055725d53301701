"""K replicas of an ``MLP`` as batched matrix products with persistent gradient buffers.

A faster path than ``vmap`` for the papers' fully connected networks: each Linear is one
batched product forward, and its backward writes the K weight gradients into a buffer
kept from step to step (``bmm(..., out=)``) instead of allocating tens of MB per step,
whose first touch costs page faults. Weights keep ``nn.Linear``'s (K, out, in) layout:
with K copies the weights no longer fit in cache, and MKL's small-batch products stream
them from memory faster in this layout (forward ``h @ W^T`` and ``g @ W``) than in the
transposed one.

``per_replica``: every product runs one replica at a time. MKL rounds a batch of K
products differently from a batch of one (measured: up to 8e-5 in a layer's outputs,
1.5e-7 in the gradients), and a torch.distributed rank holds one replica; computed replica
by replica, K simulated workers give bit for bit what K ranks give. Every lossy codec
needs this (a quantizer's floor, top-k's choice among the near ties of AdaGrad's first
updates turn a last-bit difference into another message), so it is ``Replicas``' default.
"""

from __future__ import annotations

import torch
from torch import nn

from .mlp import MLP


class _BatchedLinear(torch.autograd.Function):
    """One Linear for K replicas. With ``lr`` set, backward applies plain SGD to the
    weight and bias in place (after using the old weight for the input gradient) and
    returns no gradient for them: a local training step that never writes K gradient
    tensors. ``anchor`` (a 0-d tensor that requires grad) makes autograd record the
    first layer, whose inputs need no gradient."""

    @staticmethod
    def forward(ctx, h, weight, bias, grad_buffer, lr, anchor, per_replica):
        """h (K, B, in), weight (K, out, in), bias (K, out) -> (K, B, out)."""
        ctx.save_for_backward(h, weight)
        ctx.grad_buffer, ctx.lr, ctx.bias, ctx.per_replica = grad_buffer, lr, bias, per_replica
        if not per_replica:
            return torch.baddbmm(bias.unsqueeze(1), h, weight.transpose(1, 2))
        out = h.new_empty(h.shape[0], h.shape[1], weight.shape[1])
        for k in range(h.shape[0]):
            torch.baddbmm(bias[k:k + 1].unsqueeze(1), h[k:k + 1], weight[k:k + 1].transpose(1, 2), out=out[k:k + 1])
        return out

    @staticmethod
    def backward(ctx, g):
        h, weight = ctx.saved_tensors
        g = g.contiguous()
        each = range(h.shape[0]) if ctx.per_replica else [slice(None)]
        one = (lambda k: slice(k, k + 1)) if ctx.per_replica else (lambda k: k)
        grad_h = None
        if ctx.needs_input_grad[0]:
            grad_h = h.new_empty(h.shape)
            for k in each:
                torch.bmm(g[one(k)], weight[one(k)], out=grad_h[one(k)])
        if ctx.lr is not None:
            for k in each:
                weight[one(k)].baddbmm_(g[one(k)].transpose(1, 2), h[one(k)], alpha=-ctx.lr)
            ctx.bias.sub_(g.sum(1), alpha=ctx.lr)
            return grad_h, None, None, None, None, None, None
        for k in each:
            torch.bmm(g[one(k)].transpose(1, 2), h[one(k)], out=ctx.grad_buffer[one(k)])
        return grad_h, ctx.grad_buffer, g.sum(1), None, None, None, None


class BatchedMLP:
    """Forward and backward of K replicas of ``mlp`` on (K, B, ...) inputs."""

    def __init__(self, mlp: MLP, params: dict[str, torch.Tensor], per_replica: bool = False):
        self.per_replica = per_replica
        self.layers = []  # (kind, name prefix or activation module)
        for index, layer in enumerate(mlp.net):
            prefix = f"net.{index}"
            if isinstance(layer, nn.Linear):
                self.layers.append(("linear", prefix))
            elif isinstance(layer, nn.LayerNorm):
                self.layers.append(("layer_norm", (prefix, layer.eps)))
            elif isinstance(layer, nn.Flatten):
                continue
            else:
                self.layers.append(("activation", layer))
        device = next(iter(params.values())).device
        self.buffers = {f"{p}.weight": torch.empty(params[f"{p}.weight"].shape, device=device)
                        for kind, p in self.layers if kind == "linear"}
        self.anchor = torch.zeros((), requires_grad=True, device=device)
        self.fused_names = [f"{p}.{w}" for kind, p in self.layers if kind == "linear" for w in ("weight", "bias")]

    def logits(self, params: dict[str, torch.Tensor], x: torch.Tensor, lr: float | None = None) -> torch.Tensor:
        """Forward pass. With ``lr``, the backward of the result updates the Linear
        weights and biases by SGD in place (they must not require grad); LayerNorm
        parameters still get gradients."""
        h = x.reshape(x.shape[0], x.shape[1], -1)
        anchor = self.anchor if lr is not None else None
        for kind, item in self.layers:
            if kind == "linear":
                weight = params[f"{item}.weight"]
                h = _BatchedLinear.apply(h, weight, params[f"{item}.bias"], self.buffers[f"{item}.weight"], lr,
                                         anchor, self.per_replica)
            elif kind == "layer_norm":
                prefix, eps = item
                h = nn.functional.layer_norm(h, h.shape[-1:], eps=eps)
                h = h * params[f"{prefix}.weight"].unsqueeze(1) + params[f"{prefix}.bias"].unsqueeze(1)
            else:
                h = item(h)
        return h
