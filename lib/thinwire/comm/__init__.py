"""Transports that move encoded messages between agents, the ledger, the network model."""

from .envelope import Envelope
from .distributed import DEFAULT_TIMEOUT_S, DistributedTransport, check_timeout, init_process_group
from .inprocess import InProcessTransport
from .ledger import Ledger
from .network import PRESETS, NetworkModel, canonical_network, network_preset, register_network
from .stall import StalledRankError
from .transport import Transport

__all__ = ["DEFAULT_TIMEOUT_S", "DistributedTransport", "StalledRankError", "check_timeout", "init_process_group", "Envelope", "InProcessTransport", "Ledger", "PRESETS", "NetworkModel", "network_preset", "canonical_network", "register_network", "Transport"]
