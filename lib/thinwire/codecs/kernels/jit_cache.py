"""Where the compiled kernels (numba, ``cache=True``) keep their machine code.

numba caches each compiled function beside its source file and checks only that file's
time stamp on load. Our kernels call kernels in other files (``bin_pack`` compiles
``bitpack.stream_chunk`` into itself), so editing one file could leave another file's
cached code stale. ``keyed_cache`` points numba at a folder named by a hash of every
source file of ``codecs`` (all sub-packages) while the kernel modules are imported, and
while a factory builds kernels later (numba picks the folder when a function is
decorated): any edit starts a fresh cache. A kernel decorated outside it would be cached
beside its source and reloaded after an edit to a kernel it calls, stale, so
``codecs/__init__`` imports every module that compiles kernels inside it, and the
factories (``half._kernels``, ``huffman_stream._encoders``) decorate inside it. Older folders are
removed. The folders live under ``paths.cache_dir()`` (``~/.cache/thinwire`` by default),
not in the package, which may be installed read-only, one group per installed copy (named
by a hash of its location): two checkouts on one machine never remove each other's. An explicit ``NUMBA_CACHE_DIR`` is
left alone.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import shutil
from pathlib import Path

from numba.core import config

HERE = Path(__file__).parents[1]  # the codecs package


def source_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(HERE.rglob("*.py")):
        digest.update(str(path.relative_to(HERE)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@functools.cache
def _fresh_folder() -> Path:
    from ...paths import cache_dir
    location = hashlib.sha256(str(HERE.resolve()).encode()).hexdigest()[:12]
    root = cache_dir() / f"numba-{location}"
    folder = root / source_hash()
    for old in root.iterdir() if root.is_dir() else ():
        if old != folder:
            shutil.rmtree(old, ignore_errors=True)
    return folder


@contextlib.contextmanager
def keyed_cache():
    if config.CACHE_DIR:
        yield
        return
    try:
        folder = _fresh_folder()
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only install: numba's own locations
        yield
        return
    config.CACHE_DIR = str(folder)
    try:
        yield
    finally:
        config.CACHE_DIR = ""


def keyed(factory):
    """``factory`` (a function that decorates kernels when called) run inside
    ``keyed_cache``, so the kernels it builds are cached in the keyed folder too."""
    @functools.wraps(factory)
    def built(*args, **kwargs):
        with keyed_cache():
            return factory(*args, **kwargs)
    return built
