"""The numbers Ghosh et al. (2021) publish, for the notebook's "paper vs ours" table.

Copied from the paper's Tables 1-2 (CIFAR-10, "ResNet-18", 20 epochs) and the official
repository's README (MNIST); each key says what the number is and the comment where it
appears. Nothing in the library computes with them.
"""

PUBLISHED = {
    "source": "Ghosh, Aquino & Gupta 2021, EventGraD: Event-Triggered Communication in Parallel Machine Learning "
              "(Neurocomputing 483)",
    "setup": "CIFAR-10, ResNet-18 (3 blocks per stage in the code), global batch 256, SGD lr 0.01 momentum 0.9, "
             "20 epochs, 4-32 CPU PEs on a ring, MPI one-sided puts over EDR InfiniBand",
    # Table 1: regular (D-PSGD) accuracy, event-triggered accuracy, % of D-PSGD's messages
    "table1": {4: (86.5, 87.0, 43.24), 8: (86.3, 86.2, 42.98), 16: (84.9, 84.2, 45.91), 32: (82.5, 81.9, 44.89)},
    # Table 2: Top-K (10%) event-triggered accuracy, % messages, % communication (= 2 x 10% x % messages)
    "table2": {4: (85.4, 36.6, 7.3), 8: (85.26, 37.7, 7.5), 16: (83.09, 37.7, 7.5)},
    "topk_percent": 10,                    # implied: 7.3 = 0.2 x 36.6
    "mnist_messages_saved": 70.0,          # official repository README: "saves around 70% of the messages in MNIST"
}
