"""``thinwire data fetch``: checked, resumable downloads, tested against a server on loopback
serving the repository's own data files (no traffic leaves the machine)."""

import gzip
import hashlib
import io
import pickle
import shutil
import tarfile

import numpy as np
import pytest

from loopback_http import serving
from thinwire.cli import main
from thinwire.datasets import DatasetChecksumError, DatasetMissingError
from thinwire.datasets import fetch as fetch_module
from thinwire.datasets.cifar10 import load_cifar10
from thinwire.datasets.fetch import SOURCES, fetch
from thinwire.datasets.idx import load_idx_dataset
from thinwire.paths import REPO_ROOT

DATA = REPO_ROOT / "data"
TRAIN_IMAGES = "train-images-idx3-ubyte.gz"


def test_mnist_downloads_checked_into_the_folder_runs_read(tmp_path):
    lines = []
    with serving(DATA / "mnist") as (url, server):
        folder = fetch("mnist", tmp_path, mirror=url, say=lines.append)
        assert sorted(p for p, _ in server.requests) == sorted(f"/{f}" for f in SOURCES["mnist"].files)
        assert all(r is None for _, r in server.requests)
        again = []
        fetch("mnist", tmp_path, mirror=url, say=again.append)
        assert len(server.requests) == 4  # every file already there and checked: nothing asked again
    assert folder == tmp_path / "mnist" and not list(folder.glob("*.part"))
    data = load_idx_dataset("mnist", tmp_path)
    assert len(data.train_labels) == 60000 and len(data.test_labels) == 10000
    assert sum("already there, MD5 checked" in line for line in again) == 4


@pytest.mark.parametrize("ranges", [True, False], ids=["server resumes", "server sends it all"])
def test_an_interrupted_download_resumes_after_the_bytes_it_holds(tmp_path, ranges):
    whole = (DATA / "mnist" / TRAIN_IMAGES).read_bytes()
    folder = tmp_path / "mnist"
    folder.mkdir()
    (folder / (TRAIN_IMAGES + ".part")).write_bytes(whole[:len(whole) // 3])
    for f in SOURCES["mnist"].files:
        if f != TRAIN_IMAGES:
            shutil.copy(DATA / "mnist" / f, folder / f)
    lines = []
    with serving(DATA / "mnist", ranges=ranges) as (url, server):
        fetch("mnist", tmp_path, mirror=url, say=lines.append)
    assert server.requests == [(f"/{TRAIN_IMAGES}", f"bytes={len(whole) // 3}-")]
    assert (folder / TRAIN_IMAGES).read_bytes() == whole and not (folder / (TRAIN_IMAGES + ".part")).exists()
    assert any("resumed after" in line for line in lines) == ranges


def test_a_damaged_download_raises_and_keeps_nothing(tmp_path):
    served = tmp_path / "served"
    shutil.copytree(DATA / "mnist", served)
    labels = bytearray(gzip.decompress((served / "t10k-labels-idx1-ubyte.gz").read_bytes()))
    labels[100] ^= 1  # one label changed: a valid gzip file of the wrong bytes
    (served / "t10k-labels-idx1-ubyte.gz").write_bytes(gzip.compress(bytes(labels)))
    with serving(served) as (url, _):
        with pytest.raises(DatasetChecksumError, match="t10k-labels-idx1-ubyte.gz.*MD5 .* != published 27ae3e4e"):
            fetch("mnist", tmp_path / "to", mirror=url, say=lambda _: None)
    left = {p.name for p in (tmp_path / "to" / "mnist").iterdir()}
    assert "t10k-labels-idx1-ubyte.gz" not in left and not any(n.endswith(".part") for n in left)


def test_the_command_line_fetches_and_names_what_went_wrong(tmp_path, capsys):
    with serving(DATA / "fashion-mnist") as (url, _):
        assert main(["data", "fetch", "fashion_mnist", "--to", str(tmp_path), "--from", url]) == 0
    err = capsys.readouterr().err
    assert f"fashion_mnist is in {tmp_path / 'fashion-mnist'}" in err and f"THINWIRE_DATA={tmp_path}" in err
    assert load_idx_dataset("fashion-mnist", tmp_path).train_images.shape == (60000, 1, 28, 28)
    assert main(["data", "fetch", "mnits", "--to", str(tmp_path)]) == 2
    assert "dataset 'mnits' is not allowed (did you mean 'mnist'?)" in capsys.readouterr().err
    with serving(tmp_path / "empty-mirror") as (url, _):
        assert main(["data", "fetch", "mnist", "--to", str(tmp_path / "x"), "--from", url]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("thinwire: could not download") and "HTTP 404 Not Found" in last and "--from URL" in last


def test_missing_data_names_the_fetch_command(tmp_path):
    with pytest.raises(DatasetMissingError, match="thinwire data fetch fashion_mnist"):
        load_idx_dataset("fashion-mnist", tmp_path)
    with pytest.raises(DatasetMissingError, match="thinwire data fetch cifar10"):
        load_cifar10(tmp_path)


def _cifar_like_archive() -> bytes:
    """A cifar-10-python.tar.gz of the published layout with two tiny batches."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name in ("data_batch_1", "test_batch"):
            batch = pickle.dumps({"data": np.full((2, 3072), 7, np.uint8), "labels": [1, 2]})
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(batch)
            tar.addfile(info, io.BytesIO(batch))
    return out.getvalue()


def test_cifar10_archive_is_checked_then_unpacked(tmp_path, monkeypatch):
    archive = _cifar_like_archive()
    served = tmp_path / "served"
    served.mkdir()
    (served / "cifar-10-python.tar.gz").write_bytes(archive)
    source = SOURCES["cifar10"]
    monkeypatch.setitem(SOURCES, "cifar10", fetch_module.Source(
        source.mirrors, {"cifar-10-python.tar.gz": hashlib.md5(archive).hexdigest()}, "cifar10", archive=True))
    with serving(served) as (url, _):
        folder = fetch("cifar10", tmp_path / "data", mirror=url, say=lambda _: None)
    assert sorted(p.name for p in (folder / "cifar-10-batches-py").iterdir()) == ["data_batch_1", "test_batch"]
    assert not (folder / "cifar-10-python.tar.gz").exists()
    data = load_cifar10(tmp_path / "data", md5s={"data_batch_1": None, "test_batch": None})
    assert data.train_images.shape == (2, 3, 32, 32) and data.test_labels.tolist() == [1, 2]
    monkeypatch.setitem(SOURCES, "cifar10", source)  # the published digest: this archive is not it
    with serving(served) as (url, _):
        with pytest.raises(DatasetChecksumError, match="c58f30108f718f92721af3b95e74349a"):
            fetch("cifar10", tmp_path / "other", mirror=url, say=lambda _: None)
