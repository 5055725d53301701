"""Sun et al. 2018, Slim-DP: A Multi-Agent System for Communication-Efficient Distributed
Deep Learning (AAMAS)."""

from .analysis import (ACCOUNTINGS, ablation_table, ablation_why, ran_at, break_even_codec_ms, codec_time, communication_time, elias_table,
                       final_accuracy, ordering, ordering_table,
                       paper_vs_ours, refresh_table, refresh_words, saved_bytes, saved_time, speed_table, sweep_table,
                       table1)
from .profiles import SLIM_DP
from .published import PUBLISHED
from .quoted import ALLOWED, STUDIES_RUN, quoted_studies, study
from ..record import Headline, Paper
from .runs import (EPSILONS, HEADLINE, LENGTH_SEEDS, LONGER, METHODS, PLUMP, QUANT, REFRESHES, SETTINGS, TABLE1, WORKERS,
                   SlimDPRuns, elias_coded, methods_at, slim_dp_recipes, slim_dp_runs, slim_label)
from .scale import PAPER_SIZES, codec_work, scale_ordering, scale_table, size_label

PAPER = Paper(name="slim_dp", title="Sun et al. 2018, Slim-DP: A Multi-Agent System for Communication-Efficient "
              "Distributed Deep Learning", order=1, recipes=slim_dp_recipes(),
              reproduces="Sun et al. 2018: Slim-DP's core of the largest entries plus a random explorer, keys cached, "
                         "against Plump-DP and Quant-DP",
              headline=Headline("saved_time_slim_03_015_ethernet_10g", "Slim-DP (0.3, 0.15), K = 4: time saved over "
                                "Plump-DP on 10 GbE {ours:+.0%} (paper, GoogLeNet on InfiniBand: "
                                f"{PUBLISHED['saved_time'][('GoogLeNet', 'Slim-DP', 4)]:+.0%})"))

__all__ = ["ALLOWED", "STUDIES_RUN", "quoted_studies", "study", "ACCOUNTINGS", "PAPER_SIZES", "size_label", "codec_work", "elias_coded", "elias_table", "scale_ordering", "scale_table", "codec_time", "ordering_table", "PAPER", "slim_dp_recipes", "EPSILONS", "HEADLINE", "LENGTH_SEEDS", "LONGER", "METHODS", "PLUMP", "PUBLISHED", "QUANT", "REFRESHES", "SETTINGS", "TABLE1", "methods_at", "ran_at",
           "SLIM_DP", "SlimDPRuns", "WORKERS", "ablation_table", "ablation_why", "break_even_codec_ms", "communication_time",
           "final_accuracy", "ordering", "paper_vs_ours", "refresh_table", "refresh_words", "saved_bytes", "saved_time", "slim_dp_runs", "slim_label",
           "speed_table", "sweep_table", "table1"]
