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
from pathlib import Path

from .config import RunConfig
from .result import Result
from .runner import cached


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(config: RunConfig, nprocs: int, backend: str = "gloo", root=None, reuse: bool = True,
           timeout_s: float = 1800) -> Result:
    """Run ``config`` under torchrun with ``nprocs`` ranks; returns the (cached) Result."""
    if not isinstance(nprocs, int) or nprocs < 1:
        raise ValueError(f"nprocs must be a positive int, got {nprocs!r}")
    if backend not in ("gloo", "nccl"):
        raise ValueError(f"backend must be 'gloo' or 'nccl', got {backend!r}")
    if reuse and (hit := cached(config, backend, root)) is not None:
        return hit
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "config.json"
        cfg.write_text(json.dumps(config.to_dict()))
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nprocs),
               "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
               "-m", "thinwire", "run", "--config", str(cfg), "--backend", backend, "--no-reuse"]
        if root is not None:
            cmd += ["--results", str(root)]
        env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), THINWIRE_PROGRESS="0")
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s)
        if done.returncode != 0:
            raise RuntimeError(f"torchrun failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    result = cached(config, backend, root)
    if result is None:
        raise RuntimeError("torchrun finished but wrote no result")
    return result
