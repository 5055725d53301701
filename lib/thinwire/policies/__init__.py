"""What to send each round (bit widths, events, core and explorer keys), apart from how it is encoded."""

import importlib as _importlib
import pkgutil as _pkgutil

from .base import Decision, Policy
from .registry import POLICIES, make_policy, register

for _module in _pkgutil.iter_modules(__path__, f"{__name__}."):  # every policy registers itself (``@register``)
    _importlib.import_module(_module.name)

from .always import Always  # noqa: E402  (the names users import; the registry has them all)
from .controller import Controller
from .core_explorer import CoreExplorer
from .entropy_bits import EntropyBits
from .event_trigger import EventTrigger
from .random_send import RandomSend
from .relative_change import RelativeChange
from .sarsa_bits import SarsaBits
from .schedule import RandomBits, ShuffledBits

__all__ = ["Always", "Controller", "CoreExplorer", "Decision", "EntropyBits", "EventTrigger", "POLICIES", "Policy", "RandomBits", "RandomSend", "RelativeChange", "SarsaBits", "ShuffledBits",
           "make_policy", "register"]
