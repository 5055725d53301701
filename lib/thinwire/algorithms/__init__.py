"""Distributed training loops, written once as agents over a transport."""

from .optimizers import OPTIMIZERS, make_optimizer
from .plump_dp import PlumpDP
from .sharded_ps import ShardedPS
from .weight_averaging import WeightAveraging

ALGORITHMS = {"plump_dp": PlumpDP, "sharded_ps": ShardedPS, "weight_averaging": WeightAveraging}

__all__ = ["OPTIMIZERS", "make_optimizer", "PlumpDP", "ShardedPS", "WeightAveraging", "ALGORITHMS"]
