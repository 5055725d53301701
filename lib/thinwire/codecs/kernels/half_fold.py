"""IEEE halves widened to float32 with their CRC-32C folded in the same loop
(``crc_fold.emit_fold``), for ``half.widen`` on CPUs that fold (``crc_fold.FOLD``),
convert in hardware (F16C) and write computed outputs in place (``stream.BUILT_STREAMED``
off: AMD's).

Each step loads 256 bytes of halves (128 values) into registers, folds them, and stores
their float32 values (LLVM's ``fpext`` on vectors of 32: ``vcvtph2ps``, exact) with plain
stores: the message is read from memory once and never from the cache again to be
checksummed. Measured on the 2-core AMD EPYC (Zen 4), 25M values, ten interleaved rounds
with an add pass over two and a half minutes: 2.35-2.76 ms against 3.36-3.94 for
checksumming each piece from memory and then widening it from the cache, in the rounds
whose add pass took 5.6-6.1 ms, and 3.97-4.57 against 4.51-5.25 in those whose add pass
took 8.4-9.3 ms. Folding while narrowing (float32 to halves) was slower than narrowing a
piece and then folding its halves from the cache (4.76-5.67 ms against 3.78-4.80 over
eight rounds), so ``half.narrow`` keeps its two steps. A software prefetch ahead of the
loads made the widening slower when the machine's memory was fast (3.50-3.56 against
3.06-3.56 ms in three rounds), so there is none.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from . import crc_fold

STEP_VALUES = crc_fold.STEP // 2   # values widened per step
_FLOATS = ir.VectorType(ir.FloatType(), 32)   # 128 bytes of float32: one register of halves
_HALVES = ir.VectorType(ir.HalfType(), 32)


@intrinsic
def widen_fold(typingctx, floats, halves, steps, folded):
    """``floats[:128 steps]`` (float32) = the values of the halves ``halves[:128 steps]``
    (uint16), and those halves folded into ``folded`` (32 uint64, ``crc_fold.fold``'s
    result); ``steps`` >= 1, no bounds check."""
    if not (all(isinstance(a, types.Array) for a in (floats, halves, folded)) and isinstance(steps, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        wide = crc_fold.vector_pointer(context, builder, signature.args[0], args[0], element=_FLOATS)
        short = crc_fold.vector_pointer(context, builder, signature.args[1], args[1])

        def step(base):
            blocks = crc_fold.load_step(builder, short, base, ahead=False)
            for r, block in enumerate(blocks):
                values = builder.fpext(builder.bitcast(block, _HALVES), _FLOATS)
                builder.store(values, builder.gep(wide, [builder.add(base, ir.Constant(base.type, r))]), align=1)
            return blocks
        crc_fold.emit_fold(builder, context.cast(builder, args[2], signature.args[2], types.intp),
                           crc_fold.vector_pointer(context, builder, signature.args[3], args[3]), step)
        return context.get_dummy_value()
    return types.void(floats, halves, steps, folded), codegen
