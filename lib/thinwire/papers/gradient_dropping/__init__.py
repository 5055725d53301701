"""Aji & Heafield 2017, Sparse Communication for Distributed Gradient Descent (EMNLP)."""

from .analysis import (LAST, WIDTH_RUN, accuracy_gaps, data_reduction, density_error, diagnosis_table, epochs, length_table,
                       marian_table, paper_vs_ours, seeds_table, width_table)
from .profiles import GRADIENT_DROPPING
from .published import PUBLISHED
from .quoted import ALLOWED, STUDIES_RUN, quoted_studies, study
from ..record import Headline, Paper
from .runs import (LEVEL_NAMES, MARIAN_EPS, QUANTIZED, RATIOS, SETTINGS, GradientDroppingRuns, drop_codecs,
                   gradient_dropping_recipes, gradient_dropping_runs, paper_warmup_share, setting_options)

PAPER = Paper(name="gradient_dropping", title="Aji & Heafield 2017, Sparse Communication for Distributed Gradient "
              "Descent", order=5, recipes=gradient_dropping_recipes(),
              reproduces="Aji & Heafield 2017: a sharded parameter server dropping 90-99.9% of gradients, with a residual",
              headline=Headline("data_reduction_99_offset_value", "99% dropped: {ours:.0f}x less data, offset-value "
                                f"encoded (paper: {PUBLISHED['data_reduction_99_offset_value']:.0f}x)"))

__all__ = ["ALLOWED", "STUDIES_RUN", "quoted_studies", "study", "WIDTH_RUN", "PAPER", "gradient_dropping_recipes", "accuracy_gaps", "diagnosis_table", "marian_table", "paper_vs_ours", "MARIAN_EPS", "GRADIENT_DROPPING", "GradientDroppingRuns", "LEVEL_NAMES", "PUBLISHED", "QUANTIZED", "SETTINGS", "setting_options",
           "LAST", "RATIOS", "epochs", "paper_warmup_share", "seeds_table", "width_table", "data_reduction", "density_error", "drop_codecs", "length_table", "gradient_dropping_runs"]
