import gzip
import pickle
import shutil

import numpy as np
import pytest
import torch

from thinwire.datasets import (BatchStream, DatasetChecksumError, DatasetMissingError, load_dataset,
                               normalize, partition, random_crop_flip)
from thinwire.datasets.cifar10 import load_cifar10
from thinwire.datasets.idx import load_idx_dataset
from thinwire.paths import data_dir


def test_embedded_datasets_load_with_their_published_sizes():
    for name in ("mnist", "fashion_mnist"):
        d = load_dataset(name)
        assert d.train_images.shape == (60000, 1, 28, 28) and d.train_images.dtype == torch.uint8
        assert d.test_images.shape == (10000, 1, 28, 28)
        assert sorted(d.train_labels.unique().tolist()) == list(range(10))


def test_damaged_file_fails_md5(tmp_path):
    shutil.copytree(data_dir() / "mnist", tmp_path / "mnist")
    path = tmp_path / "mnist" / "t10k-labels-idx1-ubyte.gz"
    raw = bytearray(gzip.decompress(path.read_bytes()))
    raw[100] ^= 1
    path.write_bytes(gzip.compress(bytes(raw)))
    with pytest.raises(DatasetChecksumError, match="MD5"):
        load_idx_dataset("mnist", tmp_path)


def test_missing_datasets_say_how_to_get_them(tmp_path):
    with pytest.raises(DatasetMissingError, match="make data-cifar10"):
        load_cifar10(tmp_path)
    with pytest.raises(DatasetMissingError, match="git checkout"):
        load_idx_dataset("mnist", tmp_path)


def test_cifar10_reader_on_synthetic_batches(tmp_path):
    folder = tmp_path / "cifar10" / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for name in names:
        entry = {"data": rng.integers(0, 256, (4, 3072), dtype=np.uint8), "labels": list(rng.integers(0, 10, 4))}
        (folder / name).write_bytes(pickle.dumps(entry))
    d = load_cifar10(tmp_path, md5s={n: None for n in names})
    assert d.train_images.shape == (20, 3, 32, 32) and d.test_labels.shape == (4,)
    with pytest.raises(DatasetChecksumError):
        load_cifar10(tmp_path)  # the real MD5s do not match synthetic files


def test_partition_is_disjoint_seeded_and_even():
    shards = partition(1003, 4, seed=7)
    assert [len(s) for s in shards] == [250] * 4
    assert len(torch.cat(shards).unique()) == 1000
    assert all(torch.equal(a, b) for a, b in zip(shards, partition(1003, 4, seed=7)))
    assert not torch.equal(shards[0], partition(1003, 4, seed=8)[0])
    with pytest.raises(ValueError, match="workers"):
        partition(10, 0, 0)


def test_batch_stream_covers_each_epoch_once_and_resumes():
    stream = BatchStream(torch.arange(100, 140), batch_size=8, seed=1)
    epoch = torch.cat([stream.next_indices() for _ in range(5)])
    assert sorted(epoch.tolist()) == list(range(100, 140))
    saved = stream.state_dict()
    a = [stream.next_indices() for _ in range(7)]
    stream.load_state_dict(saved)
    assert all(torch.equal(x, y) for x, y in zip(a, [stream.next_indices() for _ in range(7)]))


def test_normalize_and_augment_whole_batches():
    images = torch.randint(0, 256, (16, 3, 32, 32), dtype=torch.uint8)
    x = normalize(images, (0.5, 0.5, 0.5), (0.25, 0.25, 0.25))
    assert x.dtype == torch.float32 and torch.allclose(x[0, 0, 0, 0], (images[0, 0, 0, 0] / 255 - 0.5) / 0.25)
    a = random_crop_flip(x, 4, torch.Generator().manual_seed(0))
    b = random_crop_flip(x, 4, torch.Generator().manual_seed(0))
    assert a.shape == x.shape and torch.equal(a, b)
    unpadded = random_crop_flip(x, 0, torch.Generator().manual_seed(1))
    assert all(torch.equal(u, v) or torch.equal(u, v.flip(-1)) for u, v in zip(unpadded, x))
