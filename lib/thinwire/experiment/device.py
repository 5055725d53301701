"""The ``device`` setting: where models, replicas, batches, optimizers and codec tensor
work live. ``auto`` takes the GPU when torch sees one, else the CPU; ``cuda`` without a
GPU is an error raised before any data loads. Under torchrun rank r uses GPU
``LOCAL_RANK``; in one process every simulated worker shares GPU 0 (batched replicas).
"""

from __future__ import annotations

import os

import torch

DEVICES = ("auto", "cpu", "cuda")


def resolve_device(setting: str, local_rank: int | None = None) -> torch.device:
    if setting not in DEVICES:
        raise ValueError(f"device={setting!r} is not allowed: device must be one of {list(DEVICES)}")
    if setting == "cpu":
        return torch.device("cpu")
    available = torch.cuda.is_available()
    if setting == "cuda" and not available:
        raise ValueError("device='cuda' is not allowed on this machine: torch.cuda.is_available() is False "
                         f"(no GPU visible, or a CPU-only torch build: {torch.__version__}); "
                         "use device='cpu', or 'auto' to take a GPU only where there is one")
    if not available:
        return torch.device("cpu")
    index = int(os.environ.get("LOCAL_RANK", 0)) if local_rank is None else local_rank
    if index >= torch.cuda.device_count():
        raise ValueError(f"LOCAL_RANK={index} is not allowed: this machine has {torch.cuda.device_count()} GPU(s)")
    return torch.device("cuda", index)


def synchronize(device: torch.device) -> None:
    """Wait for queued GPU work, so host timers measure it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
