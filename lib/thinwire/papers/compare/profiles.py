"""Run sizes of the comparison per profile (``papers.profile``). ``netcheck``: fit and check
the network model on a shaped network first (root; about 80 s). ``lr_grid``: the learning
rates every method is tuned on (``protocol.py``). ``methods``: the methods run when the
notebook names none (() for all): the smoke profile keeps one of each kind so that a
4-lr grid stays a CI-sized run."""

SMOKE_METHODS = ("all-reduce fp16", "PowerSGD rank 2", "top-k 1% + EF, all-gather", "gradient dropping 99%",
                 "EventGraD", "MQGrad")

COMPARE = {
    "smoke": dict(model="mlp(hidden=(256,))", steps=60, eval_every=20, train_samples=4096, eval_samples=500,
                  seeds=(0, 1), netcheck=False, lr_grid=(0.05, 0.1, 0.2, 0.4), methods=SMOKE_METHODS),
    "default": dict(model="mlp(hidden=(256,))", steps=720, eval_every=40, train_samples=16384, eval_samples=2000,
                    seeds=(0, 1, 2), netcheck=True, lr_grid=(0.05, 0.1, 0.2, 0.4), methods=()),
    "paper": dict(model="mlp", steps=4680, eval_every=234, train_samples=0, eval_samples=10000,
                  seeds=(0, 1, 2), netcheck=True, lr_grid=(0.05, 0.1, 0.2, 0.4), methods=()),
}
