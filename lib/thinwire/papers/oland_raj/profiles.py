"""Run sizes of the Oland & Raj reproduction per profile (``papers.profile``).

The paper trains 100 epochs, ~1500 runs in all and 50 per setting of Fig. 4.
``long_epochs``/``long_seeds``: the training-length experiment (L1 scaled to the length);
``inits``: the initialisation experiment (``models/init.py`` specs). The default profile
takes about 33 minutes from scratch on 2 cores (45 runs, 135,000 steps of about
14.6 ms: over the 15-minute budget; its 26-epoch runs are 39,000 of them).
"""

OLAND_RAJ = {
    "smoke": dict(train_samples=2000, epochs=2, eval_samples=1000, seeds=(0,), sweep_seeds=(0,),
                  fixed_bits=(2, 8), floors_ceiling10=(6,), floors_m4=(5, 6), l1_ablation=(1e-3,),
                  long_epochs=4, long_seeds=(0,), inits=("normal(std=0.01)",)),
    "default": dict(train_samples=30000, epochs=8, eval_samples=10000, seeds=(0, 1), sweep_seeds=(0, 1),
                    fixed_bits=(2, 4, 6, 8, 10), floors_ceiling10=(2, 6), floors_m4=(2, 5, 6),
                    l1_ablation=(1e-4, 3e-4, 1e-3), long_epochs=26, long_seeds=(0, 1),
                    inits=("normal(std=0.01)", "uniform(a=0.01)")),
    "paper": dict(train_samples=0, epochs=100, eval_samples=10000, seeds=tuple(range(50)),
                  sweep_seeds=tuple(range(50)), fixed_bits=tuple(range(2, 17)),
                  floors_ceiling10=(2, 3, 4, 5, 6, 7, 8, 9), floors_m4=(2, 3, 4, 5, 6),
                  l1_ablation=(1e-4, 3e-4, 1e-3), long_epochs=100, long_seeds=tuple(range(10)),
                  inits=("normal(std=0.01)", "uniform(a=0.01)")),
}
