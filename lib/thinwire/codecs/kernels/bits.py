"""Bit intrinsics numba does not expose: the count of trailing zero bits of a word
(x86 ``tzcnt``, one instruction), used to walk the set bits of a survivor mask."""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic


@intrinsic
def trailing_zeros(typingctx, word):
    """Trailing zero bits of a non-zero uint64 (undefined for 0: callers test first)."""
    if word != types.uint64:
        return None

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))
    return types.uint64(types.uint64), codegen
