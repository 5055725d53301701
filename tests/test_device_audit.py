"""What a message asks of the host on a GPU (``benchmarks/device_audit.py``), counted on the
CPU under Triton's interpreter: the dense codecs' messages need no host read to be written
and at most two (the header, the checksum) to be read, none inside ``wire.deferred_checks``,
where min-max and bin quantization's need none either."""

from pathlib import Path

import kernel_choice

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"

CHECK = r"""
import sys
sys.path.insert(0, BENCHMARKS)
import device_audit  # sets TRITON_INTERPRET=1 before triton is imported

def counts(spec, size):
    return device_audit.audit_codec(spec, size)[device_audit.PATH]

for size in ("small", "large"):
    for spec in ("fp32", "fp16", "bf16"):  # the values copied (or cast) in, the device CRC over the body
        found = counts(spec, size)
        encode, decode = found["encode"], found["decode"]
        assert encode["triton_names"].get("_block_crcs") == 1, (spec, size, encode["triton_names"])
        assert set(encode["triton_names"]) <= {"_block_crcs", "_join"}, (spec, size, encode["triton_names"])
        assert encode["reads"] == 0, (spec, size, encode["where"])
        assert encode["ops"] == 2, (spec, size, encode["op_names"])  # the header's copy, the values' copy
        assert 1 <= decode["reads"] <= 2, (spec, size, decode["where"])
        # inside wire.deferred_checks a dense message decodes with nothing read; the block's end reads once
        inside = found["decode_deferred"]
        assert inside["reads"] == 0 and inside["triton_names"].get("_block_crcs") == 1, (spec, size, inside)
        assert found["block_end"] == {"ops": 1, "triton": 0, "reads": 1}, (spec, found["block_end"])
# min-max quantization keeps its range on the device there: an encode and a decode read nothing;
# 8-bit codes are read as they are checksummed, lo's and hi's bytes added to the CRC after
for spec in ("quantize(bits=8)", "quantize(bits=3)"):
    found = counts(spec, "small")
    encode, decode = found["encode_deferred"], found["decode_deferred"]
    assert encode["reads"] == 0 and encode["triton_names"] == {
        "_extrema_blocks": 1, "_extrema_final": 1, "_quantize_ranged": 1, "_block_crcs": 1}, (spec, encode)
    assert encode["op_names"] == {"copy": 3}, (spec, encode)  # the kept header, lo, hi
    read = ({"_with_words": 1, "_dequantize_ranged_words": 1} if spec.endswith("8)")
            else {"_block_crcs": 1, "_dequantize_ranged": 1})
    assert (decode["ops"], decode["reads"], decode["triton_names"]) == (0, 0, read), (spec, decode)
    assert found["block_end"] == {"ops": 1, "triton": 0, "reads": 1}, (spec, found["block_end"])
    assert found["encode"]["reads"] + found["decode"]["reads"] >= 2, spec  # outside a block: a wait each
# ... and so does Oland & Raj's bin quantizer with raw codes
found = counts("binquant(bits=8)", "small")
encode, decode = found["encode_deferred"], found["decode_deferred"]
assert encode["reads"] == decode["reads"] == 0 and found["block_end"]["reads"] == 1, found
assert decode["triton_names"] == {"_with_words": 1, "_dequantize_ranged_words": 1}, found
assert found["encode"]["reads"] == found["decode"]["reads"] == 1, found
# ... and QSGD its norms, MQGrad's quantizer its rows' ranges (its 8-bit codes read as checked)
for spec in ("qsgd(bits=8, bucket=512)", "colquant(bits=8)"):
    found = counts(spec, "small")
    assert found["encode_deferred"]["reads"] == found["decode_deferred"]["reads"] == 0, (spec, found)
    assert found["block_end"]["reads"] == 1 and found["encode"]["reads"] + found["decode"]["reads"] == 3, spec
assert counts("colquant(bits=8)", "large")["decode_deferred"]["triton_names"].get("_row_dequantize_words") == 1
# ... and top-k's decode its indices' range (it still reads its header and checksum as it opens)
found = counts("topk(ratio=0.01)", "small")
assert found["decode_deferred"]["reads"] == 1 and found["decode"]["reads"] == 2, found
assert found["encode_deferred"]["reads"] == found["encode"]["reads"] == 1 and found["block_end"]["reads"] == 1
# gradient dropping's offsets are checked in one read, after the header's; with quantized
# values its segments' check in the same copy (``deferred.ReadTogether``)
for spec in ("graddrop(ratio=0.99)", "graddrop(ratio=0.99, bits=1)"):
    decode = counts(spec, "small")["decode"]
    assert decode["reads"] == 2, (spec, decode["where"])
# its sample drawn one message ahead, the gradient is added inside the drop pass: one pass
# reads the residual and the gradient (only the sample's values are added apart)
row = device_audit.audit_codec("graddrop(ratio=0.99)", "large")
launched = row[device_audit.PATH]["encode"]["bytes_by_launch"]
assert launched["_count"] >= 12 * row["values"] and launched.get("add", 0) < row["values"], launched
# ... and the encoder reads what it needs of the pass in one wait (``drop_survivors``): the
# survivors' count, the thresholds, NaN and Inf, each span's survivors, the long gaps
for size in ("small", "large"):
    for spec in ("graddrop(ratio=0.99)", "graddrop(ratio=0.99, scope='local', bits=1)"):
        encode = counts(spec, size)["encode"]
        assert encode["reads"] == 1, (spec, size, encode["where"])
print("ok")
""".replace("BENCHMARKS", repr(str(BENCHMARKS)))


def test_device_paths_launch_little_and_read_little():
    kernel_choice.passes(CHECK)


def test_audit_counts_what_it_claims(monkeypatch):
    """The counting itself: a host read, a launch and a view are told apart."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # what importing device_audit sets, undone after the test
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import device_audit
    import torch
    audit = device_audit.Audit()
    x = torch.arange(10.0)
    host = torch.ones(3)
    with device_audit.counting(audit):
        audit.mark(x)
        with device_audit.counted(audit):
            y = x.view(2, 5).reshape(-1)  # views: nothing
            z = y + 1  # one operation on the device
            z.sum().item()  # an operation and a read
            z.tolist()  # a read
            torch.nonzero(z > 3)  # an operation and a read whose size depends on the data
            (host * 2).sum().item()  # on the host: nothing
            made = torch.zeros(3, device=x.device)  # made on the device: a launch
            made.add_(1)
            z.cpu().tolist()  # one read: the copy; its list is made on the host
            host.to(x.device)  # a copy to the device, blocking: torch waits for the device after it
            host.to(x.device, non_blocking=True)  # a copy that waits for nothing
            made.copy_(host)  # blocking too
            made.copy_(host, non_blocking=True)
            torch.tensor([1.0, 2.0], device=x.device)  # from host data: a blocking copy
            z[z > 5] = 0.0  # a boolean mask: an operation that waits for the device (its nonzero)
    row = audit.as_row()
    assert row["op_names"] == {"add": 2, "sum": 1, "_local_scalar_dense": 1, "gt": 2, "nonzero": 1, "zeros": 1,
                               "to": 2, "copy": 2, "tensor": 1, "index_put": 1}, row
    assert row["reads"] == 8, row["where"]
    assert sum(n for where, n in row["where"].items() if "blocking copy" in where) == 3, row["where"]


HOST_MESSAGES = r"""
import sys
sys.path.insert(0, BENCHMARKS)
import device_audit  # sets TRITON_INTERPRET=1 before triton is imported
import torch
from thinwire.codecs import CodecState, make_codec

specs = device_audit.SPECS + ["qsgd(bits=4, bucket=512)", "graddrop(ratio=0.99, encoding='index_value')",
                              "ef(topk(ratio=0.01))", "binquant(bits=5, coder='huffman')"]
x = torch.randn(4096, generator=torch.Generator().manual_seed(0))
for spec in specs:
    want = bytes(make_codec(spec).encode(x, CodecState(0), "x"))  # the host kernels' message
    for name in (device_audit.PATH,):
        out = torch.empty_like(x)
        with device_audit.path(), device_audit.counting(device_audit.Audit()) as audit:
            audit.mark(x, out)
            codec = make_codec(spec)
            host = codec.encode(x, CodecState(0), "x")  # a device tensor's message in host memory
            codec.decode(host, CodecState(0), "x", out=out)
            kept = codec.encode(x, CodecState(0), "x", out=audit_message(audit))  # and in device memory
            codec.decode(kept, CodecState(0), "x", out=out)
        assert not audit.host_arguments, (spec, name, dict(audit.host_arguments))
        assert bytes(host) == want and bytes(kept.numpy()) == want, (spec, name)
print("ok")
""".replace("BENCHMARKS", repr(str(BENCHMARKS))).replace("audit_message(audit)", "(lambda m: (audit.mark(m), m)[1])(torch.empty(0, dtype=torch.uint8))")


def test_kernels_are_given_device_tensors_only():
    """On a GPU a Triton kernel refuses a host tensor ("cannot be accessed from Triton"): a
    device tensor encoded into a message in host memory, or decoded from one, has its codes
    made on the device and copied over. Counted on the CPU: ``device_audit`` lets a kernel
    take only the tensors it follows to the device, and records any other it is given."""
    kernel_choice.passes(HOST_MESSAGES)
