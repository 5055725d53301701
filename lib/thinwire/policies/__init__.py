"""What to send each round (bit widths, events, core and explorer keys), apart from how it is encoded."""

from .always import Always
from .base import Decision, Policy
from .controller import Controller
from .core_explorer import CoreExplorer
from .entropy_bits import EntropyBits
from .event_trigger import EventTrigger
from .random_send import RandomSend
from .relative_change import RelativeChange
from .registry import POLICIES, make_policy, register
from .sarsa_bits import SarsaBits
from .schedule import RandomBits, ShuffledBits

__all__ = ["Always", "Controller", "CoreExplorer", "Decision", "EntropyBits", "EventTrigger", "POLICIES", "Policy", "RandomBits", "RandomSend", "RelativeChange", "SarsaBits", "ShuffledBits",
           "make_policy", "register"]
