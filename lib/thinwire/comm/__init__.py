"""Transports that move encoded messages between agents, the ledger, the network model."""

from .envelope import Envelope
from .distributed import DistributedTransport
from .inprocess import InProcessTransport
from .ledger import Ledger
from .network import PRESETS, NetworkModel, network_preset
from .transport import Transport

__all__ = ["DistributedTransport", "Envelope", "InProcessTransport", "Ledger", "PRESETS", "NetworkModel", "network_preset", "Transport"]
