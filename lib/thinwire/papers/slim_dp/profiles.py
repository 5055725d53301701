"""Run sizes of the Slim-DP reproduction per profile (``papers.profile``).

The paper's network for MNIST-sized runs is the issue's MLP 784-1024-1024-10; the default
profile narrows it to 256-256 and runs 600 rounds (1.3 epochs at K = 4, 2.6 at K = 8): its
27 headline runs (``runs.py``) take about 25 s each at K = 4 and 33 s at K = 8 on 2 cores,
so the studies (``studies``) are quoted from a long run to stay inside 15 minutes. The paper
profile runs the 1024-1024 MLP for 10k mini-batches per local agent, the length over which
the paper counts communication time (Sec. 4.3.1). ``gloo_steps``: the length of the run
repeated on torch.distributed to show that the ledgers match. ``elias_steps``: the first
rounds of Quant-DP's first-seed runs repeated with QSGD's own Elias coding (a lossless
coding of the same messages, sequential and slower, so not the whole run).
``scale_sizes``: the vector sizes of the codec-only measurement (``scale.py``) besides the
run's own model.
"""

SLIM_DP = {
    "smoke": dict(model="mlp(hidden=(64,))", steps=40, train_samples=4096, eval_every=10, eval_samples=1000, gloo_steps=10,
                  elias_steps=10, scale_sizes=(), studies=True),
    "default": dict(model="mlp(hidden=(256, 256))", steps=600, train_samples=0, eval_every=50, eval_samples=10000, gloo_steps=30,
                    elias_steps=100, scale_sizes=(1_863_690, 13_000_000, 140_000_000), studies=False),
    "paper": dict(model="mlp", steps=10000, train_samples=0, eval_every=500, eval_samples=10000,
                  gloo_steps=100, elias_steps=10000, scale_sizes=(1_863_690, 13_000_000, 140_000_000), studies=True),
}
