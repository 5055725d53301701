"""``python -m thinwire.datasets.download_cifar10 DEST``: fetch CIFAR-10 (needs internet)."""

from __future__ import annotations

import hashlib
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
MD5 = "c58f30108f718f92721af3b95e74349a"


def main(dest: str) -> None:
    target = Path(dest)
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "cifar-10-python.tar.gz"
        print(f"downloading {URL}")
        urllib.request.urlretrieve(URL, archive)
        digest = hashlib.md5(archive.read_bytes()).hexdigest()
        if digest != MD5:
            raise SystemExit(f"MD5 {digest} != {MD5}: download damaged")
        with tarfile.open(archive) as tar:
            tar.extractall(target, filter="data")
    print(f"CIFAR-10 is in {target / 'cifar-10-batches-py'}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "data/cifar10")
