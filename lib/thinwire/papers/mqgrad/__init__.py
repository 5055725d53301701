"""Cui, Xu, Zeng, Lan, Guo & Cheng 2018, MQGrad: Reinforcement Learning of Gradient
Quantization in Parameter Server (ICTIR '18)."""

from .analysis import (FRACTIONS, accuracy_at, accuracy_table, bits_trajectory, budgets, by_label, control_table,
                       decisions, elapsed, learning_table, mean_bits, paper_vs_ours, relative_table, run_time, smoothed_loss, time_ratio,
                       reward_to_q_ratio, time_ratios, time_shares, time_to_loss)
from .gaps import (accuracy_after, budget_gaps, collapsed, equal_iterations_table, iterations_by, never_learned,
                   resolution, stability, swing, why, why_time_ratio)
from .lr_grid import at_edge, chosen_lr, lr_table
from .profiles import MQGRAD
from .published import PUBLISHED
from .quoted import ALLOWED, STUDIES_RUN, quoted_studies, study
from ..record import Headline, Paper
from .runs import (ADAPTIVE, AGENT, CODE_AGENT, LABELS, LEARNING, LR, MODELS, NETWORK, PAPER_AGENT, SHUFFLED, MQGradRuns,
                   TUNING_SEED, methods, mqgrad_recipes, mqgrad_runs, quantizer, shuffled)

PAPER = Paper(name="mqgrad", title="Cui, Xu, Zeng, Lan, Guo & Cheng 2018, MQGrad: Reinforcement Learning of Gradient "
              "Quantization in Parameter Server", order=4, recipes=mqgrad_recipes(),
              reproduces="Cui et al. 2018: a SARSA agent sets the gradients' bit width, against Fix(2/4/8) and Adaptive",
              headline=Headline("time_ratio_mqgrad_vs_fix4", "MQGrad reaches Fix(4)'s final loss in {ours:.2f} of "
                                f"Fix(4)'s time (paper: {PUBLISHED['time_ratio_vs_fix4']:.2f})"))

__all__ = ["ALLOWED", "STUDIES_RUN", "TUNING_SEED", "at_edge", "chosen_lr", "lr_table", "quoted_studies", "study",
           "ADAPTIVE", "AGENT", "CODE_AGENT", "PAPER_AGENT", "SHUFFLED", "control_table", "decisions", "reward_to_q_ratio",
           "shuffled", "time_ratios", "FRACTIONS", "LABELS", "LEARNING", "LR", "MODELS", "MQGRAD", "MQGradRuns", "NETWORK",
           "PAPER", "PUBLISHED", "accuracy_at", "accuracy_table", "bits_trajectory", "budgets", "by_label", "elapsed",
           "learning_table", "mean_bits", "methods", "relative_table", "why", "mqgrad_recipes", "mqgrad_runs", "paper_vs_ours", "quantizer",
           "run_time", "smoothed_loss", "time_ratio", "time_shares", "time_to_loss", "accuracy_after", "budget_gaps",
           "collapsed", "equal_iterations_table", "iterations_by", "never_learned", "resolution", "stability", "swing", "why_time_ratio"]
