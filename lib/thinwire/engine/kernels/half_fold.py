"""16-bit floats (IEEE half and bfloat16) converted to and from float32 with their CRC-32C
folded in the same loop (``crc_fold.emit_fold``), for ``half.widen`` and ``half.narrow`` on
CPUs that fold (``crc_fold.FOLD``) and write computed outputs in place
(``stream.BUILT_STREAMED`` off: AMD's); half also needs its conversion in hardware (F16C).
Each intrinsic is built per format (``_narrowed``, ``_widened``) and indexed by ``bf16``.

Each step loads 256 bytes of halves (128 values) into registers, folds them, and stores
their float32 values (LLVM's ``fpext``: ``vcvtph2ps``, exact): the message is read from
memory once and never again to be checksummed. Narrowing folds the halves of a piece from
the cache after converting it (folding while narrowing was slower), and no software
prefetch is issued (it slowed widening). ``narrow_fold_streamed`` and
``widen_fold_streamed`` store with streamed stores (``crc_fold.stream_store``) in
``crc_fold.copy_fold``'s arrangement. Timings: the engine's README.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from . import crc_fold

STEP_VALUES = crc_fold.STEP // 2   # values widened per step
_FLOATS = ir.VectorType(ir.FloatType(), 32)   # 128 bytes of float32: one register of halves
_HALVES = ir.VectorType(ir.HalfType(), 32)
_WORDS = ir.VectorType(ir.IntType(32), 32)    # the same 128 bytes as integers
_SHORTS = ir.VectorType(ir.IntType(16), 32)   # one register of 16-bit floats as integers
_QUARTERS = ir.VectorType(ir.FloatType(), 16)   # 64 bytes of float32: one streamed line


def _splat(vector_type, value):
    return ir.Constant(vector_type, [ir.Constant(vector_type.element, value)] * vector_type.count)


def _narrowed(builder, floats, bf16):
    """32 float32 values -> their 16-bit floats as one register (``crc_fold.VECTOR``):
    half by ``fptrunc`` (``vcvtps2ph``, ties to even); bfloat16 by ``half._to_bfloat``'s
    integer rule (the upper 16 bits rounded to nearest even, every NaN 0x7FC0)."""
    if not bf16:
        return builder.bitcast(builder.fptrunc(floats, _HALVES), crc_fold.VECTOR)
    u = builder.bitcast(floats, _WORDS)
    odd = builder.and_(builder.lshr(u, _splat(_WORDS, 16)), _splat(_WORDS, 1))
    rounded = builder.lshr(builder.add(builder.add(u, _splat(_WORDS, 0x7FFF)), odd), _splat(_WORDS, 16))
    nan = builder.icmp_unsigned(">", builder.and_(u, _splat(_WORDS, 0x7FFFFFFF)), _splat(_WORDS, 0x7F800000))
    bits = builder.select(nan, _splat(_WORDS, 0x7FC0), rounded)
    return builder.bitcast(builder.trunc(bits, _SHORTS), crc_fold.VECTOR)


def _widened(builder, block, bf16):
    """One register of 16-bit floats -> their 32 float32 values, exact: half by ``fpext``
    (``vcvtph2ps``), bfloat16 by shifting its bits up."""
    if not bf16:
        return builder.fpext(builder.bitcast(block, _HALVES), _FLOATS)
    words = builder.zext(builder.bitcast(block, _SHORTS), _WORDS)
    return builder.bitcast(builder.shl(words, _splat(_WORDS, 16)), _FLOATS)


def _widen_fold(bf16):
    @intrinsic
    def widen_fold(typingctx, floats, halves, steps, folded):
        """``floats[:128 steps]`` (float32) = the values of the 16-bit floats
        ``halves[:128 steps]`` (uint16), and those folded into ``folded`` (32 uint64,
        ``crc_fold.fold``'s result); ``steps`` >= 1, no bounds check."""
        if not (all(isinstance(a, types.Array) for a in (floats, halves, folded)) and isinstance(steps, types.Integer)):
            return None

        def codegen(context, builder, signature, args):
            wide = crc_fold.vector_pointer(context, builder, signature.args[0], args[0], element=_FLOATS)
            short = crc_fold.vector_pointer(context, builder, signature.args[1], args[1])

            def step(base):
                blocks = crc_fold.load_step(builder, short, base, ahead=False)
                for r, block in enumerate(blocks):
                    builder.store(_widened(builder, block, bf16),
                                  builder.gep(wide, [builder.add(base, ir.Constant(base.type, r))]), align=1)
                return blocks
            crc_fold.emit_fold(builder, context.cast(builder, args[2], signature.args[2], types.intp),
                               crc_fold.vector_pointer(context, builder, signature.args[3], args[3]), step)
            return context.get_dummy_value()
        return types.void(floats, halves, steps, folded), codegen
    return widen_fold


def _narrow_fold_streamed(bf16):
    @intrinsic
    def narrow_fold_streamed(typingctx, floats, halves, head, steps, folded):
        """``crc_fold.copy_fold``'s arrangement for narrowing: the 16-bit floats of
        ``floats[:128 steps]`` (``_narrowed``) folded into ``folded``, and in the same loop
        those of ``floats[head:head + 128 steps]`` stored to ``halves[head:...]`` with
        streamed stores (``halves``' address at value ``head`` 64-byte aligned); ``steps``
        >= 1, no bounds check."""
        if not (all(isinstance(a, types.Array) for a in (floats, halves, folded))
                and all(isinstance(i, types.Integer) for i in (head, steps))):
            return None

        def codegen(context, builder, signature, args):
            at = context.cast(builder, args[2], signature.args[2], types.intp)
            fold_from = crc_fold.vector_pointer(context, builder, signature.args[0], args[0], element=_FLOATS)
            store_from = crc_fold.vector_pointer(context, builder, signature.args[0], args[0],
                                                 builder.mul(at, ir.Constant(at.type, 4)), element=_FLOATS)
            store_to = crc_fold.vector_pointer(context, builder, signature.args[1], args[1],
                                               builder.mul(at, ir.Constant(at.type, 2)))

            def narrowed(pointer, i):
                return _narrowed(builder, builder.load(builder.gep(pointer, [i]), align=1), bf16)

            def step(base):
                blocks = []
                for r in range(4):
                    i = builder.add(base, ir.Constant(base.type, r))
                    crc_fold.stream_store(builder, narrowed(store_from, i), store_to, i)
                    blocks.append(narrowed(fold_from, i))
                return blocks
            crc_fold.emit_fold(builder, context.cast(builder, args[3], signature.args[3], types.intp),
                               crc_fold.vector_pointer(context, builder, signature.args[4], args[4]), step)
            return context.get_dummy_value()
        return types.void(floats, halves, head, steps, folded), codegen
    return narrow_fold_streamed


def _widen_fold_streamed(bf16):
    @intrinsic
    def widen_fold_streamed(typingctx, floats, halves, head, steps, folded):
        """``widen_fold`` with streamed stores: ``halves[:128 steps]`` folded into
        ``folded``, and in the same loop the values of ``halves[head:head + 128 steps]``
        stored to ``floats[head:...]`` a line at a time with streamed stores (``floats``'
        address at value ``head`` 64-byte aligned); ``steps`` >= 1, no bounds check."""
        if not (all(isinstance(a, types.Array) for a in (floats, halves, folded))
                and all(isinstance(i, types.Integer) for i in (head, steps))):
            return None

        def codegen(context, builder, signature, args):
            at = context.cast(builder, args[2], signature.args[2], types.intp)
            fold_from = crc_fold.vector_pointer(context, builder, signature.args[1], args[1])
            store_from = crc_fold.vector_pointer(context, builder, signature.args[1], args[1],
                                                 builder.mul(at, ir.Constant(at.type, 2)))
            store_to = crc_fold.vector_pointer(context, builder, signature.args[0], args[0],
                                               builder.mul(at, ir.Constant(at.type, 4)), element=_QUARTERS)
            lanes = ir.VectorType(ir.IntType(32), 16)

            def step(base):
                for r in range(4):
                    i = builder.add(base, ir.Constant(base.type, r))
                    values = _widened(builder, builder.load(builder.gep(store_from, [i]), align=1), bf16)
                    for q in range(2):
                        line = builder.shuffle_vector(values, values, ir.Constant(lanes, list(range(16 * q, 16 * q + 16))))
                        crc_fold.stream_store(builder, line, store_to,
                                              builder.add(builder.mul(i, ir.Constant(i.type, 2)), ir.Constant(i.type, q)))
                return crc_fold.load_step(builder, fold_from, base, ahead=False)
            crc_fold.emit_fold(builder, context.cast(builder, args[3], signature.args[3], types.intp),
                               crc_fold.vector_pointer(context, builder, signature.args[4], args[4]), step)
            return context.get_dummy_value()
        return types.void(floats, halves, head, steps, folded), codegen
    return widen_fold_streamed


# each intrinsic per format, indexed by ``bf16``
widen_fold = (_widen_fold(False), _widen_fold(True))
narrow_fold_streamed = (_narrow_fold_streamed(False), _narrow_fold_streamed(True))
widen_fold_streamed = (_widen_fold_streamed(False), _widen_fold_streamed(True))
