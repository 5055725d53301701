"""Distributed training loops, written once as agents over a transport (``contract.py``)."""

from .contract import ROLES, Algorithm, check_algorithm
from .optimizers import OPTIMIZERS, make_optimizer
from .plump_dp import PlumpDP
from .report import PhaseTally, StepReport, Tally
from .sections import PULL_MODES, SCHEDULES, ParameterServerSection, Section, ShardedPSSection, WeightAveragingSection
from .server import ServerAgent
from .sharded_ps import ShardedPS
from .weight_averaging import WeightAveraging

ALGORITHMS: dict[str, type] = {"plump_dp": PlumpDP, "sharded_ps": ShardedPS, "weight_averaging": WeightAveraging}


def register_algorithm(name: str, cls: type) -> type:
    """Make ``cls`` runnable as ``RunConfig(algorithm=name)``. It needs ``Section`` (a frozen
    dataclass of its parameters, subclass of ``Section``), ``from_config(model, transport,
    config, steps_per_epoch)`` and the contract's members."""
    if not (isinstance(getattr(cls, "Section", None), type) and issubclass(cls.Section, Section)):
        raise ValueError(f"algorithm {name!r}: {cls.__name__}.Section must be a subclass of Section")
    if not callable(getattr(cls, "from_config", None)):
        raise ValueError(f"algorithm {name!r}: {cls.__name__} needs a from_config classmethod")
    ALGORITHMS[name] = cls
    return cls


__all__ = ["ALGORITHMS", "Algorithm", "OPTIMIZERS", "PULL_MODES", "ROLES", "ParameterServerSection", "PhaseTally",
           "PlumpDP", "SCHEDULES", "Section", "ServerAgent", "ShardedPS", "ShardedPSSection", "StepReport", "Tally", "WeightAveraging",
           "WeightAveragingSection", "check_algorithm", "make_optimizer", "register_algorithm"]
