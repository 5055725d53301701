"""The compiled kernels' cache (``kernels/jit_cache.py``): every kernel of ``engine`` and ``codecs`` is
cached in the folder keyed by the sources, those a factory builds after import too, so an
edit to any kernel's source never reloads stale machine code."""

import ast
import os
import subprocess
import sys

SCRIPT = r"""
import importlib, pathlib, pkgutil, sys
from numba.core.registry import CPUDispatcher
import thinwire.codecs, thinwire.engine
from thinwire.engine.kernels import huffman_stream
from thinwire.engine.kernels import half, jit_cache

folder = pathlib.Path(jit_cache._fresh_folder())
half._kernels(False), half._kernels(True), half._fold_kernels(False), half._fold_kernels(True)
built = [k for variant in huffman_stream.VARIANTS for k in huffman_stream._encoders(*variant)]
built += [k for bf16 in (False, True) for k in half._kernels(bf16) + half._fold_kernels(bf16)]
kernels = list(built)
for info in [*pkgutil.walk_packages(thinwire.engine.__path__, "thinwire.engine."),
             *pkgutil.walk_packages(thinwire.codecs.__path__, "thinwire.codecs.")]:
    module = importlib.import_module(info.name)
    kernels += [v for v in vars(module).values() if isinstance(v, CPUDispatcher) and v._cache.__class__.__name__ != "NullCache"]
outside = sorted({f"{k.py_func.__module__}.{k.py_func.__qualname__}" for k in kernels
                  if not pathlib.Path(k._cache._cache_path).is_relative_to(folder)})
assert len(kernels) > 50 and len(built) == 35, (len(kernels), len(built))
assert not outside, outside
"""


def test_every_kernel_is_cached_in_the_folder_keyed_by_the_sources(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["THINWIRE_CACHE"] = str(tmp_path)
    subprocess.run([sys.executable, "-c", SCRIPT], env=env, check=True, timeout=600)


# Kernels built by factories, closures over other kernels (a Huffman encoder over its
# group's loop, a 16-bit conversion over its per-piece loop, a width table over the packer),
# each run once -> for each: (name, signatures loaded from the cache, signatures compiled).
CLOSURES = r"""
import numpy as np, torch
from thinwire.engine.kernels import huffman_stream
from thinwire.engine.kernels import bitpack, half
serial, _, chunk_bits = huffman_stream._encoders(*huffman_stream.VARIANTS[0])
symbols, packed, table = np.zeros(8, np.uint8), np.array([1 << 8 | 1], np.uint64), np.zeros(1 << 16, np.uint64)
serial(symbols, table, packed, 4, np.zeros(16, np.uint8), np.zeros(2, np.int64))
chunk_bits(symbols, table, packed, 4, np.zeros(2, np.int64))
half.narrow(np.ones(10, np.float32), np.empty(10, np.uint16), True)
bitpack.pack(torch.arange(40) % 8, 3)
ran = [serial, chunk_bits, half._kernels(True)[0], bitpack._pack_width.fixed[3]]
print([(k.py_func.__qualname__, sum(k.stats.cache_hits.values()), sum(k.stats.cache_misses.values())) for k in ran])
"""


def test_a_factorys_kernels_are_loaded_from_the_cache_by_the_next_process(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["THINWIRE_CACHE"] = str(tmp_path)

    def counts():
        done = subprocess.run([sys.executable, "-c", CLOSURES], env=env, check=True, timeout=600,
                              capture_output=True, text=True)
        return ast.literal_eval(done.stdout.strip().splitlines()[-1])

    first, second = counts(), counts()
    assert len(first) == 4 and all(compiled > 0 and loaded == 0 for _, loaded, compiled in first), first
    assert all(compiled == 0 and loaded > 0 for _, loaded, compiled in second), second


def test_kernels_a_factory_builds_for_other_parameters_are_keyed_apart():
    """A factory's kernels share their name and code; only what they close over (a group
    size, a per-format loop, through the kernels they call) tells them apart, so it must
    tell their cache entries apart."""
    from thinwire.engine.kernels import huffman_stream
    from thinwire.engine.kernels import half, jit_cache

    def key(kernel):
        return repr(jit_cache._described(kernel.py_func))

    for built in ([huffman_stream._encoders(*v) for v in huffman_stream.VARIANTS],
                  [half._kernels(bf16) for bf16 in (False, True)], [half._fold_kernels(bf16) for bf16 in (False, True)]):
        for role in zip(*built):
            assert len({k.py_func.__qualname__ for k in role}) == 1
            assert len({key(k) for k in role}) == len(role), role[0].py_func.__qualname__
