"""Many configs on one set of gloo ranks: the processes start and join the group once,
then run each config in turn (a torchrun launch per config spends about 10 s starting).
Rank 0 writes each result under ``root`` as ``thinwire run --backend gloo`` would."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from thinwire.comm import DistributedTransport


def _rank(rank: int, world: int, port: int, configs: list[dict], root: str, threads: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(threads)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    from thinwire.experiment import RunConfig, run
    for config in configs:
        run(RunConfig.from_dict(config), DistributedTransport(timeout_s=120), backend="gloo", root=root,
            reuse=False, progress=False)
    dist.barrier()
    dist.destroy_process_group()


def run_all_on_gloo(configs: list, world: int, port: int, root: str, threads: int = 1) -> None:
    """Run every ``RunConfig`` in ``configs`` on ``world`` gloo processes, in order, each
    computing on ``threads`` threads."""
    mp.start_processes(_rank, args=(world, port, [c.to_dict() for c in configs], root, threads), nprocs=world,
                       start_method="spawn")
