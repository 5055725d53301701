"""The network model checked against a real network: an emulated cluster of network
namespaces with shaped links (``cluster.py``), configs run on it by gloo ranks, and the
model's predicted time per phase beside the measured one (``measure.py``)."""

from .check import TOPOLOGIES, netcheck, table, topology_configs, write
from .cluster import Cluster, NetcheckUnavailable, leftovers
from .measure import compare, run_on_cluster

__all__ = ["TOPOLOGIES", "netcheck", "table", "topology_configs", "write", "Cluster", "NetcheckUnavailable", "compare", "leftovers", "run_on_cluster"]
