"""Run sizes of the MQGrad reproduction per profile (``papers.profile``).

Every method runs the same number of iterations (``steps``), as in the paper, whose
tables mark "N/A" where a faster method's run had already ended; the time axis is the
modelled time (``algorithms/mqgrad.py``). ``workers``: 11 at the default profile, 17 at the
paper's (12- and 18-node clusters, one node the server). ``seeds``: MQGrad's seeds (the
baselines and the learning ablations run the first). ``model``: the paper's CNN at the paper
profile (``mqgrad_cnn``, 16.2 M parameters), the same shape at reduced width below it
(``runs.MODELS``). ``learning``: the variants of the agent run beside MQGrad's first seed
(``runs.LEARNING``); the default profile leaves the official code's agent out to stay under
10 minutes on 2 cores.
"""

ALL_VARIANTS = ("epsilon 0 (greedy only)", "transition follows the action taken", "the official code's agent")

MQGRAD = {
    "smoke": dict(workers=4, steps=30, eval_every=3, train_samples=3840, eval_samples=500, seeds=(0,),
                  model="small", learning=ALL_VARIANTS),
    "default": dict(workers=11, steps=200, eval_every=10, train_samples=0, eval_samples=5000, seeds=(0, 1, 2),
                    model="narrow", learning=ALL_VARIANTS[:2]),
    "paper": dict(workers=17, steps=4000, eval_every=100, train_samples=0, eval_samples=10000, seeds=(0, 1, 2),
                  model="paper", learning=ALL_VARIANTS),
}
