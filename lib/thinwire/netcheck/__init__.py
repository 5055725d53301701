"""The network model checked against a real network: an emulated cluster of network
namespaces with shaped links (``cluster.py``), configs run on it by gloo ranks, and the
model's predicted time per phase beside the measured one (``measure.py``), its fixed costs
fitted there (``fit.py``), and a torchrun
across two of its namespaces as two hosts (``two_hosts.py``)."""

from .check import TOLERANCE_PCT, TOPOLOGIES, netcheck, table, topology_configs, validated_max, write
from .cluster import Cluster, NetcheckUnavailable, leftovers
from .fit import corrected, fit_fixed_costs, shaped
from .measure import compare, run_on_cluster, total
from .two_hosts import run_two_hosts, two_host_check, two_host_command

__all__ = ["TOLERANCE_PCT", "TOPOLOGIES", "validated_max", "netcheck", "table", "topology_configs", "write", "Cluster", "NetcheckUnavailable", "compare", "total", "leftovers", "corrected", "fit_fixed_costs", "shaped", "run_on_cluster", "run_two_hosts", "two_host_check", "two_host_command"]
