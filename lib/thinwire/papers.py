"""Each paper's published numbers, for the notebooks' "paper vs ours" tables.

Values are copied from the papers' text and tables (each entry names its source); the keys say
what the number is. Nothing in the library computes with them.
"""

from __future__ import annotations

GRADIENT_DROPPING = {
    "source": "Aji & Heafield 2017, Sparse Communication for Distributed Gradient Descent (EMNLP)",
    "setup": "MNIST, 3 x 4096 fully connected, AdaGrad lr 0.005, batch 40, 4 Titan X, PCIe 3.0 x16, 20 epochs",
    "accuracy_baseline": 0.9928,           # Sec. 5.3, Fig. 6
    "accuracy_drop99": 0.9942,             # Sec. 5.3, Fig. 6
    "data_reduction_99_offset_value": 50.0,  # Sec. 5.1: "50x less data with offset-value encoding"
    "images_per_second": {0.0: 2489, 0.9: 3174, 0.99: 3726, 0.999: 3921},  # Table 1
    "communication_share_baseline": 0.41,  # Sec. 5.3: "communication is 41% of the total training time"
}

OLAND_RAJ = {
    "source": "Oland & Raj 2015, Reducing Communication Overhead in Distributed Learning by an Order of Magnitude "
              "(Almost) (ICASSP)",
    "setup": "MNIST, 784-392-50-10 tanh, squared error, SGD with exponential lr decay and light L1, 5 GPUs on one "
             "PCIe 3.0 bus, weights averaged after every epoch, 100 epochs, about 1500 runs",
    "fixed_bits_matching_baseline": 8,     # Sec. 3.1 / 5.1: "We are able to recover baseline results at 8 bits"
    "bits_raw_c5m4": 6.8,                  # Sec. 5.1, Fig. 5 left
    "compression_raw_c5m4": 4.70,          # Sec. 5.1
    "bits_huffman_c5m4": 3.55,             # Sec. 5.1, Fig. 5 left
    "compression_c5m4": 9.01,              # Sec. 5.1
    "bits_huffman_c6m4": 3.78,             # Sec. 5.2, Fig. 5 right
    "compression_c6m4": 8.47,              # Sec. 5.2
    "fewer_epochs_to_peak_c6m4": 0.20,     # Sec. 5.2: "convergence is achieved in 20% fewer iterations"
    "effective_reduction_c6m4": 10.32,     # Sec. 5.2: compression x faster convergence
    "accuracy_c6m4_vs_baseline": "superior",   # Sec. 5.2 (Fig. 4; no number in the text)
    "accuracy_c5m4_vs_baseline": "marginally below",  # Sec. 5.1
}
