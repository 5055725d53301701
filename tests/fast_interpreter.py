"""Triton's interpreter made faster for the check scripts ``kernel_choice.passes`` runs,
computing the same values.

- **XOR reductions.** The interpreter computes a reduction whose combine function it knows
  (sum, min, max, argmin, argmax) with one numpy call, and any other one element by element
  in Python (``ReduceOps.generic_reduce``). ``tl.xor_sum``, which joins the CRC lanes in
  ``triton_crc``, ``triton_halves`` and ``triton_uniform``, is one of the others: in the CRC
  check script it took about 40 of 45 s (5.7 s with numpy's). XOR is associative and
  commutative, so ``np.bitwise_xor.reduce`` gives the same integers in any order. Other
  reductions keep the interpreter's own path.
- **Device functions.** A kernel launch replaces ``triton.language``'s functions with the
  interpreter's (``_patch_lang``) and puts them back at its end. Each call of a
  ``@triton.jit`` helper inside the kernel did the same replacement again (inspecting every
  member of the language modules), although the launch had already made it: about 100,000
  times in the drop-pass check script (94 s with them; 65 s without). Such a call now skips
  it where the launch, or an earlier call in it, already replaced the language modules the
  helper sees (the interpreter puts back only the launch's own replacements, never a
  helper's).

``test_fast_interpreter.py`` compares both with the interpreter's own paths.
"""

import numpy as np

GENERIC = None  # the interpreter's own ``ReduceOps.apply_impl``, once ``install`` has run
PATCH_LANG = None  # the interpreter's own ``_patch_lang``, once ``install`` has run
SKIPPED = [0]  # device-function calls that found their language modules already replaced
_launch = {"pending": False, "langs": None}  # the running launch's replaced modules


def install() -> bool:
    """Install both; False (nothing changed) where this Triton lacks what they replace."""
    global GENERIC, PATCH_LANG
    try:
        import triton.language as tl
        from triton.runtime import interpreter
        reduce_ops, xor_combine = interpreter.ReduceOps, tl.standard._xor_combine
        executor, patch_lang, scope = interpreter.GridExecutor, interpreter._patch_lang, interpreter._LangPatchScope
    except (ImportError, AttributeError):
        return False
    if GENERIC is not None:
        return True
    GENERIC = generic = reduce_ops.apply_impl
    PATCH_LANG = patch_lang

    def apply_impl(self, input):
        if self.combine_fn is not xor_combine:
            return generic(self, input)
        data = input[0].handle.data
        return self.to_tensor(np.bitwise_xor.reduce(data, axis=self.axis, keepdims=self.keep_dims), input[0].dtype)

    def langs(fn) -> frozenset:
        """The language modules ``_patch_lang`` replaces for ``fn`` (what its globals name)."""
        return frozenset(id(v) for v in fn.__globals__.values() if v is tl or v is tl.core)

    def patched(fn):
        if _launch["pending"]:  # the launch's own replacement
            _launch["pending"], _launch["langs"] = False, langs(fn)
            return patch_lang(fn)
        seen = langs(fn)
        if _launch["langs"] is None:  # outside a launch
            return patch_lang(fn)
        if seen <= _launch["langs"]:
            SKIPPED[0] += 1
            return scope()  # a device function's call: nothing to replace, nothing to restore
        _launch["langs"] |= seen  # replaced from here on (a device function's are never put back)
        return patch_lang(fn)

    launch = executor.__call__

    def call(self, *args, **kwargs):
        before = dict(_launch)
        _launch.update(pending=True, langs=None)
        try:
            return launch(self, *args, **kwargs)
        finally:
            _launch.update(before)

    reduce_ops.apply_impl = apply_impl
    interpreter._patch_lang = patched
    executor.__call__ = call
    return True
