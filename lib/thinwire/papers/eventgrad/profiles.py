"""Run sizes of the EventGraD reproduction per profile (``papers.profile``).

The official MNIST code trains 10 epochs at batch 64 per peer; the paper's CIFAR-10 runs
20 epochs at 4-32 peers. ``seeds``: the 4-peer comparison (Table 1-2 analogues, Fig. 6);
``scale_seeds``: the runs at 8 and 16 peers; ``sweep``: horizons per threshold rule (one
seed, 4 peers, as long as the headline runs; horizon 1 is the headline's, where the rules agree); the
default profile takes about 35 minutes from scratch on 2 cores (about 32 runs of 3 epochs,
about 65 s each: over the 15-minute budget). ``forced``: the forced
iterations (the code's 29; 5 at the smoke profile, whose runs are 12-24 iterations long).
``topk_sweep``: Top-K fractions beyond the paper's 10% (4 peers, first seed): how much of a
tensor an event must carry. ``max_gaps``: EventGraD with a heartbeat (a tensor unsent for that
many iterations is sent; not in the paper), 4 peers, first seed. ``length_epochs``: the
training-length study, each method at 4 peers on every seed of ``seeds`` for that many epochs
(0: none; nine runs' worth, left out of the default profile, as is
the code rule's horizon 0.5; ``long-runs/eventgrad_epochs10.ipynb`` runs the default profile
with the official code's 10). ``causes``: the causes of EventGraD's gap over every seed of
``seeds`` (``EventGradRuns.heartbeat_seeds``, ``momentum``): pinning, EventGraD with the
heartbeat ``max_gaps[0]`` and a random trigger at each run's share; momentum, D-PSGD and
EventGraD with the CIFAR-10 SGD (lr 0.01, momentum 0.9), and EventGraD with it at the
horizon that sends the share EventGraD sends without it, found on the first seed from the
``momentum_horizons`` (about 20 runs: left out of the default profile,
``long-runs/eventgrad_causes.ipynb`` runs the default profile with ``-p causes True``).
"""

EVENTGRAD = {
    "smoke": dict(train_samples=3072, epochs=2, eval_samples=1000, seeds=(0,), peers=(4, 8), scale_seeds=(0,),
                  sweep={"paper": (0.5,), "code": (0.9,)}, forced=5, topk_sweep=(0.3,),
                  max_gaps=(4,), length_epochs=4, causes=True, momentum_horizons=(2.0, 8.0)),
    "default": dict(train_samples=0, epochs=3, eval_samples=10000, seeds=(0, 1, 2), peers=(4, 8, 16),
                    scale_seeds=(0,), sweep={"paper": (0.5, 2.0), "code": (0.9, 0.99)}, forced=29,
                    topk_sweep=(0.5,), max_gaps=(25,), length_epochs=0, causes=False,
                    momentum_horizons=(2.0, 4.0, 8.0)),
    "paper": dict(train_samples=0, epochs=10, eval_samples=10000, seeds=(0, 1, 2), peers=(4, 8, 16),
                  scale_seeds=(0, 1, 2), sweep={"paper": (0.25, 0.5, 2.0, 4.0), "code": (0.5, 0.9, 0.95, 0.99)}, forced=29,
                  topk_sweep=(0.3, 0.5), max_gaps=(25, 100), length_epochs=20, causes=True,
                  momentum_horizons=(2.0, 4.0, 8.0)),
}

# CIFAR-10 (when data/cifar10 is present): the paper's Tables 1-2 setting, 20 epochs at
# 4-32 peers at the paper profile (GPU-sized: the code's ResNet has 17.4 M parameters).
EVENTGRAD_CIFAR10 = {
    "smoke": dict(train_samples=2048, epochs=2, eval_samples=500, seeds=(0,), peers=(4, 8), scale_seeds=(0,),
                  sweep={"paper": (0.5,), "code": (0.9,)}, forced=3, topk_sweep=(0.3,), max_gaps=(4,),
                  length_epochs=4, causes=False, momentum_horizons=()),
    "default": dict(train_samples=0, epochs=3, eval_samples=10000, seeds=(0,), peers=(4, 8), scale_seeds=(0,),
                    sweep={"paper": (0.5, 2.0), "code": (0.9,)}, forced=29, topk_sweep=(0.3,), max_gaps=(100,),
                    length_epochs=0, causes=False, momentum_horizons=()),
    "paper": dict(train_samples=0, epochs=20, eval_samples=10000, seeds=(0, 1, 2), peers=(4, 8, 16, 32),
                  scale_seeds=(0,), sweep={"paper": (0.5, 2.0), "code": (0.9, 0.99)}, forced=29,
                  topk_sweep=(0.3,), max_gaps=(100,), length_epochs=40, causes=False, momentum_horizons=()),
}
