"""Distributed training loops, written once as agents over a transport (``contract.py``)."""

import importlib as _importlib
import pkgutil as _pkgutil

from .registry import ALGORITHMS, register_algorithm

for _module in _pkgutil.iter_modules(__path__, f"{__name__}."):  # every algorithm registers itself
    _importlib.import_module(_module.name)

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

__all__ = ["ALGORITHMS", "Algorithm", "AllReduceDP", "AllReduceSection", "CodecTimes", "Declared", "EventGraD", "EventGradSection", "MQGrad", "MQGradSection", "Round", "local_gradients", "ready", "OPTIMIZERS", "PULL_MODES", "ROLES", "ParameterServerSection", "PhaseTally",
           "PlumpDP", "SCHEDULES", "SCOPES", "SERVER_SCALES", "Section", "SlimDP", "SlimDPSection", "ServerAgent", "ShardedPS", "ShardedPSSection", "StepReport", "Tally", "WeightAveraging",
           "WeightAveragingSection", "check_algorithm", "make_optimizer", "register_algorithm"]
