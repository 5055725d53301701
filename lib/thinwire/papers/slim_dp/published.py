"""The numbers Sun et al. (2018) publish, for the notebook's "paper vs ours" table.

Copied from the paper's text and tables; each key says what the number is and the comment
where it appears. Nothing in the library computes with them.
"""

PUBLISHED = {
    "source": "Sun, Chen, Bian, Liu, Liu 2018, Slim-DP: A Multi-Agent System for Communication-Efficient "
              "Distributed Deep Learning (AAMAS)",
    "setup": "ImageNet, VGG-16 (140M parameters) and GoogLeNet (13M), K = 4 and 8 K20 GPUs on InfiniBand, "
             "p = 1, Caffe model-zoo hyperparameters, time counted over 10k mini-batches per local agent",
    # Table 1: saved communication time against Plump-DP (codec time counted, Sec. 4.3.1)
    "saved_time": {
        ("VGG-16", "Slim-DP", 4): 0.7115, ("VGG-16", "Slim-DP", 8): 0.7006,
        ("VGG-16", "Quant-DP", 4): 0.6305, ("VGG-16", "Quant-DP", 8): 0.6397,
        ("GoogLeNet", "Slim-DP", 4): 0.5512, ("GoogLeNet", "Slim-DP", 8): 0.5614,
        ("GoogLeNet", "Quant-DP", 4): 0.4785, ("GoogLeNet", "Quant-DP", 8): 0.4987,
    },
    # Table 1: top-5 accuracy (%), trained to convergence
    "top5": {
        ("GoogLeNet", "Plump-DP", 4): 88.06, ("GoogLeNet", "Plump-DP", 8): 88.03,
        ("GoogLeNet", "Quant-DP", 4): 88.02, ("GoogLeNet", "Quant-DP", 8): 88.08,
        ("GoogLeNet", "Slim-DP", 4): 88.29, ("GoogLeNet", "Slim-DP", 8): 88.23,
        ("VGG-16", "Plump-DP", 4): 86.53, ("VGG-16", "Plump-DP", 8): 86.48,
        ("VGG-16", "Quant-DP", 4): 86.55, ("VGG-16", "Quant-DP", 8): 86.53,
        ("VGG-16", "Slim-DP", 4): 87.03, ("VGG-16", "Slim-DP", 8): 86.91,
    },
    "settings": {"VGG-16": (0.2, 0.1), "GoogLeNet": (0.3, 0.15)},  # Sec. 4.1: (alpha, epsilon)
    "quant_dp": "QSGD, 8 bits, bucket 512",                        # Sec. 4.2
    "speedup": {("VGG-16", 4): 0.30, ("VGG-16", 8): 0.40, ("GoogLeNet", 8): 0.10},  # Sec. 4.3.2: images/s over Plump-DP
    "slim_accuracy_gain_top5": (0.2, 0.5),                         # Sec. 4.3.3: points over Plump-DP
    "epsilon_zero": "fails to converge",                           # Sec. 4.3.4, Fig. 4
    "wire_words": "(alpha + epsilon) N for Slim-DP, N for Plump-DP",  # Sec. 3.4.1
}
