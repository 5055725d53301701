"""Run sizes of the gradient-dropping reproduction per profile (``papers.profile``).

``warmup_steps``: dense steps before dropping in Marian's setting (``runs.marian``): Marian's
100 (``PUSH_WARMUP``, ``FETCH_WARMUP``), fewer in the smoke profile, whose runs are 30 steps.
``quantized_bits``: the widths of Fig. 8's runs. The paper's MNIST figure is 1-bit; 2-bit
(its suggestion for NMT) runs where the budget allows (the committed default report's runs
cell took 964 s on 2 cores, over the 15-minute budget). ``seeds``: the seeds of the gap over seeds (dense and 99% in the
notebook's setting, ``runs.seed_runs``)."""

GRADIENT_DROPPING = {
    "smoke": dict(hidden=(64, 64, 64), steps=30, train_samples=4096, eval_every=10, eval_samples=1000,
                  speed_steps=10, warmup_steps=5, quantized_bits=(1, 2), seeds=(0, 1)),
    "default": dict(hidden=(512, 512, 512), steps=450, train_samples=0, eval_every=45, eval_samples=10000,
                    speed_steps=40, warmup_steps=100, quantized_bits=(1,), seeds=(0, 1, 2)),
    "paper": dict(hidden=(4096, 4096, 4096), steps=7500, train_samples=0, eval_every=375, eval_samples=10000,
                  speed_steps=300, warmup_steps=100, quantized_bits=(1, 2), seeds=(0, 1, 2)),
}
