"""Run sizes of the comparison per profile (``papers.profile``). ``netcheck``: whether
``fixed_costs="fitted"`` fits and checks the network model here (not at smoke; by default the
notebook quotes a committed check, ``checked.py``). ``lr_grid``: the learning
rates every method is tuned on (``protocol.py``). ``methods``: the methods run when the
notebook names none (() for all): the smoke profile keeps one of each kind so that a
4-lr grid stays a CI-sized run; the default profile keeps every paper's method and the
baselines a user picks first (the fp16 all-reduce, PowerSGD rank 2, top-k with error
feedback on an all-gather), so that it runs in under 20 minutes on 2 cores (about 110 runs
of 8 s); the paper profile runs all 19. ``paper_seeds``: the evaluation seeds of the papers'
own settings, extra rows beside the protocol's (one seed at default: indicative).
``netcheck_rates``: the bandwidths (bytes/s) the network model is checked at."""

from .methods import FROM_PAPERS

SMOKE_METHODS = ("all-reduce fp16", "PowerSGD rank 2", "top-k 1% + EF, all-gather", "gradient dropping 99%",
                 "EventGraD", "MQGrad")
DEFAULT_METHODS = ("all-reduce fp16", "PowerSGD rank 2", "top-k 1% + EF, all-gather", *FROM_PAPERS)
NETCHECK_RATES = (10e6, 50e6, 200e6)
# around the fp16 all-reduce's best: on 0.05-0.4 its best was 0.4, and 9 of 12 methods' the grid's top
LR_GRID = (0.1, 0.2, 0.4, 0.8)

COMPARE = {
    "smoke": dict(model="mlp(hidden=(256,))", steps=60, eval_every=20, train_samples=4096, eval_samples=500,
                  seeds=(0, 1), netcheck=False, lr_grid=LR_GRID, methods=SMOKE_METHODS,
                  paper_seeds=1, netcheck_rates=NETCHECK_RATES),
    "default": dict(model="mlp(hidden=(256,))", steps=400, eval_every=40, train_samples=16384, eval_samples=2000,
                    seeds=(0, 1, 2), netcheck=True, lr_grid=LR_GRID, methods=DEFAULT_METHODS,
                    paper_seeds=1, netcheck_rates=NETCHECK_RATES),
    "paper": dict(model="mlp", steps=4680, eval_every=234, train_samples=0, eval_samples=10000,
                  seeds=(0, 1, 2), netcheck=True, lr_grid=LR_GRID, methods=(),
                  paper_seeds=3, netcheck_rates=NETCHECK_RATES),
}
