"""Run sizes of the EventGraD reproduction per profile (``papers.profile``).

The official MNIST code trains 10 epochs at batch 64 per peer; the paper's CIFAR-10 runs
20 epochs at 4-32 peers. ``seeds``: the 4-peer comparison (Table 1-2 analogues, Fig. 6);
``scale_seeds``: the seeds at the other ring sizes (of ``peers`` and ``study_peers``). ``forced``: the forced
iterations (the code's 29; 5 at the smoke profile, whose runs are 12-24 iterations long).

``studies``: the one-seed ablations the "why" column cites (4 peers, first seed, as long as
the headline runs), and the ring sizes ``study_peers``: ``sweep``, horizons per threshold
rule (horizon 1 is the headline's, where the rules agree); a random trigger at EventGraD's
share; ``topk_sweep``, Top-K fractions beyond the paper's 10%, and Top-10% without a trigger;
``max_gaps``, EventGraD with a heartbeat (a tensor unsent for that many iterations is sent;
not in the paper); each method with the CIFAR-10 SGD; D-PSGD slowed to each method's step
share; and, on every seed, Top-10% recording the receivers' copy's norm. ``causes``: the
causes of EventGraD's gap over every seed of ``seeds`` (``EventGradRuns.heartbeat_seeds``,
``momentum``): pinning, EventGraD with the heartbeat ``max_gaps[0]`` and a random trigger at
each run's share; momentum, D-PSGD and EventGraD with the CIFAR-10 SGD (lr 0.01, momentum
0.9), and EventGraD with it at the horizon that sends the share EventGraD sends without it,
found on the first seed from the ``momentum_horizons``. ``length_epochs``: the
training-length study, each method at 4 peers on every seed of ``seeds`` for that many
epochs (0: none).

The default MNIST profile runs the headline only: each method at 4 peers on 3 seeds, 9 runs
of 3 epochs (69 s each on 2 cores; 12 runs with 8 peers took 830 s, too near the 15-minute
budget). Its notebook quotes 8 and 16 peers, the studies and the causes from
``long-runs/eventgrad_causes.ipynb`` (the default profile with ``-p studies True -p causes
True``: about 54 runs) and the training length from ``long-runs/eventgrad_epochs10.ipynb``
(``-p length_epochs 10``).
"""

EVENTGRAD = {
    "smoke": dict(train_samples=3072, epochs=2, eval_samples=1000, seeds=(0,), peers=(4, 8), scale_seeds=(0,),
                  sweep={"paper": (0.5,), "code": (0.9,)}, forced=5, topk_sweep=(0.3,),
                  max_gaps=(4,), length_epochs=4, causes=True, momentum_horizons=(2.0, 8.0), studies=True,
                  study_peers=()),
    "default": dict(train_samples=0, epochs=3, eval_samples=10000, seeds=(0, 1, 2), peers=(4,),
                    scale_seeds=(0,), sweep={"paper": (0.5, 2.0), "code": (0.9, 0.99)}, forced=29,
                    topk_sweep=(0.5,), max_gaps=(25,), length_epochs=0, causes=False,
                    momentum_horizons=(2.0, 4.0, 8.0), studies=False, study_peers=(8, 16)),
    "paper": dict(train_samples=0, epochs=10, eval_samples=10000, seeds=(0, 1, 2), peers=(4, 8, 16),
                  scale_seeds=(0, 1, 2), sweep={"paper": (0.25, 0.5, 2.0, 4.0), "code": (0.5, 0.9, 0.95, 0.99)}, forced=29,
                  topk_sweep=(0.3, 0.5), max_gaps=(25, 100), length_epochs=20, causes=True,
                  momentum_horizons=(2.0, 4.0, 8.0), studies=True, study_peers=()),
}

# CIFAR-10 (when data/cifar10 is present): the paper's Tables 1-2 setting, 20 epochs at
# 4-32 peers at the paper profile (GPU-sized: the code's ResNet has 17.4 M parameters).
EVENTGRAD_CIFAR10 = {
    "smoke": dict(train_samples=2048, epochs=2, eval_samples=500, seeds=(0,), peers=(4, 8), scale_seeds=(0,),
                  sweep={"paper": (0.5,), "code": (0.9,)}, forced=3, topk_sweep=(0.3,), max_gaps=(4,),
                  length_epochs=4, causes=False, momentum_horizons=(), studies=True, study_peers=()),
    "default": dict(train_samples=0, epochs=3, eval_samples=10000, seeds=(0,), peers=(4, 8), scale_seeds=(0,),
                    sweep={"paper": (0.5, 2.0), "code": (0.9,)}, forced=29, topk_sweep=(0.3,), max_gaps=(100,),
                    length_epochs=0, causes=False, momentum_horizons=(), studies=True, study_peers=()),
    "paper": dict(train_samples=0, epochs=20, eval_samples=10000, seeds=(0, 1, 2), peers=(4, 8, 16, 32),
                  scale_seeds=(0,), sweep={"paper": (0.5, 2.0), "code": (0.9, 0.99)}, forced=29,
                  topk_sweep=(0.3,), max_gaps=(100,), length_epochs=40, causes=False, momentum_horizons=(),
                  studies=True, study_peers=()),
}
