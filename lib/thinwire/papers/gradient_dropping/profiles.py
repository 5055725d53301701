"""Run sizes of the gradient-dropping reproduction per profile (``papers.profile``)."""

GRADIENT_DROPPING = {
    "smoke": dict(hidden=(64, 64, 64), steps=30, train_samples=4096, eval_every=10, eval_samples=1000,
                  speed_steps=10),
    "default": dict(hidden=(512, 512, 512), steps=450, train_samples=0, eval_every=45, eval_samples=10000,
                    speed_steps=40),
    "paper": dict(hidden=(4096, 4096, 4096), steps=7500, train_samples=0, eval_every=375, eval_samples=10000,
                  speed_steps=300),
}
