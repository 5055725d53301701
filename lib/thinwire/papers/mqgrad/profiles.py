"""Run sizes of the MQGrad reproduction per profile (``papers.profile``).

Every method runs the same number of iterations (``steps``), as in the paper, whose
tables mark "N/A" where a faster method's run had already ended; the time axis is the
modelled time (``algorithms/mqgrad.py``). ``workers``: 11 at the default profile, 17 at the
paper's (12- and 18-node clusters, one node the server). ``seeds``: every method runs each
(and with ``studies`` MQGrad's control on each, the same bits shuffled: ``runs.shuffled``).
``model``: the paper's CNN at the paper profile (``mqgrad_cnn``, 16.2 M parameters), the
same shape at reduced width below it (``runs.MODELS``).

``studies``: the runs beside the headline: the shuffled controls; ``learning``, the variants
of the agent beside MQGrad's first seed (``runs.LEARNING``); MQGrad at the paper's lr on
``paper_lr_seeds``; and
the lr grid, every method at each lr of ``lr_grid`` on the tuning seed (``runs.TUNING_SEED``
after the first seed), from which the profile's ``lr`` is chosen (``lr_grid.chosen_lr``: the
best mean final accuracy over the methods). The default profile runs the headline only, 15
runs (with the 3 controls beside them its notebook took 973 s from scratch on 2 cores, over
the 15-minute budget; with every study, 1,189 s); its notebook quotes the studies from
``long-runs/mqgrad_studies.ipynb`` (the default profile with ``-p studies True``).

At the smoke profile the grid is the one lr 0.1: its 60 iterations at 0.2 sit at the edge of
collapse, and another CPU's last-digit differences sent two methods to chance there.

``lr``: the server's step. The paper's (and the code's) 0.2 at the paper profile. Below it,
at reduced width on 28x28 digits, 0.2 sends some runs to chance for good (a loss spike, then
every prediction the same): the studies show it by running MQGrad at 0.2 beside the
profile's lr on the same seeds (``paper_lr_seeds``), and the grid over every method sets the
profile's lr.
"""

ALL_VARIANTS = ("epsilon 0 (greedy only)", "the paper's text agent", "transition follows the action taken")

MQGRAD = {
    "smoke": dict(workers=4, steps=60, eval_every=3, train_samples=3840, eval_samples=500, seeds=(0,),
                  model="small", learning=ALL_VARIANTS, lr=0.1, paper_lr_seeds=(0,), studies=True, lr_grid=(0.1,)),
    "default": dict(workers=11, steps=100, eval_every=5, train_samples=0, eval_samples=2000, seeds=(0, 1, 2),
                    model="narrow", learning=ALL_VARIANTS[:2], lr=0.1, paper_lr_seeds=(0,), studies=False,
                    lr_grid=(0.05, 0.1, 0.2, 0.4)),
    "paper": dict(workers=17, steps=4000, eval_every=100, train_samples=0, eval_samples=10000, seeds=(0, 1, 2),
                  model="paper", learning=ALL_VARIANTS, lr=0.2, paper_lr_seeds=(), studies=True,
                  lr_grid=(0.05, 0.1, 0.2, 0.4)),
}
