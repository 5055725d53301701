"""MNIST and Fashion-MNIST from gzip IDX files under ``data/`` (LeCun et al., 1998)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import torch

from .checked_file import read_checked
from .dataset import Dataset

FILES = {
    "mnist": {
        "train-images-idx3-ubyte": "6bbc9ace898e44ae57da46a324031adb",
        "train-labels-idx1-ubyte": "a25bea736e30d166cdddb491f175f624",
        "t10k-images-idx3-ubyte": "2646ac647ad5339dbf082846283269ea",
        "t10k-labels-idx1-ubyte": "27ae3e4e09519cfbb04c329615203637",
    },
    "fashion-mnist": {
        "train-images-idx3-ubyte": "f4a8712d7a061bf5bd6d2ca38dc4d50a",
        "train-labels-idx1-ubyte": "9018921c3c673c538a1fc5bad174d6f9",
        "t10k-images-idx3-ubyte": "8181f5470baa50b63fa0f6fddb340f0a",
        "t10k-labels-idx1-ubyte": "15d484375f8d13e6eb1aabb0c3f46965",
    },
}
STATS = {"mnist": ((0.1307,), (0.3081,)), "fashion-mnist": ((0.2860,), (0.3530,))}


def parse_idx(raw: bytes) -> torch.Tensor:
    """An IDX file (unsigned-byte data) as a uint8 tensor of its declared shape."""
    zero, dtype_code, ndim = struct.unpack_from(">HBB", raw, 0)
    if zero != 0 or dtype_code != 0x08:
        raise ValueError(f"not an unsigned-byte IDX file (header {zero:#x}, type {dtype_code:#x})")
    shape = struct.unpack_from(f">{ndim}I", raw, 4)
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    return torch.from_numpy(data.copy()).reshape(shape)


def load_idx_dataset(name: str, root: Path) -> Dataset:
    folder = root / name
    command = name.replace("-", "_")
    how = (f"Run `thinwire data fetch {command}` (--to DIR, then THINWIRE_DATA=DIR, for another folder); in a "
           f"checkout, restore it from git instead (git checkout -- data/{name}).")
    t = {f: parse_idx(read_checked(folder / f, md5, how)) for f, md5 in FILES[name].items()}
    mean, std = STATS[name]
    return Dataset(
        name=name,
        train_images=t["train-images-idx3-ubyte"].unsqueeze(1),
        train_labels=t["train-labels-idx1-ubyte"].long(),
        test_images=t["t10k-images-idx3-ubyte"].unsqueeze(1),
        test_labels=t["t10k-labels-idx1-ubyte"].long(),
        mean=mean, std=std,
    )
