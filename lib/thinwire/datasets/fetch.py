"""``thinwire data fetch NAME [--to DIR] [--from URL]``: a dataset from its published source.

Each file downloads into ``<file>.part`` beside its place; an interrupted download resumes
from the bytes already there (an HTTP range request; a server that ignores it sends the
whole file again). A finished file is MD5-checked before it takes its name: MNIST and
Fashion-MNIST by the digest of each uncompressed file (the ones ``idx.FILES`` checks on every
load, so a mirror's own gzip level does not matter), CIFAR-10 by the published digest of its
archive, which is then unpacked (tar members filtered as data: no links out, no devices).
A file already in place with the right digest is not fetched again. A damaged download
raises ``DatasetChecksumError`` and leaves nothing under the final name.

The sources are the ones the datasets' authors publish (MNIST from the PyTorch mirror first:
LeCun's own page refuses scripted downloads at times). ``--from URL`` takes the files from
another base URL instead (a local mirror; the tests serve ``data/`` on loopback).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import sys
import tarfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from .checked_file import DatasetChecksumError
from .cifar10 import ARCHIVE_MD5, BATCHES, batches_folder
from .idx import FILES

CHUNK = 1 << 20
TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Source:
    """Where a dataset's files come from: ``mirrors`` (base URLs, tried in order), ``files``
    ({remote file name: MD5}), ``folder`` (under the data folder), and whether the MD5 is of
    the uncompressed bytes (gzip files) or of the ``archive`` to unpack."""
    mirrors: tuple[str, ...]
    files: dict[str, str]
    folder: str
    archive: bool = False


def _gz(name: str) -> dict[str, str]:
    return {f"{f}.gz": md5 for f, md5 in FILES[name].items()}


SOURCES = {
    "mnist": Source(("https://ossci-datasets.s3.amazonaws.com/mnist/", "https://yann.lecun.com/exdb/mnist/"),
                    _gz("mnist"), "mnist"),
    "fashion_mnist": Source(("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",),
                            _gz("fashion-mnist"), "fashion-mnist"),
    "cifar10": Source(("https://www.cs.toronto.edu/~kriz/",), {"cifar-10-python.tar.gz": ARCHIVE_MD5}, "cifar10",
                      archive=True),
}


def _digest(path: Path, archive: bool) -> str:
    """The MD5 ``SOURCES`` publishes for ``path``: of the archive, or of the gzip file's
    content ("(not a gzip file)" when it has none)."""
    try:
        raw = path.read_bytes()
        return hashlib.md5(raw if archive else gzip.decompress(raw)).hexdigest()
    except (OSError, EOFError, gzip.BadGzipFile):
        return "(not a gzip file)"


def _download(url: str, part: Path, say) -> None:
    """``url`` into ``part``, resuming after the bytes ``part`` already holds."""
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        response = urllib.request.urlopen(request, timeout=TIMEOUT_S)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # nothing after the bytes we hold: the file is whole
            return
        raise
    with response:
        resumed = have and response.status == 206 and response.headers.get("Content-Range", "").startswith(
            f"bytes {have}-")
        total = response.headers.get("Content-Length")
        say(f"  {url} ({'resumed after ' + _size(have) + ', ' if resumed else ''}"
            f"{_size(int(total)) if total else 'size unknown'} to go)")
        with open(part, "ab" if resumed else "wb") as out:
            while chunk := response.read(CHUNK):
                out.write(chunk)


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def fetch(name: str, to: Path, mirror: str | None = None, say=None) -> Path:
    """Download dataset ``name`` (one of ``SOURCES``) into ``to/<its folder>``, checked; the
    folder. ``mirror``: a base URL to take the files from instead of the published sources."""
    if name not in SOURCES:
        from ..validation import did_you_mean
        raise ValueError(f"dataset {name!r} is not allowed{did_you_mean([name], SOURCES)}: it must be one of "
                         f"{list(SOURCES)}")
    say = say or (lambda line: print(line, file=sys.stderr))
    source = SOURCES[name]
    folder = to / source.folder
    folder.mkdir(parents=True, exist_ok=True)
    mirrors = (mirror if mirror.endswith("/") else mirror + "/",) if mirror else source.mirrors
    if source.archive and _unpacked(folder):
        say(f"{name} is in {batches_folder(folder)}, each batch's MD5 checked")
        return folder
    for file, md5 in source.files.items():
        final, part = folder / file, folder / (file + ".part")
        if final.exists() and _digest(final, source.archive) == md5:
            say(f"{final}: already there, MD5 checked")
            continue
        failures = []
        for base in mirrors:
            try:
                say(f"{final}:")
                _download(base + file, part, say)
                break
            except urllib.error.HTTPError as exc:
                failures.append(f"{base + file}: HTTP {exc.code} {exc.reason}")
            except (urllib.error.URLError, OSError) as exc:
                failures.append(f"{base + file}: {getattr(exc, 'reason', exc)}")
        else:
            raise ConnectionError(f"could not download {file} ({'; '.join(failures)}); run the command again to "
                                  "resume, or give another source with --from URL")
        got = _digest(part, source.archive)
        if got != md5:
            part.unlink()
            raise DatasetChecksumError(f"{file} from {base}: MD5 {got} != published {md5}; the download was damaged "
                                       "or the source serves another file (removed; run the command again)")
        os.replace(part, final)
    if source.archive:
        for file in source.files:
            with tarfile.open(folder / file) as tar:
                tar.extractall(folder, filter="data")
            (folder / file).unlink()
    say(f"{name} is in {folder}")
    return folder


def _unpacked(folder: Path) -> bool:
    """CIFAR-10's batches all unpacked and MD5-checked (the archive is removed once unpacked)."""
    where = batches_folder(folder)
    return all((where / b).exists() and hashlib.md5((where / b).read_bytes()).hexdigest() == md5
               for b, md5 in BATCHES.items())

