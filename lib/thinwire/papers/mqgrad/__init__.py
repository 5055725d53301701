"""Cui, Xu, Zeng, Lan, Guo & Cheng 2018, MQGrad: Reinforcement Learning of Gradient
Quantization in Parameter Server (ICTIR '18)."""

from .analysis import (FRACTIONS, accuracy_at, accuracy_table, bits_trajectory, budgets, by_label, elapsed,
                       learning_table, mean_bits, paper_vs_ours, relative_table, run_time, smoothed_loss, time_ratio,
                       time_shares, time_to_loss)
from .gaps import (accuracy_after, budget_gaps, collapsed, equal_iterations_table, iterations_by, never_learned,
                   resolution, stability, swing, why)
from .profiles import MQGRAD
from .published import PUBLISHED
from ..record import Paper
from .runs import (ADAPTIVE, CODE_AGENT, LABELS, LEARNING, LR, MODELS, NETWORK, MQGradRuns, methods, mqgrad_recipes,
                   mqgrad_runs, quantizer)

PAPER = Paper(name="mqgrad", title="Cui, Xu, Zeng, Lan, Guo & Cheng 2018, MQGrad: Reinforcement Learning of Gradient "
              "Quantization in Parameter Server", order=4, recipes=mqgrad_recipes())

__all__ = ["ADAPTIVE", "CODE_AGENT", "FRACTIONS", "LABELS", "LEARNING", "LR", "MODELS", "MQGRAD", "MQGradRuns", "NETWORK",
           "PAPER", "PUBLISHED", "accuracy_at", "accuracy_table", "bits_trajectory", "budgets", "by_label", "elapsed",
           "learning_table", "mean_bits", "methods", "relative_table", "why", "mqgrad_recipes", "mqgrad_runs", "paper_vs_ours", "quantizer",
           "run_time", "smoothed_loss", "time_ratio", "time_shares", "time_to_loss", "accuracy_after", "budget_gaps",
           "collapsed", "equal_iterations_table", "iterations_by", "never_learned", "resolution", "stability", "swing"]
