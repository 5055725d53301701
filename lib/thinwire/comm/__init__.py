"""Transports that move encoded messages between agents, the ledger, the network model."""

from .envelope import Envelope
from .distributed import DEFAULT_TIMEOUT_S, DistributedTransport, check_timeout, init_process_group
from .inprocess import InProcessTransport
from .ledger import Ledger
from .network import PRESETS, TCP_ETHERNET, NetworkModel, PhaseLoads, canonical_network, network_preset, register_network
from .stall import StalledRankError
from .transport import Transport

__all__ = ["DEFAULT_TIMEOUT_S", "DistributedTransport", "StalledRankError", "check_timeout", "init_process_group", "Envelope", "InProcessTransport", "Ledger", "PRESETS", "TCP_ETHERNET", "NetworkModel", "PhaseLoads", "network_preset", "canonical_network", "register_network", "Transport"]
