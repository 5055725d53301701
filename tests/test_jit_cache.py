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
# each run once, the 16-bit conversion first, in the formats named on the command line, over
# two pieces (its parallel loop calls its per-piece loop) -> for each: (name, signatures loaded
# from the cache, signatures compiled).
CLOSURES = r"""
import sys
import numpy as np, torch
from thinwire.engine.kernels import huffman_stream
from thinwire.engine.kernels import bitpack, half
x = np.linspace(-70000, 70000, 2 * half.PIECE, dtype=np.float32)
for bf16 in [name == "bf16" for name in sys.argv[1:]]:
    got = np.empty(x.size, np.uint16)
    half.narrow(x, got, bf16)
    want = torch.from_numpy(x).to(torch.bfloat16 if bf16 else torch.float16).view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(got, want), ("bf16" if bf16 else "fp16", np.flatnonzero(got != want)[:5])
serial, _, chunk_bits = huffman_stream._encoders(*huffman_stream.VARIANTS[0])
symbols, packed, table = np.zeros(8, np.uint8), np.array([1 << 8 | 1], np.uint64), np.zeros(1 << 16, np.uint64)
serial(symbols, table, packed, 4, np.zeros(16, np.uint8), np.zeros(2, np.int64))
chunk_bits(symbols, table, packed, 4, np.zeros(2, np.int64))
bitpack.pack(torch.arange(40) % 8, 3)
ran = [serial, chunk_bits, *[half._kernels(name == "bf16")[1] for name in sys.argv[1:]], bitpack._pack_width.fixed[3]]
print([(k.py_func.__qualname__, sum(k.stats.cache_hits.values()), sum(k.stats.cache_misses.values())) for k in ran])
"""


def test_a_factorys_kernels_are_loaded_from_the_cache_by_the_next_process(tmp_path):
    """Also: two variants of one factory's kernel, each compiled by its own process, loaded
    together by a third, each run its own code (numba names compiled code by name and a
    number counted per process: the two had one name, and fp16 ran bfloat16's loop)."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["THINWIRE_CACHE"] = str(tmp_path)

    def counts(*formats):
        done = subprocess.run([sys.executable, "-c", CLOSURES, *formats], env=env, timeout=600,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        return ast.literal_eval(done.stdout.strip().splitlines()[-1])

    first, other, second = counts("bf16"), counts("fp16"), counts("bf16", "fp16")
    assert len(first) == 4 and all(compiled > 0 and loaded == 0 for _, loaded, compiled in first), first
    assert other[2][2] > 0 and other[2][1] == 0, other
    assert len(second) == 5 and all(compiled == 0 and loaded > 0 for _, loaded, compiled in second), second


def test_kernels_a_factory_builds_for_other_parameters_are_keyed_apart():
    """A factory's kernels share their code; only what they close over (a group size, a
    per-format loop, through the kernels they call) tells them apart, so it must tell their
    cache entries and their compiled names apart."""
    from thinwire.engine.kernels import huffman_stream
    from thinwire.engine.kernels import half, jit_cache

    def key(kernel):
        return repr(jit_cache._described(kernel.py_func))

    for built in ([huffman_stream._encoders(*v) for v in huffman_stream.VARIANTS],
                  [half._kernels(bf16) for bf16 in (False, True)], [half._fold_kernels(bf16) for bf16 in (False, True)]):
        for role in zip(*built):
            assert len({k.py_func.__qualname__.rsplit("_", 1)[0] for k in role}) == 1
            assert len({k.py_func.__qualname__ for k in role}) == len(role), role[0].py_func.__qualname__
            assert len({key(k) for k in role}) == len(role), role[0].py_func.__qualname__
