"""Helpers for the tests of the Triton kernels (``triton_crc``, ``triton_uniform``,
``triton_qsgd``, ``triton_drop``): what a kernel says it takes, a check script run
under Triton's interpreter in a process of its own, and the start of a script whose CPU
message tensors are taken as device ones (``DEVICE_MESSAGES``: its host reads counted)."""

import subprocess
import sys
from pathlib import Path


def takes(monkeypatch, interpreted: bool, usable) -> bool:
    """``usable()`` with this process's kernels run by Triton's interpreter or not
    (``triton_crc.interpreted``: CPU tensors count only under it)."""
    from thinwire.engine.kernels import triton_crc
    monkeypatch.setattr(triton_crc, "interpreted", lambda: interpreted and triton_crc.AVAILABLE)
    return usable()


# (interpreted, dtype, strided, takes): what a float32 kernel's ``usable`` takes
FLOAT32_CASES = [
    (True, "float32", False, True),
    (True, "float64", False, False),   # float32 only
    (True, "float32", True, False),    # not contiguous
    (False, "float32", False, False),  # CPU tensors count only under the interpreter
]


# Before the script: the variable set before triton is imported, and the interpreter's two
# faster paths (``fast_interpreter``: XOR reductions in numpy, helpers not patched again)
PRELUDE = f"""
import os, sys
os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, {str(Path(__file__).parent)!r})
import fast_interpreter
fast_interpreter.install()
"""


def passes(script: str) -> None:
    """Run ``script`` (which sets ``TRITON_INTERPRET=1`` before importing triton and prints
    "ok" at its end) in a new interpreter, after ``PRELUDE``; its traceback is the failure."""
    done = subprocess.run([sys.executable, "-c", PRELUDE + script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


DEVICE_MESSAGES = r"""
import os
os.environ["TRITON_INTERPRET"] = "1"
import torch
from thinwire.codecs import CodecState
from thinwire.engine.kernels import device
from thinwire.engine.wire import tensor_message

tensor_message._on_device = lambda t: True  # CPU message tensors taken as device ones
reads = []  # the size of every tensor copied to the host
cpu = torch.Tensor.cpu
torch.Tensor.cpu = lambda self, *a, **k: (reads.append(self.numel()), cpu(self, *a, **k))[1]


def encoded(codec, x, key="x"):
    with device.forced():
        return codec.encode(x, CodecState(0), key, out=torch.empty(0, dtype=torch.uint8))


def decoded(codec, m, like):
    out = torch.full_like(like, 7.0)
    with device.forced():
        return codec.decode(m, CodecState(0), "x", out=out)


def every_damaged_byte_caught(codec, m, like):
    # each byte of message m flipped in turn: decoded inside deferred_checks, the block
    # ends with CorruptMessageError naming the message, and its values NaN
    from thinwire.codecs import CorruptMessageError
    from thinwire.engine.wire import deferred_checks
    for at in range(m.numel()):
        bad = m.clone()
        bad[at] ^= 0x10
        out = torch.full_like(like, 7.0)
        try:
            with deferred_checks():
                with device.forced():
                    codec.decode(bad, CodecState(0), "x", out=out)
        except CorruptMessageError as e:
            assert f"{codec.spec()} message for 'x'" in str(e), str(e)
            assert out.isnan().all(), at
        else:
            raise AssertionError(f"{codec.spec()}: byte {at} damaged, no error")
"""


DAMAGE_REFUSED = r"""
def damage_refused(codec, m, like, places, nan):
    # message m with one byte flipped at each of places, decoded: CorruptMessageError, and
    # with nan every value of out NaN
    import torch
    from thinwire.codecs import CodecState, CorruptMessageError
    for at in places:
        damaged = m.clone()
        damaged[at] ^= 0x20
        out = torch.zeros_like(like)
        try:
            codec.decode(damaged, CodecState(0), "x", out=out)
        except CorruptMessageError:
            assert not nan or torch.isnan(out).all(), (codec.spec(), at)
        else:
            raise AssertionError(f"{codec.spec()}: damage at byte {at} decoded")
"""
