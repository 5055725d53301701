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
    with pytest.raises(DatasetMissingError, match="thinwire data fetch cifar10"):
        load_cifar10(tmp_path)
    with pytest.raises(DatasetMissingError, match="thinwire data fetch mnist.*git checkout"):
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


def test_central_crop_and_per_image_standardisation():
    """MQGrad's inputs: the central 28x28 of a 32x32 image, then TF's per_image_standardization
    (mean 0, std 1 per image; a flat image divided by 1/sqrt(C*H*W), not by its zero std)."""
    from thinwire.datasets import central_crop, prepare
    x = torch.arange(2 * 3 * 32 * 32).reshape(2, 3, 32, 32).remainder(251).to(torch.uint8)
    crop = central_crop(x, 28)
    assert crop.shape == (2, 3, 28, 28) and torch.equal(crop, x[:, :, 2:30, 2:30])
    assert central_crop(x, 0) is x and central_crop(x, 32) is x
    with pytest.raises(ValueError, match="crop=33 is not allowed"):
        central_crop(x, 33)
    y = prepare(x, (0.5,) * 3, (0.25,) * 3, crop=28, standardize="image")
    flat = y.reshape(2, -1)
    torch.testing.assert_close(flat.mean(1), torch.zeros(2), atol=1e-5, rtol=0)
    torch.testing.assert_close(flat.std(1, correction=0), torch.ones(2))
    raw = crop[0].to(torch.float64)
    torch.testing.assert_close(y[0].double(), (raw - raw.mean()) / raw.std(correction=0), rtol=1e-5, atol=1e-5)
    flat_image = torch.full((1, 1, 28, 28), 7, dtype=torch.uint8)
    assert prepare(flat_image, (0.5,), (0.25,), standardize="image").abs().max() == 0
    one = torch.zeros(1, 1, 28, 28, dtype=torch.uint8)
    one[0, 0, 0, 0] = 255
    z = prepare(one, (0.5,), (0.25,), standardize="image")
    torch.testing.assert_close(z.std(correction=0), torch.tensor(1.0))  # std 255/28 > 1/28: divided by the std
    with pytest.raises(ValueError, match="standardize='mean' is not allowed"):
        prepare(x, (0.5,) * 3, (0.25,) * 3, standardize="mean")
    torch.testing.assert_close(prepare(x, (0.5,) * 3, (0.25,) * 3), normalize(x, (0.5,) * 3, (0.25,) * 3))


def test_crop_and_standardize_in_the_config():
    from thinwire.experiment import RunConfig
    c = RunConfig("mqgrad", dataset="cifar10", model="mqgrad_cnn", crop=28, standardize="image", workers=2)
    assert c.input_shape == (3, 28, 28)
    plain = RunConfig("mqgrad", dataset="mnist", model="mlp", workers=2)
    assert plain.input_shape == (1, 28, 28)
    assert plain.key() == RunConfig("mqgrad", dataset="mnist", model="mlp", workers=2, crop=0).key()
    assert plain.key() != plain.replace(crop=28).key() != plain.replace(standardize="image").key()
    for bad, match in ((dict(crop=33), r"crop=33 is not allowed: crop must be an int in \[0, 32\]"),
                       (dict(standardize="pixel"), "standardize='pixel' is not allowed"),
                       (dict(standardize="image", augment="crop_flip"), "augment='crop_flip' is not allowed")):
        with pytest.raises(ValueError, match=match):
            RunConfig("plump_dp", dataset="cifar10", model="mlp", **bad)
