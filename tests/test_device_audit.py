"""What a message asks of the host on a GPU (``benchmarks/device_audit.py``), counted on the
CPU under Triton's interpreter: the one-pass paths write (and read) a message with one
kernel, not the kernel and then the ordinary path again, and the dense codecs' messages
need no host read to be written and at most two (the header, the checksum) to be read,
none inside ``wire.deferred_checks``, where min-max and bin quantization's need none either."""

from pathlib import Path

import kernel_choice

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"

CHECK = r"""
import sys
sys.path.insert(0, BENCHMARKS)
import device_audit  # sets TRITON_INTERPRET=1 before triton is imported

def counts(spec, size):
    row = device_audit.audit_codec(spec, size, ("triton",))
    return row["triton"]["encode"], row["triton"]["decode"]

for size in ("small", "large"):
    for spec, one_pass in (("fp32", "_block_words"), ("fp16", "_block_halves"), ("bf16", "_block_halves")):
        encode, decode = counts(spec, size)
        assert encode["triton_names"].get(one_pass) == 1, (spec, size, encode["triton_names"])
        assert set(encode["triton_names"]) <= {one_pass, "_join"}, (spec, size, encode["triton_names"])
        assert encode["reads"] == 0, (spec, size, encode["where"])
        assert encode["ops"] == 1, (spec, size, encode["op_names"])  # the header's copy
        assert 1 <= decode["reads"] <= 2, (spec, size, decode["where"])
    encode, decode = counts("quantize(bits=8)", size)
    assert encode["triton_names"].get("_quantize_words") == 1, (size, encode["triton_names"])
    assert "_block_words" not in encode["triton_names"], (size, encode["triton_names"])
    encode, decode = counts("binquant(bits=8)", size)  # its bin codes: triton_range's kernels
    assert encode["triton_names"].get("_quantize_ranged_words") == 1, (size, encode["triton_names"])
    assert "_block_words" not in encode["triton_names"], (size, encode["triton_names"])
    if size == "large":  # read as it is checked (a small message: checked, then read)
        assert decode["triton_names"].get("_dequantize_ranged_words") == 1, decode["triton_names"]
        assert "_block_words" not in decode["triton_names"], decode["triton_names"]
    encode, decode = counts("colquant(bits=8)", size)  # MQGrad's row codes, the rows' ranges after them
    assert encode["triton_names"].get("_row_quantize_words") == 1, (size, encode["triton_names"])
    assert "_block_words" not in encode["triton_names"], (size, encode["triton_names"])
    if size == "large":  # the ranges judged with the checksum: the header's read and that one
        assert decode["triton_names"].get("_row_dequantize_words") == 1, decode["triton_names"]
        assert "_block_words" not in decode["triton_names"] and decode["reads"] == 2, decode
# a large fp32 message is read as it is checked: the header, then the checksum
_, decode = counts("fp32", "large")
assert decode["reads"] == 2 and decode["triton_names"].get("_block_words") == 1, decode
# its blocks' CRCs joined by a launch of their own, or folded into the one kernel that writes (reads) it
row = device_audit.audit_codec("fp32", "large", ("triton", "folded"))
for part in ("encode", "decode"):
    assert row["triton"][part]["triton_names"] == {"_block_words": 1, "_join": 1}, row["triton"][part]
    assert row["folded"][part]["triton_names"] == {"_block_words": 1}, row["folded"][part]
    assert row["folded"][part]["reads"] == row["triton"][part]["reads"], part
# inside wire.deferred_checks a dense message decodes by its one kernel, and the block's end reads once
for spec, one_pass in (("fp32", "_block_words"), ("fp16", "_block_halves"), ("bf16", "_block_halves")):
    folded = device_audit.audit_codec(spec, "small", ("folded",))["folded"]
    inside = folded["decode_deferred"]
    assert (inside["ops"], inside["reads"], inside["triton_names"]) == (0, 0, {one_pass: 1}), (spec, inside)
    assert folded["block_end"] == {"ops": 1, "triton": 0, "reads": 1}, (spec, folded["block_end"])
# min-max quantization keeps its range on the device there: an encode and a decode read nothing
for spec in ("quantize(bits=8)", "quantize(bits=3)"):
    folded = device_audit.audit_codec(spec, "small", ("folded",))["folded"]
    encode, decode = folded["encode_deferred"], folded["decode_deferred"]
    # 8 bits: the codes written (read) as they are checksummed, lo's and hi's bytes added to the CRC after
    words, crc = ("_quantize_ranged_words", "_with_words") if spec.endswith("8)") else ("_quantize_ranged",
                                                                                          "_block_words")
    assert encode["reads"] == 0 and encode["triton_names"] == {
        "_extrema_blocks": 1, "_extrema_final": 1, words: 1, crc: 1}, (spec, encode)
    assert encode["op_names"] == {"copy": 3}, (spec, encode)  # the kept header, lo, hi
    assert (decode["ops"], decode["reads"], decode["triton_names"]) == (
        0, 0, {crc: 1, words.replace("_quantize", "_dequantize"): 1}), (spec, decode)
    assert folded["block_end"] == {"ops": 1, "triton": 0, "reads": 1}, (spec, folded["block_end"])
    assert folded["encode"]["reads"] + folded["decode"]["reads"] >= 2, spec  # outside a block: a wait each
# ... and so does Oland & Raj's bin quantizer with raw codes
folded = device_audit.audit_codec("binquant(bits=8)", "small", ("folded",))["folded"]
encode, decode = folded["encode_deferred"], folded["decode_deferred"]
assert encode["reads"] == decode["reads"] == 0 and folded["block_end"]["reads"] == 1, folded
assert encode["triton_names"].get("_quantize_ranged_words") == 1 and decode["triton_names"] == {
    "_with_words": 1, "_dequantize_ranged_words": 1}, folded
assert folded["encode"]["reads"] == folded["decode"]["reads"] == 1, folded
# ... and QSGD its norms, MQGrad's quantizer its rows' ranges
for spec in ("qsgd(bits=8, bucket=512)", "colquant(bits=8)"):
    folded = device_audit.audit_codec(spec, "small", ("folded",))["folded"]
    assert folded["encode_deferred"]["reads"] == folded["decode_deferred"]["reads"] == 0, (spec, folded)
    assert folded["block_end"]["reads"] == 1 and folded["encode"]["reads"] + folded["decode"]["reads"] == 3, spec
# ... and top-k's decode its indices' range (it still reads its header and checksum as it opens)
folded = device_audit.audit_codec("topk(ratio=0.01)", "small", ("folded",))["folded"]
assert folded["decode_deferred"]["reads"] == 1 and folded["decode"]["reads"] == 2, folded
assert folded["encode_deferred"]["reads"] == folded["encode"]["reads"] == 1 and folded["block_end"]["reads"] == 1
# gradient dropping's offsets are checked in one read, after the header's
decode = device_audit.audit_codec("graddrop(ratio=0.99)", "small", ("triton",))["triton"]["decode"]
assert decode["reads"] == 2, decode["where"]
# ... and with quantized values its segments' check in the same copy (``deferred.ReadTogether``)
decode = device_audit.audit_codec("graddrop(ratio=0.99, bits=1)", "small", ("triton",))["triton"]["decode"]
assert decode["reads"] == 2, decode["where"]
# its sample drawn one message ahead, the gradient is added inside the drop pass: one pass
# reads the residual and the gradient (only the sample's values are added apart)
row = device_audit.audit_codec("graddrop(ratio=0.99)", "large", ("triton",))
launched = row["triton"]["encode"]["bytes_by_launch"]
assert launched["_count"] >= 12 * row["values"] and launched.get("add", 0) < row["values"], launched
# ... and the encoder reads what it needs of the pass in one wait (``drop_survivors``): the
# survivors' count, the thresholds, NaN and Inf, each span's survivors, the long gaps
for size in ("small", "large"):
    for spec in ("graddrop(ratio=0.99)", "graddrop(ratio=0.99, scope='local', bits=1)"):
        encode = device_audit.audit_codec(spec, size, ("triton",))["triton"]["encode"]
        assert encode["reads"] == 1, (spec, size, encode["where"])
print("ok")
""".replace("BENCHMARKS", repr(str(BENCHMARKS)))


def test_one_pass_paths_launch_once_and_read_little():
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
    for name in device_audit.PATHS:
        out = torch.empty_like(x)
        with device_audit.path(*device_audit.PATHS[name]), device_audit.counting(device_audit.Audit()) as audit:
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
