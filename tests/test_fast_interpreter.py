"""``fast_interpreter``: the interpreter's ``tl.xor_sum`` with numpy's XOR reduction gives
the integers of the interpreter's own element-by-element reduction, on every axis and with
kept dimensions, and leaves the other reductions to the interpreter; device functions that
skip replacing the language modules again give what they give when they replace them."""

import kernel_choice
import pytest

from thinwire.engine.kernels import triton_crc

CHECK = r"""
import numpy as np, torch
import triton, triton.language as tl
from triton.runtime import interpreter
import fast_interpreter

assert fast_interpreter.GENERIC is not None  # the prelude installed it
FAST = interpreter.ReduceOps.apply_impl
paths = []  # which path each reduction took
real_generic = interpreter.ReduceOps.generic_reduce
interpreter.ReduceOps.generic_reduce = lambda self, input: paths.append("generic") or real_generic(self, input)


@triton.jit
def _xors(x_ptr, rows_ptr, cols_ptr, all_ptr, kept_ptr, sums_ptr, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)[:, None]
    c = tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + r * C + c)
    tl.store(rows_ptr + tl.arange(0, R), tl.xor_sum(x, axis=1))
    tl.store(cols_ptr + tl.arange(0, C), tl.xor_sum(x, axis=0))
    tl.store(all_ptr, tl.xor_sum(x))
    tl.store(kept_ptr + r * 0 + c, tl.xor_sum(x, axis=0, keep_dims=True))
    tl.store(sums_ptr, tl.sum(tl.sum(x, axis=1), axis=0))  # not XOR: the interpreter's numpy sum


def run(dtype):
    g = torch.Generator().manual_seed(4)
    x = torch.randint(-2**31, 2**31 - 1, (8, 16), generator=g, dtype=torch.int64).to(dtype)
    out = [torch.zeros(8, dtype=dtype), torch.zeros(16, dtype=dtype), torch.zeros(1, dtype=dtype),
           torch.zeros(16, dtype=dtype), torch.zeros(1, dtype=dtype)]
    _xors[(1,)](x, *out, R=8, C=16)
    return x, out


for dtype in (torch.int32, torch.uint32 if hasattr(torch, "uint32") else torch.int32, torch.int64):
    paths.clear()
    interpreter.ReduceOps.apply_impl = FAST
    x, fast = run(dtype)
    assert "generic" not in paths, paths
    interpreter.ReduceOps.apply_impl = fast_interpreter.GENERIC
    _, own = run(dtype)
    assert paths.count("generic") == 4, paths  # the interpreter's own loop for each XOR reduction
    for a, b in zip(fast, own):
        assert torch.equal(a, b), (dtype, a, b)
    n = x.numpy()
    assert fast[0].numpy().tolist() == np.bitwise_xor.reduce(n, axis=1).tolist()
    assert fast[1].numpy().tolist() == np.bitwise_xor.reduce(n, axis=0).tolist() == fast[3].numpy().tolist()
    assert fast[2].item() == int(np.bitwise_xor.reduce(n, axis=None))


@triton.jit
def _inner(x):
    return tl.where(x > 0, x, tl.zeros_like(x)) * 2  # zeros_like: a helper of triton.language's own


@triton.jit
def _outer(x):
    return tl.cumsum(_inner(x), axis=0) + tl.max(x, axis=0)


@triton.jit
def _helpers(x_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out_ptr + i, _outer(tl.load(x_ptr + i)))


def helpers():
    x = torch.arange(-8, 8, dtype=torch.int32).flip(0) * 3
    out = torch.zeros(16, dtype=torch.int32)
    _helpers[(1,)](x, out, N=16)
    n = x.numpy()
    assert out.numpy().tolist() == (np.cumsum(np.where(n > 0, n, 0) * 2) + n.max()).tolist(), out
    return out


skipped = fast_interpreter.SKIPPED[0]
fast = [helpers(), helpers()]  # a second launch after the first one's replacements were put back
assert fast_interpreter.SKIPPED[0] > skipped and fast_interpreter._launch["langs"] is None
interpreter._patch_lang = fast_interpreter.PATCH_LANG  # every call replaces again, as the interpreter does
skipped = fast_interpreter.SKIPPED[0]
assert torch.equal(helpers(), fast[0]) and torch.equal(fast[0], fast[1])
assert fast_interpreter.SKIPPED[0] == skipped
print("ok")
"""


@pytest.mark.skipif(not triton_crc.AVAILABLE, reason="triton is in requirements.lock; absent only outside make setup")
def test_the_fast_paths_give_the_interpreters_own_values():
    kernel_choice.passes(CHECK)
