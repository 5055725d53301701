"""Run a config on N torch.distributed processes from Python (e.g. a notebook).

Spawns ``torchrun --nproc-per-node N -m thinwire run ...`` as a subprocess, waits, and
loads the result rank 0 wrote. The same path a user takes on a cluster.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from ..comm import DEFAULT_TIMEOUT_S, check_timeout
from .checkpoint import check_every
from .config import RunConfig
from .result import Result
from .runner import cached


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_command(config_file: Path, nprocs: int, backend: str = "gloo", root=None,
                     collective_timeout_s: float | None = None, checkpoint_every: int = 0) -> list[str]:
    """The torchrun command line that runs the config in ``config_file`` on ``nprocs`` ranks."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nprocs),
           "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
           "-m", "thinwire", "run", "--config", str(config_file), "--backend", backend, "--no-reuse"]
    if root is not None:
        cmd += ["--results", str(root)]
    if collective_timeout_s is not None:
        cmd += ["--timeout", str(collective_timeout_s)]
    if checkpoint_every:
        cmd += ["--checkpoint-every", str(checkpoint_every)]
    return cmd


def rank_threads_count() -> int:
    """The OpenMP (torch) threads each rank ``launch`` starts gets: ``$OMP_NUM_THREADS``, else 1."""
    return int(os.environ.get("OMP_NUM_THREADS", "1"))


@contextmanager
def rank_threads():
    """For the block, torch computes with a launched rank's thread count: an in-process
    reference then computes every product as the ranks do (MKL splits a large product over
    its threads and rounds it otherwise than on one, so a run at another thread count can
    part from the ranks' after a lossy codec's choice flips)."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(rank_threads_count())
    try:
        yield
    finally:
        torch.set_num_threads(before)


def torchrun_env(config: RunConfig | None = None) -> dict:
    """The ranks' environment: one OpenMP thread each, no progress bars, and the plug-in
    modules registered in this process (``THINWIRE_IMPORT``), so a user's codecs reach them,
    with the module of the observer ``config`` names."""
    from ..plugins import ENV, observer_modules, registering_modules
    modules = [m for m in os.environ.get(ENV, "").split(",") if m] + registering_modules()
    modules += observer_modules(config) if config is not None else []
    return dict(os.environ, OMP_NUM_THREADS=str(rank_threads_count()), THINWIRE_PROGRESS="0",
                **{ENV: ",".join(dict.fromkeys(modules))})


def launch(config: RunConfig, nprocs: int, backend: str = "gloo", root=None, reuse: bool = True,
           timeout_s: float = 1800, collective_timeout_s: float = DEFAULT_TIMEOUT_S,
           checkpoint_every: int = 0) -> Result:
    """Run ``config`` under torchrun with ``nprocs`` ranks; returns the (cached) Result.

    ``timeout_s`` bounds the whole run; ``collective_timeout_s`` bounds each collective (a
    stalled rank stops every rank with an error that names it); the ranks checkpoint every
    ``checkpoint_every`` steps (0: every 60 s) and a rerun resumes from there.
    """
    if not isinstance(nprocs, int) or nprocs < 1:
        raise ValueError(f"nprocs must be a positive int, got {nprocs!r}")
    if backend not in ("gloo", "nccl"):
        raise ValueError(f"backend must be 'gloo' or 'nccl', got {backend!r}")
    check_timeout(collective_timeout_s)
    check_every(checkpoint_every)
    if reuse and (hit := cached(config, backend, root)) is not None:
        return hit
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "config.json"
        cfg.write_text(json.dumps(config.to_dict()))
        cmd = torchrun_command(cfg, nprocs, backend, root, collective_timeout_s, checkpoint_every)
        done = subprocess.run(cmd, env=torchrun_env(config), capture_output=True, text=True, timeout=timeout_s)
        if done.returncode != 0:
            raise RuntimeError(f"torchrun failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    result = cached(config, backend, root)
    if result is None:
        raise RuntimeError("torchrun finished but wrote no result")
    return result
