"""Distributed training loops, written once as agents over a transport (``contract.py``)."""

from .allreduce_dp import AllReduceDP, AllReduceSection
from .contract import ROLES, Algorithm, check_algorithm
from .optimizers import OPTIMIZERS, make_optimizer
from .plump_dp import PULL_MODES, ParameterServerSection, PlumpDP
from .declared import Declared
from .eventgrad import EventGraD, EventGradSection
from .mqgrad import MQGrad, MQGradSection
from .report import CodecTimes, PhaseTally, StepReport, Tally
from .round import Round, local_gradients, ready
from .section import Section
from .server import ServerAgent
from .sharded_ps import SCHEDULES, ShardedPS, ShardedPSSection
from .slim_dp import SCOPES, SERVER_SCALES, SlimDP, SlimDPSection
from .weight_averaging import WeightAveraging, WeightAveragingSection

ALGORITHMS: dict[str, type] = {"allreduce": AllReduceDP, "eventgrad": EventGraD, "mqgrad": MQGrad, "plump_dp": PlumpDP, "sharded_ps": ShardedPS, "slim_dp": SlimDP,
                               "weight_averaging": WeightAveraging}


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


__all__ = ["ALGORITHMS", "Algorithm", "AllReduceDP", "AllReduceSection", "CodecTimes", "Declared", "EventGraD", "EventGradSection", "MQGrad", "MQGradSection", "Round", "local_gradients", "ready", "OPTIMIZERS", "PULL_MODES", "ROLES", "ParameterServerSection", "PhaseTally",
           "PlumpDP", "SCHEDULES", "SCOPES", "SERVER_SCALES", "Section", "SlimDP", "SlimDPSection", "ServerAgent", "ShardedPS", "ShardedPSSection", "StepReport", "Tally", "WeightAveraging",
           "WeightAveragingSection", "check_algorithm", "make_optimizer", "register_algorithm"]
