"""Ghosh, Aquino & Gupta 2021, EventGraD: Event-Triggered Communication in Parallel Machine
Learning (Neurocomputing)."""

from .analysis import (accuracy, accuracy_by_epoch, communication_pct, epoch_losses, framing_table,
                      iteration_seconds, last_events, length_table, LONG_RUN, quoted_length, mean_accuracy, messages, messages_pct, network_notes,
                      optimizer_table, paired_table, paper_vs_ours, per_tensor_messages, share_after_forced, slowed_lr, slowed_table,
                      step_share, sweep_table, table1, table2, tensor_sizes, time_table, traces, trigger_table)
from .causes import matched_horizon, momentum_table, pinning_table, worth
from .profiles import EVENTGRAD, EVENTGRAD_CIFAR10
from .published import PUBLISHED
from .quoted import ALLOWED, CAUSES_RUN, quoted_studies, study
from ..record import Headline, Paper
from .runs import (BATCH, FORCED, HORIZON, LABELS, LR, MODEL, SETUPS, TOPK, EventGradRuns, event, eventgrad_recipes,
                   eventgrad_runs, methods)

PAPER = Paper(name="eventgrad", title="Ghosh, Aquino & Gupta 2021, EventGraD: Event-Triggered Communication in "
              "Parallel Machine Learning", order=2, recipes=eventgrad_recipes(),
              reproduces="Ghosh et al. 2021: EventGraD's norm-triggered sends on a ring against D-PSGD, and with Top-10%",
              headline=Headline("messages_pct_event_k4", "EventGraD, 4 peers, sends {ours:.0f}% of D-PSGD's messages "
                                f"(the official code, MNIST: about {100 - PUBLISHED['mnist_messages_saved']:.0f}%)"))

__all__ = ["ALLOWED", "CAUSES_RUN", "matched_horizon", "momentum_table", "pinning_table", "quoted_studies", "study", "worth", "BATCH", "EVENTGRAD", "EVENTGRAD_CIFAR10", "EventGradRuns", "FORCED", "HORIZON", "LABELS", "LR", "MODEL", "PAPER",
           "PUBLISHED", "SETUPS", "TOPK", "accuracy", "accuracy_by_epoch", "communication_pct", "epoch_losses", "event",
           "eventgrad_recipes", "eventgrad_runs", "framing_table", "iteration_seconds", "last_events", "length_table", "LONG_RUN", "quoted_length",
           "mean_accuracy", "messages", "messages_pct", "methods", "network_notes", "optimizer_table", "paired_table", "paper_vs_ours",
           "per_tensor_messages", "share_after_forced", "slowed_lr", "slowed_table", "step_share", "sweep_table",
           "table1", "table2", "tensor_sizes", "time_table", "traces", "trigger_table"]
