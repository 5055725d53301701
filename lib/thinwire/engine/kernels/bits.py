"""Bit intrinsics numba does not expose: the count of trailing zero bits of a word
(x86 ``tzcnt``, one instruction), used to walk the set bits of a survivor mask; a 64-bit
word stored most significant byte first at any byte offset (``bswap`` and one store), used
to write MSB-first bitstreams a word at a time (and loaded back); two adjacent bytes read
as one little-endian 16-bit index (one load); a prefetch of the line holding an element."""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def trailing_zeros(typingctx, word):
    """Trailing zero bits of a non-zero uint64 (undefined for 0: callers test first)."""
    if word != types.uint64:
        return None

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))
    return types.uint64(types.uint64), codegen


def _bytes_at(array, index) -> bool:
    """Whether a kernel's ``(array, index)`` is a 1-d uint8 array and an integer."""
    return (isinstance(array, types.Array) and array.dtype == types.uint8 and array.ndim == 1
            and isinstance(index, types.Integer))


def _word_at(context, builder, signature, args, bits: int):
    """A pointer to the ``bits``-bit word at byte ``args[1]`` of the array ``args[0]``."""
    data = context.make_array(signature.args[0])(context, builder, args[0]).data
    index = context.cast(builder, args[1], signature.args[1], types.intp)
    return builder.bitcast(builder.gep(data, [index]), ir.IntType(bits).as_pointer())


@intrinsic
def store_big_endian(typingctx, array, index, word):
    """Store the uint64 ``word`` most significant byte first into the bytes
    ``array[index:index + 8]`` of a C-contiguous uint8 array (x86 ``bswap`` and one
    unaligned store; no bounds check: callers keep 8 bytes of room)."""
    if not (_bytes_at(array, index) and word == types.uint64):
        return None

    def codegen(context, builder, signature, args):
        builder.store(builder.bswap(args[2]), _word_at(context, builder, signature, args, 64), align=1)
        return context.get_dummy_value()
    return types.void(array, index, types.uint64), codegen


@intrinsic
def load_big_endian(typingctx, array, index):
    """The uint64 whose bytes, most significant first, are ``array[index:index + 8]`` of a
    C-contiguous uint8 array (one unaligned load and ``bswap``; no bounds check: callers
    keep 8 readable bytes)."""
    if not _bytes_at(array, index):
        return None

    def codegen(context, builder, signature, args):
        return builder.bswap(builder.load(_word_at(context, builder, signature, args, 64), align=1))
    return types.uint64(array, index), codegen


@intrinsic
def load_pair(typingctx, array, index):
    """``array[index] | array[index + 1] << 8`` of a C-contiguous uint8 array, as an int64,
    in one unaligned 16-bit load (x86 ``movzx``; no bounds check: callers read inside)."""
    if not _bytes_at(array, index):
        return None

    def codegen(context, builder, signature, args):
        word = builder.load(_word_at(context, builder, signature, args, 16), align=1)
        return builder.zext(word, ir.IntType(64))
    return types.int64(array, index), codegen


@intrinsic
def prefetch(typingctx, array, index):
    """Ask for the cache line holding ``array[index]`` ahead of its use (LLVM's
    ``llvm.prefetch``, read, all cache levels: x86 ``prefetcht0``). Loops that read
    several streams at once outrun the hardware prefetcher with it."""
    if not (isinstance(array, types.Array) and isinstance(index, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        index = context.cast(builder, args[1], signature.args[1], types.intp)
        byte = ir.IntType(8).as_pointer()
        where = builder.bitcast(builder.gep(data, [index]), byte)
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [byte, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        builder.call(fn, [where, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()
    return types.void(array, index), codegen
