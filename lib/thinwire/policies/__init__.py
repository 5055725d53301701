"""What to send each round (bit widths, events, core and explorer keys), apart from how it is encoded."""

from .always import Always
from .base import Decision, Policy
from .core_explorer import CoreExplorer
from .entropy_bits import EntropyBits
from .event import EventTrigger
from .registry import POLICIES, make_policy, register
from .schedule import RandomBits

__all__ = ["Always", "CoreExplorer", "Decision", "EntropyBits", "EventTrigger", "POLICIES", "Policy", "RandomBits",
           "make_policy", "register"]
