"""A float32 fused multiply-add, rounded once (LLVM's ``llvm.fma``: x86 ``vfmadd``), and
the bits of a float32 as an int32 and back: what numba does not expose.

``HARDWARE``: the CPU numba compiles for has the FMA instructions. Without them LLVM
computes ``llvm.fma`` by a library call, still rounded once but a call per value, so
kernels take another path there (``qsgd._round``).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .vector_width import target_features

HARDWARE = "+fma" in (target_features() or ())


@intrinsic
def fma32(typingctx, a, b, c):
    """a * b + c for float32 values, with one rounding of the exact result."""
    if not (a == b == c == types.float32):
        return None

    def codegen(context, builder, signature, args):
        return builder.fma(*args)
    return types.float32(types.float32, types.float32, types.float32), codegen


@intrinsic
def float_bits(typingctx, value):
    """The bits of a float32 as an int32 (a non-negative float's successor is bits + 1)."""
    if value != types.float32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.int32(types.float32), codegen


@intrinsic
def bits_float(typingctx, bits):
    """The float32 whose bits are the int32 ``bits``."""
    if bits != types.int32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.int32), codegen
