"""K = 8 in-process workers (MLP 784-1024-1024-10, batch 32 each) against one model on
the same 256 samples: one training step each (forward, backward, SGD update)."""

from __future__ import annotations

import torch
from torch import nn

from roofline import best_seconds
from thinwire.models import Replicas, build_model

K, BATCH = 8, 32


def run() -> dict:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(K, BATCH, 1, 28, 28, generator=g)
    y = torch.randint(0, 10, (K, BATCH), generator=g)
    model = build_model("mlp", (1, 28, 28), 10, seed=0, hidden=(1024, 1024))
    replicas = Replicas(model, K)

    def k_workers():
        _, _, grads = replicas.loss_and_grads(x, y)
        for name, p in replicas.params.items():
            p.sub_(grads[name], alpha=0.01)

    single = build_model("mlp", (1, 28, 28), 10, seed=0, hidden=(1024, 1024))
    opt = torch.optim.SGD(single.parameters(), lr=0.01)
    xs, ys = x.reshape(K * BATCH, 1, 28, 28), y.reshape(-1)

    def one_model():
        opt.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(single(xs), ys).backward()
        opt.step()

    t_k = best_seconds(k_workers, repeats=15, warmup=3)
    t_1 = best_seconds(one_model, repeats=15, warmup=3)
    return {"workers": K, "batch_per_worker": BATCH, "k_workers_s": t_k, "one_model_s": t_1,
            "ratio": t_k / t_1, "target": 1.5, "long_term_target": 1.15}
