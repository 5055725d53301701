"""The compiled kernels' cache (``kernels/jit_cache.py``): every kernel of ``codecs`` is
cached in the folder keyed by the sources, those a factory builds after import too, so an
edit to any kernel's source never reloads stale machine code."""

import os
import subprocess
import sys

SCRIPT = r"""
import importlib, pathlib, pkgutil, sys
from numba.core.registry import CPUDispatcher
import thinwire.codecs
from thinwire.codecs.entropy import huffman_stream
from thinwire.codecs.kernels import half, jit_cache

folder = pathlib.Path(jit_cache._fresh_folder())
half._kernels(False), half._kernels(True), half._fold_kernels(False), half._fold_kernels(True)
built = [k for variant in huffman_stream.VARIANTS for k in huffman_stream._encoders(*variant)]
built += [k for bf16 in (False, True) for k in half._kernels(bf16) + half._fold_kernels(bf16)]
kernels = list(built)
for info in pkgutil.walk_packages(thinwire.codecs.__path__, "thinwire.codecs."):
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
