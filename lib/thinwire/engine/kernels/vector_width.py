"""512-bit vectors for the compiled kernels on CPUs that have them (AVX-512).

LLVM tunes most AVX-512 CPUs to prefer 256-bit vectors (its ``prefer-256-bit`` tuning:
on early AVX-512 parts the clock dropped under 512-bit work), so numba's kernels use
half the width the CPU has. The kernels here are integer hashing, compares and
conversions over long arrays, which 512-bit vectors bring closer to the memory roofline
with the same bytes (``make bench``; the engine's README).

numba builds its code generator once per process, from ``config.CPU_FEATURES`` (None:
the host's features). ``prefer_wide_vectors`` sets it to the host's features with the
tuning turned off, before the first kernel is compiled. It leaves an explicit
``NUMBA_CPU_FEATURES`` alone, does nothing on a CPU without AVX-512, and has no effect
in a process that compiled numba code before importing thinwire. ``target_features`` tells
kernels which instructions the compiled code may use. Vector width changes
no result of an exact operation; a float reduction the kernels allow to reassociate
(``fastmath``) may sum in another order, as it does between CPUs.
"""

from __future__ import annotations

from numba.core import config
from numba.core.codegen import get_host_cpu_features


def prefer_wide_vectors() -> None:
    if config.CPU_FEATURES is not None or config.CPU_NAME is not None:
        return
    features = get_host_cpu_features()
    if "+avx512f" in features.split(","):
        config.CPU_FEATURES = features + ",-prefer-256-bit"


def target_features(features: str | None = None, name: str | None = None) -> set[str] | None:
    """The CPU features numba compiles for ("+sse4.2", "+f16c", ...): the host's, or
    ``NUMBA_CPU_FEATURES`` (``features``: numba's configured value); None when
    ``NUMBA_CPU_NAME`` (``name``) names another CPU without them (kernels that need an
    instruction then take their portable path)."""
    features = config.CPU_FEATURES if features is None else features
    name = config.CPU_NAME if name is None else name
    if features:
        return set(features.split(","))
    if name not in (None, "host"):
        return None
    return set(get_host_cpu_features().split(","))


prefer_wide_vectors()
