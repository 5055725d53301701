"""Oland & Raj 2015, Reducing Communication Overhead in Distributed Learning by an Order of
Magnitude (Almost) (ICASSP)."""

from .analysis import (accuracy_curve, best_match, bit_rate_table, mean_bit_width, bits_per_parameter, epochs_to_peak, epochs_to_plateau, l1_ablation, layer_series, setting_findings,
                       mean_bit_rates, mean_epochs_to_peak, mean_final_accuracy, paper_vs_ours, why_it_differs)
from .consistency import DENSITIES, closest_to_paper, spike_family
from .profiles import OLAND_RAJ
from .published import PUBLISHED
from .quoted import ALLOWED, STUDIES_RUN, quoted_studies, study
from ..record import Headline, Paper
from .probes import OlandRajProbes
from .runs import (CEILING, F, HEADLINE, PROBES, PROBES_GRID, TRIPLE, OlandRajRuns, adaptive, fixed, oland_raj_recipes,
                   oland_raj_runs, shrinkage)

PAPER = Paper(name="oland_raj", title="Oland & Raj 2015, Reducing Communication Overhead in Distributed Learning by "
              "an Order of Magnitude (Almost)", order=3, recipes=oland_raj_recipes(),
              reproduces="Oland & Raj 2015: weights quantized per layer to N = H + c bits, Huffman-coded, averaged every epoch",
              headline=Headline("compression_c5m4", "c=5, M=4 compresses the weights {ours:.2f}x "
                                f"(paper: {PUBLISHED['compression_c5m4']:.2f}x)"))

__all__ = ["ALLOWED", "STUDIES_RUN", "quoted_studies", "study", "PAPER", "OlandRajProbes", "PROBES", "PROBES_GRID", "oland_raj_recipes", "mean_bit_width", "DENSITIES", "closest_to_paper", "spike_family", "why_it_differs", "best_match", "bit_rate_table", "TRIPLE", "shrinkage", "l1_ablation", "mean_bit_rates", "mean_epochs_to_peak", "mean_final_accuracy", "paper_vs_ours", "CEILING", "F", "HEADLINE", "OLAND_RAJ", "OlandRajRuns", "PUBLISHED", "accuracy_curve", "adaptive",
           "bits_per_parameter", "epochs_to_peak", "epochs_to_plateau", "fixed", "layer_series", "oland_raj_runs", "setting_findings"]
