"""K = 8 in-process workers (MLP 784-1024-1024-10, batch 32 each) against one model on
the same 256 samples: one training step each (forward, backward, SGD update).

Two kinds of K-worker step are timed. The gradient step materializes every worker's
gradient and then updates. Algorithms that compress gradients need that step (gradient
dropping, MQGrad). The local SGD step (``Replicas.sgd_step``) updates inside the backward
pass. Algorithms that train locally and exchange weights use it (Oland & Raj, EventGraD).
Both are compared with the same single-model step (``torch.optim.SGD``).
"""

from __future__ import annotations

import statistics

import torch
from torch import nn

from roofline import call_seconds
from thinwire.models import Replicas, build_model

K, BATCH = 8, 32
ROUNDS, CALLS = 4, 5  # timed calls of each step per round, after one warm-up call


def run() -> dict:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(K, BATCH, 1, 28, 28, generator=g)
    y = torch.randint(0, 10, (K, BATCH), generator=g)
    model = build_model("mlp(hidden=(1024, 1024))", (1, 28, 28), 10, seed=0)
    replicas = Replicas(model, K)  # per replica, as every algorithm runs them

    def gradient_step():
        _, _, grads = replicas.loss_and_grads(x, y)
        for name, p in replicas.params.items():
            p.sub_(grads[name], alpha=0.01)

    def local_sgd_step():
        replicas.sgd_step(x, y, lr=0.01)

    single = build_model("mlp(hidden=(1024, 1024))", (1, 28, 28), 10, seed=0)
    opt = torch.optim.SGD(single.parameters(), lr=0.01)
    xs, ys = x.reshape(K * BATCH, 1, 28, 28), y.reshape(-1)

    def one_model():
        opt.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(single(xs), ys).backward()
        opt.step()

    # Rounds alternate between the three so that a slow spell of the machine hits all of them;
    # each time is the median of every round's calls.
    times = {fn: [] for fn in (gradient_step, local_sgd_step, one_model)}
    for _ in range(ROUNDS):
        for fn, kept in times.items():
            kept.extend(call_seconds(fn, repeats=CALLS, warmup=1))
    t_grad, t_local, t_1 = (statistics.median(times[fn]) for fn in (gradient_step, local_sgd_step, one_model))
    return {"workers": K, "batch_per_worker": BATCH, "gradient_step_s": t_grad, "local_sgd_step_s": t_local,
            "one_model_s": t_1, "ratio_gradient_step": t_grad / t_1, "ratio_local_sgd_step": t_local / t_1,
            "target": 1.5, "long_term_target": 1.15,
            "timing": f"the median of {ROUNDS * CALLS} calls: {ROUNDS} rounds of {CALLS}, each after a warm-up call"}
