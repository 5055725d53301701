"""Run sizes of the gradient-dropping reproduction per profile (``papers.profile``).

``warmup_steps``: dense steps before dropping in Marian's setting (``runs.marian``): Marian's
100 (``PUSH_WARMUP``, ``FETCH_WARMUP``), fewer in the smoke profile, whose runs are 30 steps.
``quantized_bits``: the widths of Fig. 8's runs. The paper's MNIST figure is 1-bit; 2-bit
(its suggestion for NMT) runs where the budget allows. ``seeds``: the seeds of the gap over
seeds (dense and 99% in the notebook's setting, ``runs.seed_runs``). ``studies``: the
one-seed studies of the accuracy gap (the pull diagnosis, Marian's settings one at a time,
twice the training length). The default profile runs the paper's figures and tables and the
gap over seeds; its notebook quotes the studies from ``long-runs/gradient_dropping_studies.ipynb``
(the default profile's notebook with every study: 967 s of its 2-core time went to them
and the rest, over the 15-minute budget) and the paper's width from
``long-runs/gradient_dropping_width.ipynb``."""

GRADIENT_DROPPING = {
    "smoke": dict(hidden=(64, 64, 64), steps=30, train_samples=4096, eval_every=10, eval_samples=1000,
                  speed_steps=10, warmup_steps=5, quantized_bits=(1, 2), seeds=(0, 1), studies=True),
    "default": dict(hidden=(512, 512, 512), steps=450, train_samples=0, eval_every=45, eval_samples=10000,
                    speed_steps=40, warmup_steps=100, quantized_bits=(1,), seeds=(0, 1, 2), studies=False),
    "paper": dict(hidden=(4096, 4096, 4096), steps=7500, train_samples=0, eval_every=375, eval_samples=10000,
                  speed_steps=300, warmup_steps=100, quantized_bits=(1, 2), seeds=(0, 1, 2), studies=True),
}
