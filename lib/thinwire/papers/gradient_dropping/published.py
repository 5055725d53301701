"""The numbers Aji & Heafield (2017) publish, for the notebook's "paper vs ours" table.

Copied from the paper's text and tables; each key says what the number is and the comment
where it appears. Nothing in the library computes with them.
"""

PUBLISHED = {
    "source": "Aji & Heafield 2017, Sparse Communication for Distributed Gradient Descent (EMNLP)",
    "setup": "MNIST, 3 x 4096 fully connected, AdaGrad lr 0.005, batch 40, 4 Titan X, PCIe 3.0 x16, 20 epochs",
    "accuracy_baseline": 0.9928,           # Sec. 5.3, Fig. 6
    "accuracy_drop99": 0.9942,             # Sec. 5.3, Fig. 6
    "data_reduction_99_offset_value": 50.0,  # Sec. 5.1: "50x less data with offset-value encoding"
    "images_per_second": {0.0: 2489, 0.9: 3174, 0.99: 3726, 0.999: 3921},  # Table 1
    "communication_share_baseline": 0.41,  # Sec. 5.3: "communication is 41% of the total training time"
}
