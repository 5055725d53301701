"""Helpers for the tests of the Triton kernels (``triton_crc``, ``triton_uniform``,
``triton_qsgd``, ``triton_drop``): what a kernel says it takes, and a check script run
under Triton's interpreter in a process of its own."""

import subprocess
import sys


def takes(monkeypatch, module, kernel: str, interpreted: bool, usable) -> bool:
    """``usable()`` with ``module.KERNEL = kernel``, and this process's kernels run by Triton's
    interpreter or not (``triton_crc.interpreted``: CPU tensors count only under it)."""
    from thinwire.codecs.kernels import triton_crc
    monkeypatch.setattr(module, "KERNEL", kernel)
    monkeypatch.setattr(triton_crc, "interpreted", lambda: interpreted and triton_crc.AVAILABLE)
    return usable()


def passes(script: str) -> None:
    """Run ``script`` (which sets ``TRITON_INTERPRET=1`` before importing triton and prints
    "ok" at its end) in a new interpreter; its traceback is the failure."""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
