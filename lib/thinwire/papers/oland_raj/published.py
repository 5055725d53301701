"""The numbers Oland & Raj (2015) publish, for the notebook's "paper vs ours" table.

Copied from the paper's text; each key says what the number is and the comment where it
appears. Nothing in the library computes with them.
"""

PUBLISHED = {
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
