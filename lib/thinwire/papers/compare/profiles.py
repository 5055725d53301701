"""Run sizes of the comparison per profile (``papers.profile``). ``netcheck``: fit and check
the network model on a shaped network first (root; about 80 s)."""

COMPARE = {
    "smoke": dict(model="mlp(hidden=(256,))", steps=60, eval_every=20, train_samples=4096, eval_samples=500,
                  seeds=(0, 1), netcheck=False),
    "default": dict(model="mlp(hidden=(256,))", steps=720, eval_every=40, train_samples=16384, eval_samples=2000,
                    seeds=(0, 1, 2), netcheck=True),
    "paper": dict(model="mlp", steps=4680, eval_every=234, train_samples=0, eval_samples=10000,
                  seeds=(0, 1, 2), netcheck=True),
}
