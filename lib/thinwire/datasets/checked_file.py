"""Read a (possibly gzipped) file and check the MD5 of its uncompressed bytes."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path


class DatasetMissingError(FileNotFoundError):
    """A dataset file is not where thinwire looks; the message says how to get it."""


class DatasetChecksumError(ValueError):
    """A dataset file's MD5 does not match the published one."""


def read_checked(path: Path, md5: str | None, how_to_get: str) -> bytes:
    """Bytes of ``path`` (or ``path`` + '.gz'), MD5-checked when ``md5`` is given."""
    candidates = [path, path.with_name(path.name + ".gz")]
    found = next((p for p in candidates if p.exists()), None)
    if found is None:
        raise DatasetMissingError(f"{path} (or .gz) not found. {how_to_get}")
    raw = found.read_bytes()
    if found.suffix == ".gz":
        raw = gzip.decompress(raw)
    if md5 is not None:
        digest = hashlib.md5(raw).hexdigest()
        if digest != md5:
            raise DatasetChecksumError(f"{found}: MD5 {digest} != expected {md5}; the file is damaged or not the published one")
    return raw
