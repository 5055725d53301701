"""The numbers Cui et al. (2018) publish, for the notebook's "paper vs ours" table.

Copied from the paper's Tables 1-3 and Sec. 4.2 (CIFAR-10, the 5-layer CNN, 12- and
18-node clusters on a 10 MB/s network). "N/A" in the paper (the run had ended by then) is
None. Nothing in the library computes with them.
"""

PUBLISHED = {
    "source": "Cui, Xu, Zeng, Lan, Guo & Cheng 2018, MQGrad: Reinforcement Learning of Gradient Quantization in "
              "Parameter Server (ICTIR '18)",
    "setup": "CIFAR-10 (28x28 crops), 5-layer CNN (16.2 M parameters, 99.2% in two fully connected layers), batch 32, "
             "lr 0.2, 12- and 18-node parameter-server clusters on a 10 MB/s network",
    "hours": (5, 15, 30, 40),
    # Table 1 (12 nodes) and Table 2 (18 nodes): test accuracy (%) at 5 / 15 / 30 / 40 hours
    "table1": {"Fix(2)": (50.8, 55.9, None, None), "Fix(4)": (41.9, 57.5, 66.7, None),
               "Fix(8)": (35.7, 55.6, 60.8, 68.1), "Adaptive": (49.4, 60.1, 65.3, None),
               "MQGrad": (54.7, 65.6, 67.7, None)},
    "table2": {"Fix(2)": (51.5, 58.5, None, None), "Fix(4)": (45.4, 57.9, 68.4, None),
               "Fix(8)": (42.1, 58.2, 65.9, 68.2), "Adaptive": (43.6, 57.3, 63.4, None),
               "MQGrad": (51.5, 62.0, 68.2, None)},
    # Table 3: the share of training time (%) spent quantizing, de-quantizing (and in the MDP)
    "table3": {12: {"Fix(2)": 13.3, "Fix(4)": 8.0, "Fix(8)": 4.44, "Adaptive": 8.13, "MQGrad": 7.41},
               18: {"Fix(2)": 11.4, "Fix(4)": 7.27, "Fix(8)": 4.21, "Adaptive": 5.84, "MQGrad": 4.11}},
    # Sec. 4.2: "compared with the best baseline Fix (4-bit), MQGrad used less 7.5 hours to reach the same loss
    # on the 18-node cluster"; Fix(4)'s run lasts about 40 h in Fig. 5, so the ratio is about 0.81
    "hours_saved_vs_fix4": 7.5,
    "time_ratio_vs_fix4": 0.81,
}
