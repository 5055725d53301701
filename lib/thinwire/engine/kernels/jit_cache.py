"""Where the compiled kernels (numba, ``cache=True``) keep their machine code.

numba caches each compiled function beside its source file and checks only that file's
time stamp on load. Our kernels call kernels in other files (``bin_pack`` compiles
``bitpack.stream_chunk`` into itself), so editing one file could leave another file's
cached code stale. ``keyed_cache`` points numba at a folder named by a hash of every
source file of ``engine`` (all sub-packages) while the kernel modules are imported, and
while a factory builds kernels later (numba picks the folder when a function is
decorated): any edit starts a fresh cache. A kernel decorated outside it would be cached
beside its source and reloaded after an edit to a kernel it calls, stale, so
``engine/__init__`` imports every module that compiles kernels inside it, and the
factories (``half._kernels``, ``huffman_stream._encoders``) decorate inside it. Older folders are
removed. The folders live under ``paths.cache_dir()`` (``~/.cache/thinwire`` by default),
not in the package, which may be installed read-only, one group per installed copy (named
by a hash of its location): two checkouts on one machine never remove each other's. An
explicit ``NUMBA_CACHE_DIR`` is left alone.

A factory's kernels are closures, and numba keys a closure's cache entry by its pickled
variables: a kernel among them pickles with an identifier drawn afresh in each process, so
the entry was never found again: every process compiled them anew, and each index grew by
one entry per process. ``closure_kernel`` keys them by what they close over instead
(``_described``), and names each by a hash of them: numba names a compiled function by its
qualified name and a number counted in each process, so two variants of one closure compiled
by two processes could carry one name, and a third process loading both from the cache
called the first's code from the second (an fp16 conversion ran bfloat16's).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import shutil
import types
from pathlib import Path

import numpy as np
from numba import njit
from numba.core import config, serialize
from numba.core.caching import FunctionCache
from numba.core.dispatcher import Dispatcher
from numba.core.extending import _Intrinsic

HERE = Path(__file__).parents[2]  # the thinwire package
COMPILED = ("engine",)  # the package whose modules compile kernels (no codec compiles its own)


def source_hash() -> str:
    digest = hashlib.sha256()
    for package in COMPILED:
        for path in sorted((HERE / package).rglob("*.py")):
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


def _described(value, within: tuple = ()):
    """What a closure variable is, the same in every process: a compiled function or an
    intrinsic by its Python function, a function by its module, name, code and its own
    closure's variables; arrays by their bytes; plain values as they are. numba's own key
    pickles the variables, and a pickled kernel carries an identifier drawn afresh in each
    process."""
    if isinstance(value, Dispatcher):
        value = value.py_func
    elif isinstance(value, _Intrinsic):
        value = value._defn
    if isinstance(value, types.FunctionType):
        if value in within:   # a function that reaches itself
            return ("function", value.__module__, value.__qualname__)
        cells = tuple(_described(cell.cell_contents, within + (value,)) for cell in value.__closure__ or ())
        return ("function", value.__module__, value.__qualname__,
                hashlib.sha256(value.__code__.co_code).hexdigest(), cells)
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_described(v, within) for v in value))
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, hashlib.sha256(value.tobytes()).hexdigest())
    if value is None or isinstance(value, (bool, int, float, str, bytes, np.generic, np.dtype)):
        return (type(value).__name__, repr(value))
    return ("pickled", hashlib.sha256(serialize.dumps(value)).hexdigest())


class _ClosureCache(FunctionCache):
    """numba's cache of one compiled function, with its closure's variables keyed by
    ``_described``."""

    def _index_key(self, sig, codegen):
        return (sig, codegen.magic_tuple(), (hashlib.sha256(self._py_func.__code__.co_code).hexdigest(),
                                             _closure_digest(self._py_func)))


def closure_kernel(**options):
    """``njit(cache=True, **options)`` for a kernel that a factory builds (a closure): its
    cached machine code is found again by a later process. numba keys a closure's cache
    entry by its pickled variables, which differ in every process when they hold a
    compiled function: such a kernel was compiled again in each process, and its cache
    grew by one entry each time."""
    def decorate(function):
        function.__qualname__ += "_" + _closure_digest(function)[:12]
        kernel = njit(**options)(function)
        kernel._cache = _ClosureCache(kernel.py_func)   # what cache=True sets, with our key
        return kernel
    return decorate


def _closure_digest(function) -> str:
    """A hash of what ``function`` closes over (``_described``)."""
    cells = tuple(cell.cell_contents for cell in function.__closure__ or ())
    return hashlib.sha256(repr(_described(cells)).encode()).hexdigest()


def keyed(factory):
    """``factory`` (a function that decorates kernels when called) run inside
    ``keyed_cache``, so the kernels it builds are cached in the keyed folder too."""
    @functools.wraps(factory)
    def built(*args, **kwargs):
        with keyed_cache():
            return factory(*args, **kwargs)
    return built
