"""Checksums compared at the end of a block (``wire/deferred.py``): inside
``deferred_checks`` a message tensor decodes to the same values with nothing read by the
host, and every damaged byte still ends the block with ``CorruptMessageError`` and the
damaged message's values set to NaN. Message tensors on the CPU taken as device ones, with
the device CRC's kernels under Triton's interpreter (in a process of its own)."""

from pathlib import Path

import pytest
import torch

import kernel_choice
from thinwire.codecs import CodecState, CorruptMessageError, make_codec
from thinwire.engine.wire import deferred, deferred_checks

CHECK = kernel_choice.DEVICE_MESSAGES + r"""
from thinwire.codecs import CorruptMessageError, make_codec
from thinwire.engine.wire import deferred, deferred_checks


g = torch.Generator().manual_seed(3)
for spec in ("fp32", "fp16", "bf16"):
    codec = make_codec(spec)
    for shape in ((0,), (1,), (3, 50)) + (((5003,),) if spec == "fp32" else ()):  # 5003: two CRC blocks
        x = torch.randn(shape, generator=g)
        m = encoded(codec, x)
        assert bytes(m.numpy()) == bytes(codec.encode(x, CodecState(0), "x")), (spec, shape)  # the host's bytes
        want = decoded(codec, m, x)
        del reads[:]
        with deferred_checks() as checks:
            got = decoded(codec, m, x)
            assert len(checks.pending) == 1 and not reads, (spec, shape, reads)  # nothing read yet
        assert len(reads) == 1, reads  # the block's end: one copy
        assert torch.equal(got.view(torch.int32), want.view(torch.int32)), (spec, shape)

# every damaged byte of a small message ends the block with the error, its values NaN
codec = make_codec("fp16")
x = torch.randn(4, generator=g)
m = encoded(codec, x)
every_damaged_byte_caught(codec, m, x)

# several messages, one damaged: one read at the end, the others kept
codec = make_codec("fp32")
xs = [torch.randn(300, generator=g) for _ in range(4)]
ms = [encoded(codec, x) for x in xs]
ms[2][100] ^= 1
outs = [torch.empty(300) for _ in xs]
del reads[:]
try:
    with deferred_checks():
        for i, (m, out) in enumerate(zip(ms, outs)):
            with device.forced():
                codec.decode(m, CodecState(0), f"w{i}", out=out)
except CorruptMessageError as e:
    assert "1 of 4" in str(e) and "'w2'" in str(e), str(e)
else:
    raise AssertionError("no error")
assert len(reads) == 1, reads
assert outs[2].isnan().all() and all(torch.equal(outs[i], xs[i]) for i in (0, 1, 3))

# another length is refused at once; an error inside the block is the one raised, the damaged values NaN
try:
    with deferred_checks():
        decoded(codec, ms[0][:-4].clone(), xs[0])
except CorruptMessageError as e:
    assert "bytes, where a message of this tensor has" in str(e), str(e)
else:
    raise AssertionError("a short message decoded")
out = torch.empty(300)
try:
    with deferred_checks():
        with device.forced():
            codec.decode(ms[2], CodecState(0), "x", out=out)
        raise KeyError("inside")
except KeyError:
    assert out.isnan().all()

# a codec whose header is read still defers its checksum: quantize's 8-bit codes read as checked
codec = make_codec("quantize(bits=8)")
x = torch.randn(2000, generator=g)
m = encoded(codec, x)
want = decoded(codec, m, x)
with deferred_checks() as checks:
    got = decoded(codec, m, x)
    assert len(checks.pending) == 1
assert torch.equal(got, want)
m[len(m) // 2] ^= 4
try:
    with deferred_checks():
        got = decoded(codec, m, x)
except CorruptMessageError:
    assert got.isnan().all()
else:
    raise AssertionError("no error")
assert deferred.active() is None

# checks collected for later (a CUDA graph's replays) are compared each time, and kept
codec = make_codec("bf16")
x = torch.randn(500, generator=g)
m, later = encoded(codec, x), deferred.DeferredChecks()
with deferred_checks(into=later):
    decoded(codec, m, x)
assert len(later.pending) == 1
later.verify_all(keep=True)
m[-1] ^= 2  # as if a replay had received a damaged message
try:
    later.verify_all(keep=True)
except CorruptMessageError:
    assert len(later.pending) == 1
else:
    raise AssertionError("no error")
print("ok")
"""


HOOK = r"""
import os, socket, sys
os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, TESTS)
import torch
import torch.distributed as dist
import ddp_ranks
from thinwire.engine.wire import deferred, tensor_message

tensor_message._on_device = lambda t: True  # the bucket's CPU message tensors taken as device ones
checked = []
verify_all = deferred.DeferredChecks.verify_all
deferred.DeferredChecks.verify_all = lambda self, keep=False: (checked.append(len(self.pending)),
                                                                verify_all(self, keep))[1]
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
plain = ddp_ranks.train(0, None, steps=2)
hooked = ddp_ranks.train(0, "fp32", steps=2, messages="tensors")
assert checked == [0, 4, 0, 4], checked  # a bucket's encodes (fp32 leaves nothing), then its decodes in one read
for want, got in zip(plain["grads"], hooked["grads"]):
    assert all(torch.equal(want[n], got[n]) for n in want)
dist.destroy_process_group()
print("ok")
""".replace("TESTS", repr(str(Path(__file__).parent)))


def test_the_ddp_hook_checks_a_buckets_message_tensors_in_one_block():
    """Under the hook with message tensors (taken as device ones), each bucket's decodes
    register their checks and the bucket's block compares them in one read; the fp32 hook
    still applies DDP's own gradients."""
    kernel_choice.passes(HOOK)


def test_decodes_in_a_block_read_nothing_until_its_end_and_every_damaged_byte_is_caught():
    kernel_choice.passes(CHECK)


def test_blocks_nest_and_host_messages_are_checked_at_once():
    """Host messages (and message tensors the host checksums) are verified as they are
    decoded, inside a block too; an inner block's checks are its own."""
    codec = make_codec("fp32")
    x = torch.randn(100)
    message = codec.encode(x, CodecState(0), "x")
    message[30] ^= 1
    with deferred_checks() as outer:
        with deferred_checks() as inner:
            assert deferred.active() is inner
            with pytest.raises(CorruptMessageError):
                codec.decode(message, CodecState(0), "x", out=torch.empty(100))
        assert deferred.active() is outer and not outer.pending
    assert deferred.active() is None
