"""Run sizes of the MQGrad reproduction per profile (``papers.profile``).

Every method runs the same number of iterations (``steps``), as in the paper, whose
tables mark "N/A" where a faster method's run had already ended; the time axis is the
modelled time (``algorithms/mqgrad.py``). ``workers``: 11 at the default profile, 17 at the
paper's (12- and 18-node clusters, one node the server). ``seeds``: every method runs each
(the learning ablations run the first). ``model``: the paper's CNN at the paper profile
(``mqgrad_cnn``, 16.2 M parameters), the same shape at reduced width below it
(``runs.MODELS``). ``learning``: the variants of the agent run beside MQGrad's first seed
(``runs.LEARNING``; the default profile leaves the action-taken transition out, and runs the
paper's lr on one seed, to stay near 15 minutes on 2 cores). Every seed of MQGrad also runs
its control, the same bits shuffled (``runs.shuffled``).

``lr``: the server's step. The paper's (and the code's) 0.2 at the paper profile. Below it,
at reduced width on 28x28 digits, 0.2 sends some runs to chance for good (a loss spike, then
every prediction the same): the notebook shows it by running MQGrad at 0.2 beside the
profile's lr on the same seeds (``paper_lr_seeds``), so the default and smoke profiles
compare the methods at 0.1, where those runs train.
"""

ALL_VARIANTS = ("epsilon 0 (greedy only)", "the paper's text agent", "transition follows the action taken")

MQGRAD = {
    "smoke": dict(workers=4, steps=60, eval_every=3, train_samples=3840, eval_samples=500, seeds=(0,),
                  model="small", learning=ALL_VARIANTS, lr=0.1, paper_lr_seeds=(0,)),
    "default": dict(workers=11, steps=100, eval_every=5, train_samples=0, eval_samples=2000, seeds=(0, 1, 2),
                    model="narrow", learning=ALL_VARIANTS[:2], lr=0.1, paper_lr_seeds=(0,)),
    "paper": dict(workers=17, steps=4000, eval_every=100, train_samples=0, eval_samples=10000, seeds=(0, 1, 2),
                  model="paper", learning=ALL_VARIANTS, lr=0.2, paper_lr_seeds=()),
}
