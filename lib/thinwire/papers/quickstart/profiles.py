"""Run sizes of the quickstart per profile (``papers.profile``)."""

QUICKSTART = {
    "smoke": dict(model="mlp(hidden=(64,))", steps=40, train_samples=4096, eval_every=10, eval_samples=1000),
    "default": dict(model="mlp", steps=600, train_samples=0, eval_every=50, eval_samples=10000),
    "paper": dict(model="mlp", steps=9360, train_samples=0, eval_every=468, eval_samples=10000),
}
