"""Two "hosts" on one machine: a config run by ``torchrun --nnodes 2`` with a c10d rendezvous
between two network namespaces of an emulated cluster (``cluster.py``), each with its own
address and shaped link, as one would run it on two machines:

    # on host 0 (10.213.0.1, is_host=true) and on host 1 (is_host=false):
    torchrun --nnodes 2 --nproc-per-node P --rdzv-backend c10d \\
        --rdzv-endpoint 10.213.0.1:29530 --rdzv-id thinwire --rdzv-conf is_host=true \\
        --local-addr 10.213.0.1 \\
        -m thinwire run --config cfg.json --backend gloo

Host 0 serves the rendezvous store (``--rdzv-conf is_host=true``), and each host names its own
address (``--local-addr``): torchrun would otherwise guess both from the machine's hostname,
which every namespace here shares (as on a cluster whose hostnames do not resolve to the
addresses the hosts reach each other at). The rendezvous assigns the
ranks; gloo is bound to each host's ``eth0``
(``GLOO_SOCKET_IFNAME``). Rank 0 writes the result into the shared results folder (the
namespaces share this machine's file system, as a cluster's hosts share a network file
system).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from ..experiment import RunConfig
from .cluster import Cluster
from .measure import run_config

RDZV_PORT = 29530


def two_host_command(config_file: Path, nproc_per_node: int, endpoint: str, root: Path, host: bool,
                     address: str) -> list[str]:
    """The torchrun command line a host runs; ``host``: this one serves the rendezvous store;
    ``address``: this host's own address, which its peers reach it at."""
    return [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", str(nproc_per_node),
            "--local-addr", address,
            "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint, "--rdzv-id", "thinwire",
            "--rdzv-conf", f"is_host={str(host).lower()}",
            "-m", "thinwire", "run", "--config", str(config_file), "--backend", "gloo", "--no-reuse",
            "--results", str(root), "--timeout", "120"]


def run_two_hosts(config: RunConfig, cluster: Cluster, nproc_per_node: int, root, timeout_s: float = 600):
    """The Result of ``config`` run by torchrun on nodes 0 and 1 of ``cluster``, with
    ``nproc_per_node`` ranks on each."""
    endpoint = f"{cluster.address(0)}:{RDZV_PORT}"
    env = dict(os.environ, GLOO_SOCKET_IFNAME="eth0", OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1",
               THINWIRE_PROGRESS="0")

    def commands(path):
        return ({k: two_host_command(path, nproc_per_node, endpoint, root, k == 0, cluster.address(k)) for k in (0, 1)},
                {0: env, 1: env})

    return run_config(config, cluster, root, commands, timeout_s, "the two-host run")


def two_host_check(rate_bytes_per_s: float = 50e6, nproc_per_node: int = 2, root=None) -> dict:
    """A small data-parallel run (ring all-reduce, fp16, 4 workers) in one process and by
    torchrun on two hosts: are the ledgers identical, and how far apart are the losses?"""
    from ..experiment import run
    config = RunConfig(algorithm="allreduce", model="mlp(hidden=(32,))", workers=2 * nproc_per_node, batch_size=16,
                       steps=20, train_samples=64 * nproc_per_node * 20, eval_every=10, eval_samples=300,
                       push_codec="fp16")
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(root or scratch)
        local = run(config, root=root / "inprocess", reuse=False, progress=False)
        with Cluster(2, rate_bytes_per_s) as cluster:
            two = run_two_hosts(config, cluster, nproc_per_node, root / "two_hosts")
    losses = [abs(a - b) for a, b in zip(local.metrics["loss"], two.metrics["loss"])]
    return {"ranks": 2 * nproc_per_node, "same_ledger": local.ledger.rows() == two.ledger.rows(),
            "messages": len(two.ledger), "final_loss_inprocess": local.summary["final_loss"],
            "final_loss_two_hosts": two.summary["final_loss"], "max_loss_gap": max(losses),
            "same_accuracy": local.metrics["test_accuracy"] == two.metrics["test_accuracy"]}
