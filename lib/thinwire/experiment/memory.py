"""Before a run loads data: will it fit in memory, and can its results be written?

``estimate_bytes`` counts the model's parameters on torch's ``meta`` device (no memory
used) and multiplies by the copies a run keeps: each simulated worker's replica holds
parameters, gradients, optimizer state and codec residuals or copies (``PER_WORKER``
model-sized float32 tensors), and the server or center holds a few more (``SHARED``).
It is an estimate of the order of magnitude, meant to refuse a run that cannot fit (a
10^8-unit hidden layer, a thousand workers of a large model) with a clear message instead
of an allocator traceback after the data has loaded; it is checked against the memory
the machine has available, on the CPU only.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import torch

PER_WORKER = 5   # parameters, gradients, momentum, a residual, a copy
SHARED = 6       # the server's parameters, optimizer state, accumulators, copies
DATA_BYTES = 4 * 70000 * 3 * 32 * 32  # the largest dataset as float32, once


def parameter_count(config) -> int:
    from ..models import build_model
    with torch.device("meta"):
        model = build_model(config.model, config.input_shape, 10, config.seed)
    return sum(p.numel() for p in model.parameters())


def estimate_bytes(config, local_workers: int | None = None) -> int:
    """Bytes a run of ``config`` needs, about, for ``local_workers`` simulated here."""
    workers = config.workers if local_workers is None else local_workers
    return 4 * parameter_count(config) * (PER_WORKER * workers + SHARED) + DATA_BYTES


def available_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def check_fits(config, device: torch.device, local_workers: int | None = None) -> None:
    """``ValueError`` with the estimate when the run cannot fit the host's available memory."""
    if device.type != "cpu":
        return
    need, have = estimate_bytes(config, local_workers), available_bytes()
    if have is not None and need > have:
        params = parameter_count(config)
        raise ValueError(f"this run needs about {need / 2**30:.1f} GiB ({params:,} parameters x 4 bytes x "
                         f"({PER_WORKER} x {config.workers if local_workers is None else local_workers} workers + "
                         f"{SHARED})), more than the {have / 2**30:.1f} GiB available: use fewer workers, smaller "
                         "hidden layers, or run one rank per worker under torchrun")


def check_writable(folder: Path) -> None:
    """``ValueError`` when the results folder cannot be created or written (before training)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-test-", delete=True):
            pass
    except OSError as exc:
        raise ValueError(f"results folder {folder} is not usable ({exc.strerror or exc}): pass --results "
                         "(or root=) a writable folder") from None
