"""The phases of a round: the names under which the ledger records messages and the
transport exchanges them (``Round.send``, ``Round.exchange``), one constant per name so a
misspelt phase is an import error, not an empty phase.

    PUSH   workers (or local agents) to the server: gradients, deltas, weights
    PULL   the server back to the workers: parameters, their change, an average
    LOSS   MQGrad's workers' losses to the server's agent (Alg. 1)
    BITS   MQGrad's bit width, the server's agent to the workers
    RING   EventGraD's peers to their two neighbours
"""

PUSH, PULL, LOSS, BITS, RING = "push", "pull", "loss", "bits", "ring"
