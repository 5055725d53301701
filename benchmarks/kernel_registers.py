"""Registers and spills of every Triton kernel the codecs launch, compiled for a GPU on a
machine without one: Triton compiles each kernel for the target (``sm_90a``, an H100, by
default) and the ptxas that comes with Triton reports what each thread holds. The
machine code (``cuobjdump -sass``) is counted too: each thread's instructions, its
conversions (float64 to float32 and back, integer to float: a narrower pipe than float32
arithmetic) and its
float64 operations, what a kernel that is not bound by memory spends its time on. A kernel
that spills reads and writes local memory on every step, and one that holds many
registers leaves few warps per multiprocessor to hide its loads: both cost bandwidth
before any GPU has timed them.

Each kernel is compiled as Triton's JIT specializes a launch on torch's tensors at the
benchmarks' sizes (``launch_attrs``): pointers 16-byte aligned, sizes multiples of 16. The
global loads and stores are counted by their width (``access_widths``): a streaming kernel
whose float32 values are read or written 16 bytes per thread moves four in one access.

``python benchmarks/kernel_registers.py [ARCH] [--json=FILE]`` prints the table (``make
bench`` keeps it in ``kernel_registers.json`` for the README); ``tests`` check that no
kernel spills to local memory, and that every kernel but the CRC's lookups (its block
kernel and its join, ``TREES``) holds at most ``REGISTERS`` registers per thread, so that at least four programs of 4 warps fit on a multiprocessor, and that every
streaming kernel (``STREAMING``) reads or writes its values 16 bytes at a time.
"""

from __future__ import annotations

import datetime
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

TREES = {"triton_crc block", "triton_crc join"}  # register-heavy lookups
UNROLLED: set[str] = set()  # kernels whose steps are unrolled (none now)
REGISTERS = 128
RESULTS = Path(__file__).with_name("kernel_registers.json")  # kept: the README's table (``run.py``)
STREAMING = ("triton_uniform quantize", "triton_uniform dequantize", "triton_uniform bin codes", "triton_qsgd",
             "triton_rows", "triton_drop count", "triton_drop top-k count")  # a value per element
SIZES = frozenset({"n", "nbytes", "numel", "padw", "nfull", "cols"})  # sizes: multiples of 16 in the benchmarks
INSTRUCTION = r"^\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?"  # a line of cuobjdump -sass: address, predicate
WIDTHS = {"128": 16, "64": 8, "U16": 2, "S16": 2, "U8": 1, "S8": 1}  # a global access's modifier: bytes per thread


def _kernels():
    """(name, kernel, signature, constexprs, warps) of each launch configuration."""
    from thinwire.engine.kernels import triton_crc as crc
    from thinwire.engine.kernels import triton_drop as drop
    from thinwire.engine.kernels import triton_qsgd as qsgd
    from thinwire.engine.kernels import triton_range as ranged
    from thinwire.engine.kernels import triton_rows as row_kernels
    from thinwire.engine.kernels import triton_uniform as uniform
    final = {"FINAL": True, "STORE": True, "SCALED": True}
    block = {"message": "*u8", "n": "i64", "pad": "i64", "slicing": "*i32", "shifts": "*i32", "out": "*i32",
             "scale": "i32", "ones": "i32", "trailer": "*u8"}
    lanes = {"LANES": crc.WORD_LANES, "STEPS": crc.WORD_STEPS}
    yield ("triton_crc block", crc._block_crcs, block, {"LANES": crc.LANES, "SEG": crc.SEG, **final}, 4)
    yield ("triton_crc join", crc._join, {"crcs": "*i32", "m": "i32", "pad": "i32", "products": "*i32", "out": "*i32",
                                          "ones": "i32", "trailer": "*u8", "scale": "i32"},
           {"GROUP": 1 << crc.JOIN_LEVELS, "LEVELS": crc.JOIN_LEVELS, "FINAL": True, "STORE": True, "SCALED": True}, 4)
    for bits in (1, 4, 8):
        yield (f"triton_uniform quantize {bits}", uniform._quantize,
               {"x": "*fp32", "n": "i64", "lo": "fp32", "scale": "fp32", "offset": "fp32", "out": "*u8", "nbytes": "i64"},
               {"BITS": bits, "FUSED": True, "GROUPS": uniform.GROUPS}, 4)
        yield (f"triton_uniform dequantize {bits}", uniform._dequantize,
               {"packed": "*u8", "n": "i64", "nbytes": "i64", "lo": "fp32", "step": "fp32", "out": "*fp32"},
               {"BITS": bits, "GROUPS": uniform.GROUPS}, 4)
    checked = {"padw": "i64", "product": "*i32", "shifts": "*i32", "out": "*i32", "crc_scale": "i32", "ones": "i32",
               "trailer": "*u8"}
    yield ("triton_range values 8, checked", ranged._dequantize_ranged_words,
           {"codes": "*u8", "n": "i64", "lo_bytes": "*u8", "hi_bytes": "*u8", **checked, "values": "*fp32"},
           {**lanes, **final, "BINS": False}, crc.WORD_WARPS)
    for bits in (2, 4, 8):
        rows = qsgd.VALUES // 512
        yield (f"triton_qsgd quantize {bits}", qsgd._quantize,
               {"x": "*fp32", "n": "i64", "k1": "i64", "k2": "i64", "norms": "*fp32", "out": "*u8", "nbytes": "i64"},
               {"LEVELS": (1 << (bits - 1)) - 1, "BUCKET": 512, "ROWS": rows, "BITS": bits, "USE_MAX": False}, qsgd.WARPS)
        yield (f"triton_qsgd dequantize {bits}", qsgd._dequantize,
               {"packed": "*u8", "n": "i64", "nbytes": "i64", "norms": "*fp32", "out": "*fp32"},
               {"LEVELS": (1 << (bits - 1)) - 1, "BUCKET": 512, "ROWS": rows, "BITS": bits}, qsgd.WARPS)
    for bits in (1, 8):
        yield (f"triton_uniform bin codes {bits}", uniform._bin_quantize,
               {"x": "*fp32", "n": "i64", "bins": "*fp64", "out": "*u8", "nbytes": "i64"},
               {"BITS": bits, "GROUPS": uniform.GROUPS}, 4)
        yield (f"triton_rows row codes {bits}", row_kernels._row_quantize,
               {"x": "*fp32", "n": "i64", "cols": "i64", "bins": "*fp64", "out": "*u8", "nbytes": "i64"},
               {"BITS": bits, "GROUPS": uniform.GROUPS, "WIDE": False}, 4)
        yield (f"triton_rows row values {bits}", row_kernels._row_dequantize,
               {"packed": "*u8", "n": "i64", "cols": "i64", "bins": "*fp64", "out": "*fp32", "nbytes": "i64"},
               {"BITS": bits, "GROUPS": uniform.GROUPS, "WIDE": False}, 4)
    yield ("triton_rows row values 8, checked", row_kernels._row_dequantize_words,
           {"codes": "*u8", "n": "i64", "cols": "i64", "bins": "*fp64", **checked, "values": "*fp32"},
           {**lanes, **final, "WIDE": False}, crc.WORD_WARPS)
    chunk = {"src": "*fp32", "grad": "*fp32", "starts": "*i64", "stops": "*i64", "segment": "*i32", "thresholds": "*fp32"}
    for aligned in (True, False):  # graddrop's, as found; over chunks at multiples of 16 values (the benchmarks'), or not
        yield (f"triton_drop count{'' if aligned else ', unaligned'}", drop._count,
               dict(chunk, thresholds="*fp64", counts="*i32", words="*i32", non_finite="*i32", residual="*fp32"),
               {"ADD": True, "INCLUSIVE": False, "BLOCK": drop.BLOCK, "AT_LEAST": False, "FLAG": True, "STORE": True,
                "ALIGNED": aligned}, drop.WARPS)
    yield ("triton_drop compact", drop._compact,
           {"src": "*fp32", "starts": "*i64", "words": "*i32", "ends": "*i64", "index": "*i64", "values": "*fp32",
            "residual": "*fp32", "lo": "i64", "hi": "i64"}, {"ZERO": True, "BLOCK": drop.BLOCK}, drop.COMPACT_WARPS)
    yield ("triton_drop compact, dense", drop._compact_dense,
           {"src": "*fp32", "starts": "*i64", "words": "*i32", "ends": "*i64", "index": "*i64", "values": "*fp32",
            "residual": "*fp32", "lo": "i64", "hi": "i64"}, {"ZERO": True, "BLOCK": drop.BLOCK}, drop.WARPS)
    yield ("triton_drop top-k count", drop._count, dict(chunk, counts="*i32", words="*i32", non_finite="*i32",
                                                        residual="*fp32"),
           {"ADD": False, "INCLUSIVE": False, "BLOCK": drop.TOPK_BLOCK, "AT_LEAST": True, "FLAG": True, "STORE": False,
            "ALIGNED": True}, drop.WARPS)
    for name, survivors in (("compact", 0), ("compact, dense", drop.TOPK_BLOCK)):  # one chunk's, of each kind
        kernel, warps = drop.compactor(survivors, 1, drop.TOPK_BLOCK)
        yield (f"triton_drop top-k {name}", kernel,
               {"src": "*fp32", "starts": "*i64", "words": "*i32", "ends": "*i64", "index": "*i64", "values": "*fp32",
                "residual": "*fp32", "lo": "i64", "hi": "i64"}, {"ZERO": False, "BLOCK": drop.TOPK_BLOCK}, warps)


CONVERSIONS = ("F2F", "F2FP", "I2F", "I2FP", "F2I", "FRND")  # SASS's conversions
FLOAT64 = ("DFMA", "DADD", "DMUL")
UNFUSED = ("triton_rows row values",)  # launched with enable_fp_fusion=False
FLOAT64_EXACT = ("triton_uniform bin codes", "triton_rows row codes", "triton_rows row values")  # the host's
# float64 operations one at a time: no fused multiply-add may round twice as once


def tools() -> Path | None:
    """The folder of CUDA tools that comes with Triton (its ptxas and cuobjdump), or None."""
    import triton
    found = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    return found if (found / "cuobjdump").exists() else None


def opcodes(sass: str) -> Counter:
    """How many of each opcode (``IMAD``, ``F2F``, ...: modifiers dropped) ``cuobjdump -sass``
    lists: the kernel's instructions as compiled, each counted once (a loop's body once)."""
    return Counter(m.group(1).split(".")[0]
                   for m in re.finditer(INSTRUCTION + r"([A-Z][A-Z0-9_.]*)", sass, re.M))


def launch_attrs(fn, signature: dict) -> dict:
    """The specialization Triton's JIT gives a launch on tensors allocated by torch, whose
    sizes (``SIZES``) are multiples of 16, as the benchmarks' 25M and 250M values are: every
    pointer 16-byte aligned and every size divisible by 16 (``tt.divisibility``). Without
    it a kernel is compiled for any alignment, and no access is wider than one value."""
    return {(fn.arg_names.index(name),): [["tt.divisibility", 16]] for name, kind in signature.items()
            if kind.startswith("*") or name in SIZES}


def access_widths(sass: str, op: str) -> Counter:
    """How many global loads (``op`` ``"LDG"``) or stores (``"STG"``) of each width in bytes per
    thread (16, 8, 4, 2 or 1) the machine code holds: 16 where the compiler vectorized four
    float32 values into one access."""
    found = Counter()
    for m in re.finditer(INSTRUCTION + op + r"((?:\.[A-Z0-9_]+)*)", sass, re.M):
        mods = m.group(1).split(".")
        found[next((WIDTHS[w] for w in mods if w in WIDTHS), 4)] += 1
    return found


def report(arch: str = "sm_90a", names: set[str] | None = None) -> list[dict]:
    """Each kernel's registers and local memory per thread (spills; ``LOCAL``) for ``arch``
    (``sm_XY`` or ``sm_XYa``), read by cuobjdump from the binary Triton's compiler made."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    capability = int(re.fullmatch(r"sm_(\d+)a?", arch).group(1))
    target = GPUTarget("cuda", capability, 32)
    rows = []
    for name, fn, signature, constants, warps in _kernels():
        if names is not None and name not in names:
            continue
        source = ASTSource(fn, {**signature, **{k: "constexpr" for k in constants}}, constexprs=constants,
                           attrs=launch_attrs(fn, signature))
        fusion = not name.startswith(UNFUSED)  # as they are launched
        compiled = triton.compile(source, target=target, options={"num_warps": warps, "enable_fp_fusion": fusion})
        with tempfile.TemporaryDirectory() as folder:
            binary = Path(folder, "kernel.cubin")
            binary.write_bytes(compiled.asm["cubin"])
            done, sass = (subprocess.run([str(tools() / "cuobjdump"), flag, str(binary)], capture_output=True,
                                         text=True, check=True) for flag in ("-res-usage", "-sass"))
        usage = re.search(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)", done.stdout)
        ops = opcodes(sass.stdout)
        rows.append({"kernel": name, "warps": warps, "registers": int(usage.group(1)), "stack_bytes": int(usage.group(2)),
                     "shared_bytes": int(usage.group(3)), "local_bytes": int(usage.group(4)),
                     "float64_fma": compiled.asm["ptx"].count("fma.rn.f64"),
                     "instructions": sum(ops.values()), "conversions": sum(ops[op] for op in CONVERSIONS),
                     "float64_ops": sum(ops[op] for op in FLOAT64), "loads": access_widths(sass.stdout, "LDG"),
                     "stores": access_widths(sass.stdout, "STG"), "triton": triton.__version__})
    return rows


def widths(counted: dict) -> str:
    """``access_widths`` as "16 B: 4, 1 B: 2", widest first (keys ints, or strings as kept)."""
    by = {int(w): n for w, n in counted.items() if n}
    return ", ".join(f"{w} B: {by[w]}" for w in sorted(by, reverse=True)) or "none"


def table(rows: list[dict], arch: str) -> str:
    """The rows as a Markdown table."""
    lines = [f"| kernel ({arch}, Triton {rows[0]['triton']}) | warps | registers per thread | local memory per thread "
             "(spills), bytes | instructions | conversions | float64 operations | global loads by bytes per thread | "
             "global stores by bytes per thread |", "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['kernel']} | {r['warps']} | {r['registers']} | {r['local_bytes']} | {r['instructions']} | "
              f"{r['conversions']} | {r['float64_ops']} | {widths(r['loads'])} | {widths(r['stores'])} |" for r in rows]
    return "\n".join(lines)


def kept(rows: list[dict]) -> list[dict]:
    """The rows as ``RESULTS`` keeps them (JSON: the widths' keys strings)."""
    return json.loads(json.dumps(rows))


def main(argv: list[str]) -> int:
    """``kernel_registers.py [ARCH] [--json FILE]``: the table, and with ``--json`` the rows
    kept in FILE (``run.py`` writes them to ``RESULTS`` for the README)."""
    if tools() is None:
        print("kernel_registers: this Triton has no CUDA tools; nothing compiled")
        return 0
    target = next((Path(a.split("=", 1)[1]) for a in argv if a.startswith("--json=")), None)
    argv = [a for a in argv if not a.startswith("--json=")]
    arch = argv[0] if argv else "sm_90a"
    rows = report(arch)
    print(table(rows, arch))
    if target is not None:
        from wait_policy import commit
        tmp = target.with_suffix(".tmp")
        tmp.write_text(json.dumps({"date": datetime.date.today().isoformat(), "commit": commit(), "arch": arch,
                                   "rows": kept(rows)}, indent=1))
        tmp.replace(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
