"""Run sizes of the Oland & Raj reproduction per profile (``papers.profile``).

The paper trains 100 epochs, ~1500 runs in all and 50 per setting of Fig. 4.
``seeds``: the headline transmissions (the table, Fig. 5); ``sweep_seeds``: Figs. 1 and 4.
``studies``: the runs that test the bit-rate gap, first seed: ``l1_ablation``, the L1
strengths; ``inits``, the initialisation experiment (``models/init.py`` specs); the two
readings of the rule; and the longer runs, ``long_epochs`` with L1 scaled to the length on
``long_seeds`` (epochs to peak). The default profile runs the headline and the sweeps, 20
runs of 2,400 steps: 48,000 steps, about 12 minutes at the 14.6 ms a step its notebook
averaged on 2 cores when it also ran the studies (135,000 steps, 39,000 of them the 26-epoch
runs: about 33 minutes, over the 15-minute budget); its notebook quotes the studies from ``long-runs/oland_raj_studies.ipynb``
(the default profile with ``-p studies True``). ``-p long_epochs N -p long_seeds K`` runs
the longer runs alone (``long-runs/oland_raj_epochs100.ipynb``: 100 epochs).
"""

OLAND_RAJ = {
    "smoke": dict(train_samples=2000, epochs=2, eval_samples=1000, seeds=(0,), sweep_seeds=(0,),
                  fixed_bits=(2, 8), floors_ceiling10=(6,), floors_m4=(5, 6), l1_ablation=(1e-3,),
                  long_epochs=4, long_seeds=(0,), inits=("normal(std=0.01)",), studies=True),
    "default": dict(train_samples=30000, epochs=8, eval_samples=10000, seeds=(0, 1), sweep_seeds=(0, 1),
                    fixed_bits=(2, 4, 6, 8, 10), floors_ceiling10=(2, 6), floors_m4=(2, 5, 6),
                    l1_ablation=(1e-4, 3e-4, 1e-3), long_epochs=26, long_seeds=(0, 1),
                    inits=("normal(std=0.01)", "uniform(a=0.01)"), studies=False),
    "paper": dict(train_samples=0, epochs=100, eval_samples=10000, seeds=tuple(range(50)),
                  sweep_seeds=tuple(range(50)), fixed_bits=tuple(range(2, 17)),
                  floors_ceiling10=(2, 3, 4, 5, 6, 7, 8, 9), floors_m4=(2, 3, 4, 5, 6),
                  l1_ablation=(1e-4, 3e-4, 1e-3), long_epochs=100, long_seeds=tuple(range(10)),
                  inits=("normal(std=0.01)", "uniform(a=0.01)"), studies=True),
}
