"""CRC-32C by folding with carry-less multiplication (x86 ``VPCLMULQDQ`` on 512-bit
registers), the method of Gopal et al., "Fast CRC Computation for Generic Polynomials
Using PCLMULQDQ Instruction" (Intel, 2009), on four registers of four 128-bit
lanes: 256 bytes per step.

A message M of 128-bit blocks satisfies M = sum_j B_j x^(128 (m-1-j)). Sixteen 128-bit
accumulators take the first 256 bytes; each step multiplies every accumulator by
x^2048 mod P (the polynomial) and adds the next 256 bytes, so the accumulators always
hold a 256-byte message congruent to the part read so far, and with the same CRC. A
128-bit accumulator A = H x^64 + L (H: its first 8 bytes in the CRC's reflected bit
order) becomes H (x^(2048+64) mod P) + L (x^2048 mod P): two carry-less products of 64
by 32 bits, under 128 bits, so nothing is reduced inside the loop. The instruction
multiplies bit-reversed operands, which leaves each product one bit short, so the
constants are x^(2048+63) and x^2047 (``crc_math.x_power``). The CRC's initial all-ones
register is the first 4 bytes xor all ones, added to the first block.

``fold`` returns those 256 bytes; ``crc.crc32c`` runs the ``crc32`` instruction over them
and over the bytes after the last whole step. Folding outruns the ``crc32`` streams (whose
limit is 8 bytes per cycle) about threefold on data in the cache, so a kernel that checksums
each piece of a message while the piece is in its cache pays less for it.

``copy_fold`` runs the same loop while copying: each step's 256 bytes are loaded into
registers once, folded, and stored to the copy with streamed stores, so a checksummed copy
reads its source from memory once and never from the cache again (``stream.copy``).

``FOLD`` says whether the CPU numba compiles for has the instructions (``+vpclmulqdq``
and ``+avx512f``); elsewhere ``crc.crc32c`` uses the ``crc32`` streams alone.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .crc_math import x_power
from .vector_width import target_features

_FEATURES = target_features() or set()
FOLD = {"+vpclmulqdq", "+avx512f"} <= _FEATURES  # crc.FOLD adds the crc32 instruction
STEP = 256                 # bytes folded per step: 4 registers of 64 bytes
DISTANCE = 8 * STEP        # bits each step moves an accumulator by
AHEAD = 2048               # bytes read ahead of the step, for data that is not in the cache


def _operand(exponent: int) -> int:
    """x^exponent mod P as a 64-bit multiplicand: degree d at bit 63 - d (32-bit reflected
    remainder in the upper half)."""
    return x_power(exponent) << 32


HIGH = _operand(DISTANCE + 64 - 1)  # for the first 8 bytes of a 128-bit lane (H)
LOW = _operand(DISTANCE - 1)        # for the last 8 (L)


VECTOR = ir.VectorType(ir.IntType(64), 8)  # one 64-byte register


def vector_pointer(context, builder, array_type, array, at=None, element=VECTOR):
    """``array``'s data (at byte ``at``, when given) as a pointer to ``element``s."""
    data = context.make_array(array_type)(context, builder, array).data
    if at is not None:
        data = builder.gep(builder.bitcast(data, ir.IntType(8).as_pointer()), [at])
    return builder.bitcast(data, element.as_pointer())


def prefetch(builder, pointer, index):
    """Ask for the line at ``pointer[index]`` (a hint: past the end it does nothing)."""
    i32 = ir.IntType(32)
    byte = ir.IntType(8).as_pointer()
    ask = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [byte, i32, i32, i32]),
                                         "llvm.prefetch.p0")
    builder.call(ask, [builder.bitcast(builder.gep(pointer, [index]), byte), ir.Constant(i32, 0),
                       ir.Constant(i32, 3), ir.Constant(i32, 1)])


def stream_store(builder, value, pointer, index):
    """``pointer[index] = value`` with a streamed store (64-byte aligned)."""
    store = builder.store(value, builder.gep(pointer, [index]), align=64)
    store.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))


def emit_fold(builder, count, target, step):
    """The folding loop over ``count`` (>= 1) steps into the 4 registers stored at the
    vector pointer ``target``. ``step(base)`` emits what a step reads (and anything it
    writes beside), and returns its 4 registers of bytes to fold: those at vector index
    ``base`` (= 4 x the step's number) of the folded data."""
    i8, i64 = ir.IntType(8), ir.IntType(64)
    multiply = cgutils.get_or_insert_function(builder.module, ir.FunctionType(VECTOR, [VECTOR, VECTOR, i8]),
                                              "llvm.x86.pclmulqdq.512")
    constants = ir.Constant(VECTOR, [ir.Constant(i64, HIGH), ir.Constant(i64, LOW)] * 4)
    ones = ir.Constant(VECTOR, [ir.Constant(i64, 0xFFFFFFFF)] + [ir.Constant(i64, 0)] * 7)
    accumulators = []
    for r, first in enumerate(step(ir.Constant(count.type, 0))):
        slot = cgutils.alloca_once(builder, VECTOR)
        builder.store(builder.xor(first, ones) if r == 0 else first, slot)
        accumulators.append(slot)
    with cgutils.for_range(builder, builder.sub(count, ir.Constant(count.type, 1))) as loop:
        base = builder.mul(builder.add(loop.index, ir.Constant(count.type, 1)), ir.Constant(count.type, 4))
        for slot, block in zip(accumulators, step(base)):
            a = builder.load(slot)
            high = builder.call(multiply, [a, constants, ir.Constant(i8, 0x00)])  # H x^(2048+64)
            low = builder.call(multiply, [a, constants, ir.Constant(i8, 0x11)])   # L x^2048
            builder.store(builder.xor(builder.xor(high, low), block), slot)
    for r, slot in enumerate(accumulators):
        builder.store(builder.load(slot), builder.gep(target, [ir.Constant(count.type, r)]), align=1)


def load_step(builder, pointer, base, ahead=True):
    """The 4 registers at ``pointer[base:base + 4]`` (any alignment), the lines ``AHEAD``
    bytes on asked for first (with ``ahead``)."""
    def at(r):
        return builder.add(base, ir.Constant(base.type, r))
    if ahead:
        for r in range(4):
            prefetch(builder, pointer, at(AHEAD // 64 + r))
    return [builder.load(builder.gep(pointer, [at(r)]), align=1) for r in range(4)]


@intrinsic
def fold(typingctx, words, steps, out):
    """Fold ``steps`` (>= 1) steps of 256 bytes, the uint64 array ``words`` (any
    alignment), into 256 bytes written to the 32-word uint64 array ``out``, with the
    same CRC-32C register as ``words``' bytes from the initial all-ones register."""
    if not (isinstance(words, types.Array) and isinstance(steps, types.Integer) and isinstance(out, types.Array)):
        return None

    def codegen(context, builder, signature, args):
        source = vector_pointer(context, builder, signature.args[0], args[0])
        emit_fold(builder, context.cast(builder, args[1], signature.args[1], types.intp),
                  vector_pointer(context, builder, signature.args[2], args[2]),
                  lambda base: load_step(builder, source, base))
        return context.get_dummy_value()
    return types.void(words, steps, out), codegen


@intrinsic
def copy_fold(typingctx, src, at, dst, shift, steps, out):
    """``fold`` over the ``steps`` steps of the uint8 array ``src`` from byte ``at``, and in
    the same loop ``dst[at + shift:][:256 steps] = src[at + shift:][:256 steps]`` with
    streamed stores: each line is read from memory once for both. ``dst``'s address at
    ``at + shift`` must be 64-byte aligned; both ranges must lie inside the arrays (no
    bounds check)."""
    if not (all(isinstance(a, types.Array) for a in (src, dst, out))
            and all(isinstance(i, types.Integer) for i in (at, shift, steps))):
        return None

    def codegen(context, builder, signature, args):
        def offset(k):
            return context.cast(builder, args[k], signature.args[k], types.intp)
        at, shift = offset(1), offset(3)
        moved = builder.add(at, shift)
        source = vector_pointer(context, builder, signature.args[0], args[0], at)
        copy_from = vector_pointer(context, builder, signature.args[0], args[0], moved)
        copy_to = vector_pointer(context, builder, signature.args[2], args[2], moved)

        def step(base):
            for r, line in enumerate(load_step(builder, copy_from, base, ahead=False)):
                stream_store(builder, line, copy_to, builder.add(base, ir.Constant(base.type, r)))
            return load_step(builder, source, base)
        emit_fold(builder, offset(4), vector_pointer(context, builder, signature.args[5], args[5]), step)
        return context.get_dummy_value()
    return types.void(src, at, dst, shift, steps, out), codegen
