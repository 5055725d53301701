"""Distributed training loops, written once as agents over a transport."""

from .optimizers import OPTIMIZERS, make_optimizer
from .plump_dp import PlumpDP

ALGORITHMS = {"plump_dp": PlumpDP}

__all__ = ["OPTIMIZERS", "make_optimizer", "PlumpDP", "ALGORITHMS"]
