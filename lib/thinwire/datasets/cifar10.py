"""CIFAR-10 from the standard ``cifar-10-batches-py`` pickles (Krizhevsky, 2009).

Read from ``data/cifar10/`` (or ``data/cifar10/cifar-10-batches-py/``) when present;
every batch file is MD5-checked. ``thinwire data fetch cifar10`` (``fetch.py``) downloads
and unpacks it on a machine with internet.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import torch

from .checked_file import DatasetMissingError, read_checked
from .dataset import Dataset

BATCHES = {
    "data_batch_1": "c99cafc152244af753f735de768cd75f",
    "data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
    "data_batch_3": "54ebc095f3ab1f0389bbae665268c751",
    "data_batch_4": "634d18415352ddfa80567beed471001a",
    "data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb",
    "test_batch": "40351d587109b95175f43aff81a1287e",
}
ARCHIVE_MD5 = "c58f30108f718f92721af3b95e74349a"  # cifar-10-python.tar.gz, as published
MEAN = (0.4914, 0.4822, 0.4465)
STD = (0.2470, 0.2435, 0.2616)
HOW_TO_GET = ("CIFAR-10 is not shipped: run `thinwire data fetch cifar10` (--to DIR, then THINWIRE_DATA=DIR, "
              "for another folder), or copy the cifar-10-batches-py folder into data/cifar10/.")


def _batch(raw: bytes) -> tuple[torch.Tensor, torch.Tensor]:
    entry = pickle.loads(raw, encoding="latin1")
    images = np.asarray(entry["data"], dtype=np.uint8).reshape(-1, 3, 32, 32)
    labels = np.asarray(entry.get("labels", entry.get("fine_labels")), dtype=np.int64)
    return torch.from_numpy(images.copy()), torch.from_numpy(labels)


def batches_folder(folder: Path) -> Path:
    """``folder``'s ``cifar-10-batches-py/`` (as the archive unpacks) if there is one, else ``folder``."""
    return folder / "cifar-10-batches-py" if (folder / "cifar-10-batches-py").is_dir() else folder


def load_cifar10(root: Path, md5s: dict[str, str | None] = BATCHES) -> Dataset:
    folder = batches_folder(root / "cifar10")
    if not folder.is_dir():
        raise DatasetMissingError(f"{folder} not found. {HOW_TO_GET}")
    parts = {name: _batch(read_checked(folder / name, md5, HOW_TO_GET)) for name, md5 in md5s.items()}
    train = [parts[n] for n in md5s if n.startswith("data_batch")]
    return Dataset(
        name="cifar10",
        train_images=torch.cat([p[0] for p in train]),
        train_labels=torch.cat([p[1] for p in train]),
        test_images=parts["test_batch"][0],
        test_labels=parts["test_batch"][1],
        mean=MEAN, std=STD,
    )
