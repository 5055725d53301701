"""Oland & Raj 2015, Reducing Communication Overhead in Distributed Learning by an Order of
Magnitude (Almost) (ICASSP)."""

from .analysis import accuracy_curve, bits_per_parameter, epochs_to_peak, layer_series
from .profiles import OLAND_RAJ
from .published import PUBLISHED
from .runs import CEILING, F, HEADLINE, OlandRajRuns, adaptive, fixed, oland_raj_runs

__all__ = ["CEILING", "F", "HEADLINE", "OLAND_RAJ", "OlandRajRuns", "PUBLISHED", "accuracy_curve", "adaptive",
           "bits_per_parameter", "epochs_to_peak", "fixed", "layer_series", "oland_raj_runs"]
