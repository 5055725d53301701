"""K copies of one model trained side by side as batched tensors.

Every parameter is stored with a leading replica dimension (K, ...). One ``vmap`` over
``functional_call`` computes all K losses, and one backward pass gives all K gradients:
the in-process simulation of K workers costs about what one model on K times the
batch costs, instead of K Python-level passes. ``MLP`` models take a faster path of
batched matrix products with persistent gradient buffers (``batched_mlp.py``). On torch.distributed each rank holds
the replicas of its own workers (usually K = 1), through the same code.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.func import functional_call, vmap

from .batched_mlp import BatchedMLP
from .dropout import dropout_layers
from .mlp import MLP


LOSSES = ("cross_entropy", "mse")


class Replicas:
    """``loss``: ``"cross_entropy"`` on the logits, or ``"mse"``: half the squared error
    of tanh(logits) against targets +1 (true class) / -1 (others), summed over classes —
    the tanh output layer and squared error of Oland & Raj (Sec. 3.2)."""

    def __init__(self, model: nn.Module, count: int, loss: str = "cross_entropy", seeds: list[int] | None = None,
                 per_replica: bool = True, buffers: bool = False):
        """``seeds``: one per replica, for the generators that draw its dropout masks
        (needed when the model has dropout). ``per_replica`` (every algorithm's): each
        replica's numbers are the same bits whatever ``count`` is, as on a rank that holds
        one replica: an MLP's products run one replica at a time (``batched_mlp.py``); any
        other model runs its forward pass once per replica (a batched convolution adds in
        another order, about 3e-8 apart), on a slice of the (K, ...) parameters even when
        K = 1 (a whole-tensor pass returns linear layers' gradients transposed, and
        ``_match_layout`` would then store those weights transposed, which a later product
        rounds otherwise on some CPUs). A lossy codec (top-k's choice among near ties,
        a quantizer's rounding) turns such a last-bit difference into another message, so
        without it one process and K ranks train apart. False batches the K replicas in one
        product, some 12-17% faster (``benchmarks/replicas_bench.py``, K = 8). ``buffers``:
        keep the model's buffers (batch-norm running statistics) per replica in ``buffers``, updated by
        every training pass of that replica alone; without it a model with buffers is
        refused, since the algorithm would not know how to evaluate them."""
        if loss not in LOSSES:
            raise ValueError(f"loss={loss!r} is not allowed: loss must be one of {list(LOSSES)}")
        self.loss = loss
        if count < 1:
            raise ValueError(f"replica count must be >= 1, got {count}")
        if not buffers and any(True for _ in model.buffers()):
            raise ValueError("this algorithm supports models without buffers (no batch norm statistics); "
                             "the ring peers of 'eventgrad' keep them per peer")
        self.model = model
        self.count = count
        self.per_replica = per_replica
        self.params: dict[str, torch.Tensor] = {
            name: p.detach().unsqueeze(0).repeat(count, *([1] * p.dim())).contiguous()
            for name, p in model.named_parameters()
        }
        self.buffers: dict[str, torch.Tensor] = {
            name: b.detach().unsqueeze(0).repeat(count, *([1] * b.dim())).contiguous()
            for name, b in model.named_buffers()
        }
        self.batched = None
        if isinstance(model, MLP):
            self.batched = BatchedMLP(model, self.params, per_replica)
        self.dropouts = dropout_layers(model)
        device = next(iter(self.params.values())).device
        if self.dropouts and (seeds is None or len(seeds) != count):
            raise ValueError(f"seeds={seeds!r} is not allowed: a model with dropout needs one seed per replica "
                             f"({count}) for its masks")
        self.generators = [torch.Generator(device=device).manual_seed(s) for s in seeds] if self.dropouts else []
        self._mask_shapes: dict[str, tuple[int, ...]] | None = None
        self.velocity: dict[str, torch.Tensor] = {}  # SGD momentum buffers, per replica

    def _loss(self, params, x, y, masks):  # params: parameters and buffers
        logits = functional_call(self.model, params, (x,), {"masks": masks} if masks else {})
        return sample_losses(logits, y, self.loss).mean(), (logits.argmax(-1) == y).sum()

    def _masks(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """One dropout mask per layer and replica, each drawn from its replica's generator."""
        if not self.dropouts:
            return {}
        if self._mask_shapes is None:  # the feature shape at each dropout layer, from one sample
            shapes, hooks = {}, []
            for name, layer in self.dropouts.items():
                hooks.append(layer.register_forward_hook(
                    lambda m, args, out, name=name: shapes.__setitem__(name, m.mask_shape(tuple(args[0].shape[1:])))))
            self.model.eval()
            with torch.no_grad():
                functional_call(self.model, {n: p[0] for n, p in self.params.items()}, (x[0, :1],))
            for hook in hooks:
                hook.remove()
            self._mask_shapes = shapes
        batch = x.shape[1]
        return {name: torch.stack([layer.draw((batch, *self._mask_shapes[name]), g, x.device)
                                   for g in self.generators])
                for name, layer in self.dropouts.items()}

    def loss_and_grads(self, x: torch.Tensor, y: torch.Tensor):
        """x: (K, B, ...), y: (K, B) -> losses (K,), correct counts (K,), grads {name: (K, ...)}.

        For an ``MLP`` the weight gradients live in buffers reused by the next call: use
        (or copy) them before calling again.
        """
        leaves = {n: p.requires_grad_(True) for n, p in self.params.items()}
        self.model.train()
        if self.batched is not None:
            losses, correct = _batched_loss(self.batched.logits(leaves, x), y, self.loss)
        elif self.per_replica:  # one count or many, each replica through the same slices: the same layouts
            masks = self._masks(x)
            tensors = {**leaves, **self.buffers}
            parts = [vmap(self._loss)({n: p[k:k + 1] for n, p in tensors.items()}, x[k:k + 1], y[k:k + 1],
                                      {n: m[k:k + 1] for n, m in masks.items()}) for k in range(self.count)]
            losses, correct = torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])
        else:
            losses, correct = vmap(self._loss)({**leaves, **self.buffers}, x, y, self._masks(x))
        grads = dict(zip(leaves, torch.autograd.grad(losses.sum(), list(leaves.values()))))
        for p in leaves.values():
            p.requires_grad_(False)
        self._match_layout(grads)
        return losses.detach(), correct, grads

    def sgd_step(self, x: torch.Tensor, y: torch.Tensor, lr: float, momentum: float = 0.0,
                 weight_decay: float = 0.0):
        """One local SGD step of every replica on its own batch: x (K, B, ...), y (K, B)
        -> losses (K,), correct counts (K,) before the step. The same update as
        ``p -= lr * grad`` after ``loss_and_grads``; for an ``MLP`` the Linear layers apply
        it inside their backward pass, so no K gradient tensors are written and read back.
        With ``momentum`` or ``weight_decay``, torch.optim.SGD's rule per replica
        (g += wd p; v = momentum v + g; p -= lr v), velocities kept in ``velocity``.
        """
        if self.batched is None or momentum or weight_decay:
            losses, correct, grads = self.loss_and_grads(x, y)
            self.descend(grads, lr, momentum, weight_decay)
            return losses, correct
        fused = set(self.batched.fused_names)
        leaves = {n: p.requires_grad_(n not in fused) for n, p in self.params.items()}
        self.model.train()
        losses, correct = _batched_loss(self.batched.logits(leaves, x, lr=lr), y, self.loss)
        rest = [n for n in leaves if n not in fused]
        grads = torch.autograd.grad(losses.sum(), [leaves[n] for n in rest] + [self.batched.anchor],
                                    allow_unused=True)[:-1]
        for p in leaves.values():
            p.requires_grad_(False)
        with torch.no_grad():
            for name, g in zip(rest, grads):
                self.params[name].sub_(g, alpha=lr)
        return losses.detach(), correct

    @torch.no_grad()
    def descend(self, grads: dict[str, torch.Tensor], lr: float, momentum: float = 0.0,
                weight_decay: float = 0.0) -> None:
        """Apply ``grads`` (name -> (K, ...)) to every replica with torch.optim.SGD's rule
        (g += wd p; v = momentum v + g; p -= lr v), velocities kept in ``velocity``."""
        for name, p in self.params.items():
            g = grads[name]
            if weight_decay:
                g = g.add(p, alpha=weight_decay)
            if momentum:
                v = self.velocity.get(name)
                if v is None:
                    v = self.velocity[name] = g.clone()
                else:
                    v.mul_(momentum).add_(g)
                g = v
            p.sub_(g, alpha=lr)

    def _match_layout(self, grads: dict[str, torch.Tensor]) -> None:
        """Store each parameter in the memory layout its gradient comes out in (under
        ``vmap`` Linear weight gradients may come out transposed), so updates like ``p -= lr * g`` run at memory speed
        instead of as a strided gather. Values are unchanged."""
        for name, g in grads.items():
            p = self.params[name]
            if p.stride() != g.stride() and _dense(g):
                self.params[name] = torch.empty_strided(p.shape, g.stride(), dtype=p.dtype, device=p.device).copy_(p)


    def state_dict(self) -> dict:
        return {"params": {n: p.clone() for n, p in self.params.items()},
                "buffers": {n: b.clone() for n, b in self.buffers.items()},
                "velocity": {n: v.clone() for n, v in self.velocity.items()},
                "generators": [g.get_state() for g in self.generators]}

    def load_state_dict(self, state: dict) -> None:
        for name, p in list(self.params.items()):
            saved = state["params"][name]
            if saved.stride() != p.stride() and _dense(saved):  # the layout ``_match_layout`` chose: a resumed
                # run computes in the same order, so its numbers are the uninterrupted run's
                self.params[name] = p = torch.empty_strided(p.shape, saved.stride(), dtype=p.dtype, device=p.device)
            p.copy_(saved)
        for name, b in self.buffers.items():
            b.copy_(state["buffers"][name])
        self.velocity = {n: v.clone() for n, v in state["velocity"].items()}
        for g, s in zip(self.generators, state["generators"]):
            g.set_state(s)


def sample_losses(logits: torch.Tensor, y: torch.Tensor, loss: str) -> torch.Tensor:
    """logits (N, C), y (N,) -> the loss of each sample (N,)."""
    if loss == "cross_entropy":
        return nn.functional.cross_entropy(logits, y, reduction="none")
    target = torch.full_like(logits, -1.0).scatter_(1, y.unsqueeze(1), 1.0)
    return 0.5 * (torch.tanh(logits) - target).square().sum(1)


def _batched_loss(logits: torch.Tensor, y: torch.Tensor, loss: str = "cross_entropy"):
    """logits (K, B, C), y (K, B) -> mean loss per replica (K,), correct counts (K,)."""
    k, b, c = logits.shape
    losses = sample_losses(logits.reshape(k * b, c), y.reshape(-1), loss)
    return losses.view(k, b).mean(1), (logits.argmax(-1) == y).sum(1)


def _dense(t: torch.Tensor) -> bool:
    """True when ``t`` covers its storage exactly once (some permutation of contiguous)."""
    expected = 1
    for d in sorted(range(t.dim()), key=t.stride):
        if t.size(d) != 1 and t.stride(d) != expected:
            return False
        expected *= t.size(d)
    return True
