"""CRC-32C of a buffer in device memory, computed on the device (Triton): the checksum a
message kept on a GPU would need, so that its bytes never cross to the host.

A message written into a GPU tensor (``wire/tensor_message.py``) is checksummed by it,
on the GPU, and ``gpu_bench``'s ``device_crc`` part measures it against the GPU's add pass. It gives ``wire/checksum.py``'s value
for the same bytes (tested on the CPU under Triton's interpreter, ``TRITON_INTERPRET=1``).

The arithmetic is ``crc_math``'s: for the raw CRC R (zero initial register, no final xor),
R(A || B) = R(A) x^(8 |B|) + R(B) in GF(2)[x] mod the Castagnoli polynomial, and leading
zero bytes leave R unchanged. The standard CRC-32C (initial register and final xor all
ones) is R(M) + x^(8 |M|) (2^32 - 1) + (2^32 - 1).

1. ``_block_crcs``, one program per ``BLOCK`` bytes: ``LANES`` lanes each take ``SEG``
   contiguous bytes and advance their own register 16 bytes at a time through the 16
   slicing tables (table 15 - j holds byte j's effect on the register 15 - j bytes later;
   the register's 4 bytes are mixed into the first 4). The lanes' CRCs are then joined in
   pairs, level k multiplying the left one by x^(8 SEG 2^k), until one is left. The
   message is padded with zeros at the front to whole blocks, which changes no raw CRC.
2. ``_join``: the blocks' CRCs in groups of up to 2^``JOIN_LEVELS``, one program each,
   joined the same way (level k of the whole tree by x^(8 BLOCK 2^k)), the first group
   padded with zeros at the front; again on the groups' CRCs until one is left.
3. ``_finish``: the kernel that makes the last CRC adds the all-ones term and, for a
   message, writes the trailer's 4 bytes itself, so checksumming a message on a GPU is one
   or two launches and nothing else.

``JOIN`` picks how step 2 is made: ``"tree"``, the ``_join`` launches above, or ``"fold"``,
in the block kernel itself, so that a CRC of any length is one launch (``_settle``). Block
i of B contributes R(block i) x^(8 BLOCK (B - 1 - i)) to the raw CRC, the power read from
two tables of x^(8 BLOCK j) and x^(8 BLOCK S j), j < S (``FOLD_SPLIT``, 1024), and
multiplied in by two ``_times``; each program xors its contribution into a tally word and
then counts itself in a second (atomics, ordered by their acquire-release semantics), and
the program that counts last takes the tally, resets both words for the next CRC on its
stream, and finishes as step 3. The xor is the same in any order, so the CRC is exact;
the tally is kept per device and stream (``_fold_state``), with the tables after it.

Multiplying by a constant K is linear in the other factor, so it is four lookups, one per
byte of the register, in K's 4 x 256 table (``_mul``). Every table is made once per device
on the host from ``crc_math.multiply``.

``KERNEL`` picks how step 1 joins its lanes' CRCs into the block's:

- ``"slicing"``: the tree above, each level's products by table lookups (``_tree``);
- ``"shifted"``: each lane's CRC multiplied by x^(8 SEG (LANES - 1 - lane)), the lanes'
  constants held in one table of ``LANES`` words, by 32 conditional xors (``_times``, no
  lookups), and the products xor-ed together. Compiled for sm_90 (Triton 3.6) the tree
  makes four times as many table loads per thread as the bytes' own lookups, and the
  shifted join a quarter as many as the tree.
- ``"words"`` (``_block_words``): 4-byte words instead of bytes, and lanes that stride
  instead of owning a contiguous run: lane l of a block of ``WORD_LANES`` x ``WORD_STEPS``
  words reads words l, l + WORD_LANES, ..., so each step's loads are one contiguous run
  of the buffer. A lane's register takes a step as ``crc = crc * x^(32 WORD_LANES) + w``
  (one constant's product table: 4 lookups a word, as slicing makes 4 a word, in 4 KiB of
  tables instead of 16), and the block's raw CRC is the xor over lanes of
  crc_l * x^(32 (WORD_LANES - l)) (by ``_times``), since word i of an N-word block
  contributes w_i x^(32 (N - i)). A buffer of n bytes is read as n // 4 words and a last
  word of its n % 4 remaining bytes padded with zeros at the end, whose effect (a factor
  x^(8 pad)) the last kernel takes out by multiplying by its inverse (``crc_math.inverse``).
  The buffer (and a copy's target) must start on a 4-byte boundary; one that does not goes
  to the byte kernel. Compiled for sm_90 (Triton 3.6) it makes 163 loads per thread per
  block, where ``"slicing"`` makes 768 and ``"shifted"`` 258, and holds 54 registers per
  thread where they hold 255 and 216 (``benchmarks/kernel_registers.py``): many more of
  its programs share a multiprocessor.

With ``"words"`` a copy rides along: ``crc32c_copy`` stores each word it loads into a
target, so a message's one plain part is copied in, or out, and checksummed in one pass
(``wire/tensor_message.py``), the CRC of the host bytes before the part folded in as a
constant. The other kernels copy first and then checksum. ``gpu_bench`` times every
kernel. ``"shifted"`` is the default, chosen on an H100 run at commit 5fe3e8b
(``gpu-runs/bench_gpu.json``, parts ``device_crc`` and ``device_messages``): it checksummed
100 MB at 0.79 of the add pass and 1 GB at 1.31, where ``"slicing"`` reached 0.43 and 0.54,
and ``"words"`` 0.27 and 1.31; ``"words"`` wrote the larger dense messages fastest (fp32
of 250M values at 0.39 of the add pass, ``"shifted"`` 0.21) but the smaller ones slowest
(fp16 of 25M: 0.11, ``"shifted"`` 0.19). The H100 run at 727e907 (``device_crc`` only)
checksummed 100 MB and 1 GB with ``"words"`` at 0.77 and 1.43, ``"shifted"`` 0.61 and
1.26, ``"slicing"`` 0.41 and 0.52 (blocks joined by ``"tree"``; ``"fold"`` was slower for
every kernel but ``"shifted"`` at 100 MB). The dense messages were not timed again in that
run, so the default stays until ``device_messages`` compares the kernels at one commit.

A kernel whose lanes' CRCs are parities of int8 matrix products on the tensor cores (no
lookups at all) measured slower than ``"slicing"`` on an H100 and lives among
``benchmarks/crc_variants.py``'s variants.
"""

from __future__ import annotations

import functools
import importlib.util
import os

import numpy as np
import torch

from .crc import combine
from .crc_math import ONE, POLY, inverse, multiply, x_8n

AVAILABLE = importlib.util.find_spec("triton") is not None
LANES, SEG = 256, 64           # one program: 256 lanes x 64 contiguous bytes
BLOCK = LANES * SEG            # 16 KiB
LANE_LEVELS = LANES.bit_length() - 1
JOIN_LEVELS = 10               # one program of ``_join`` joins up to 2^10 CRCs
JOIN = "tree"                  # step 2: "tree" (``_join`` launches) or "fold" (in the block kernel)
JOINS = ("tree", "fold")
FOLD_SPLIT = 1 << 10           # "fold": powers of x^(8 BLOCK) for up to FOLD_SPLIT^2 blocks (16 GiB)
KERNEL = "shifted"             # step 1: "slicing", "shifted" or "words"
KERNELS = ("slicing", "shifted", "words")
WORD_LANES, WORD_STEPS = 256, 16  # "words": one program, 256 lanes x 16 words (BLOCK bytes)
WORD_WARPS = 4


def slicing_tables() -> np.ndarray:
    """16 x 256: table k is byte b's effect on the register after k more zero bytes."""
    t = np.zeros((16, 256), np.uint64)
    for b in range(256):
        c = b
        for _ in range(8):
            c = (c >> 1) ^ POLY if c & 1 else c >> 1
        t[0, b] = c
    for k in range(1, 16):
        t[k] = (t[k - 1] >> 8) ^ t[0][t[k - 1] & 0xFF]
    return t.astype(np.uint32)


def product_tables(constants: list[int]) -> np.ndarray:
    """For each constant K, 4 x 256 entries: K * a = xor over j of table[j][byte j of a]."""
    out = np.zeros((len(constants), 4, 256), np.uint32)
    for i, k in enumerate(constants):
        for j in range(4):
            for b in range(256):
                out[i, j, b] = multiply(k, b << (8 * j))
    return out


@functools.lru_cache(maxsize=None)
def _tables(device: str, block_levels: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    def on(t: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(t.view(np.int32).copy()).to(device)
    return (on(slicing_tables()), on(product_tables([x_8n(SEG << k) for k in range(LANE_LEVELS)])),
            on(product_tables([x_8n(BLOCK << k) for k in range(block_levels)])))


@functools.lru_cache(maxsize=None)
def _lane_shifts(device: str) -> torch.Tensor:
    """x^(8 SEG (LANES - 1 - lane)) mod the polynomial for each lane, as int32 bits: what
    moves a lane's CRC to the end of its block (``"shifted"``)."""
    shifts = np.array([x_8n(SEG * (LANES - 1 - lane)) for lane in range(LANES)], np.uint32)
    return torch.from_numpy(shifts.view(np.int32).copy()).to(device)


def interpreted() -> bool:
    """Whether this process's kernels are run by Triton's interpreter: ``TRITON_INTERPRET=1``
    was set when triton was imported (the kernels were made then), and still is."""
    return AVAILABLE and os.environ.get("TRITON_INTERPRET") == "1" and type(_join).__name__ == "InterpretedFunction"


def triton_runs(*tensors: torch.Tensor) -> bool:
    """Whether a Triton kernel can take these tensors: Triton present, and every tensor
    contiguous on one GPU (or on the CPU under Triton's interpreter, ``interpreted()``: the
    variable set after triton was imported would send CPU tensors to compiled kernels,
    which have no driver for them). What the codec kernels (``triton_uniform``,
    ``triton_qsgd``, ``triton_drop``) each ask first."""
    devices = {t.device for t in tensors}
    where = next(iter(devices)).type if len(devices) == 1 else None
    return (AVAILABLE and all(t.is_contiguous() for t in tensors)
            and (where not in (None, "cpu") or (where == "cpu" and interpreted())))


@functools.lru_cache(maxsize=None)
def _word_tables(device: str, lanes: int = WORD_LANES) -> tuple[torch.Tensor, torch.Tensor]:
    """``"words"``: the product table of x^(32 lanes) (what one step moves a lane's CRC by)
    and each lane's x^(32 (lanes - lane))."""
    def on(t: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(t.view(np.int32).copy()).to(device)
    shifts = np.array([x_8n(4 * (lanes - lane)) for lane in range(lanes)], np.uint32)
    return on(product_tables([x_8n(4 * lanes)])), on(shifts)


@functools.lru_cache(maxsize=None)
def _fold_tables(split: int) -> np.ndarray:
    """``"fold"``'s powers: x^(8 BLOCK j) and x^(8 BLOCK split j) for j < split (a power of two,
    ``FOLD_SPLIT``)."""
    out = np.empty((2, split), np.uint32)
    for row, step in enumerate((x_8n(BLOCK), x_8n(BLOCK * split))):
        power = ONE
        for j in range(split):
            out[row, j] = power
            power = multiply(power, step)
    return out


_FOLDS: dict[tuple[str, int, int], torch.Tensor] = {}


def _fold_state(device: torch.device) -> torch.Tensor:
    """``"fold"``'s int32 words on ``device`` for the current stream: the tally and the count
    (zero between CRCs: the last program resets them), log2 ``FOLD_SPLIT``, then
    ``_fold_tables``. A stream of its own, so that CRCs running at once on two streams do not
    share a tally."""
    device = torch.device(device)
    stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
    key = (str(device), stream, FOLD_SPLIT)
    state = _FOLDS.get(key)
    if state is None:
        head = np.array([0, 0, FOLD_SPLIT.bit_length() - 1], np.uint32)
        words = np.concatenate([head, _fold_tables(FOLD_SPLIT).ravel()])
        state = _FOLDS[key] = torch.from_numpy(words.view(np.int32).copy()).to(device)
    return state


def _folds(blocks: int) -> bool:
    """Whether step 2 is folded into step 1's kernel for ``blocks`` blocks (``JOIN``)."""
    if JOIN not in JOINS:
        raise ValueError(f"triton_crc.JOIN must be one of {JOINS}, got {JOIN!r}")
    return JOIN == "fold" and 1 < blocks <= FOLD_SPLIT * FOLD_SPLIT


@functools.lru_cache(maxsize=64)
def _ones_term(n: int) -> int:
    """What the all-ones initial register and final xor add to the raw CRC of n bytes."""
    return multiply(x_8n(n), 0xFFFFFFFF) ^ 0xFFFFFFFF


if AVAILABLE:  # the kernels are compiled for the device of their first buffer
    import triton
    import triton.language as tl

    @triton.jit
    def _mul(a, table):
        r = tl.load(table + (a & 255).to(tl.int32))
        r ^= tl.load(table + 256 + ((a >> 8) & 255).to(tl.int32))
        r ^= tl.load(table + 512 + ((a >> 16) & 255).to(tl.int32))
        r ^= tl.load(table + 768 + (a >> 24).to(tl.int32))
        return r.to(tl.uint32, bitcast=True)

    @triton.jit
    def _tree(crc, products, N: tl.constexpr, LEVELS: tl.constexpr):
        for k in tl.static_range(LEVELS):
            left, right = tl.split(tl.reshape(crc, [N >> (k + 1), 2]))
            crc = _mul(left, products + k * 1024) ^ right
        return crc

    @triton.jit
    def _times(a, b):
        """a * b mod the polynomial for uint32 tensors in the reflected order CRCs are kept
        in (``crc_math.multiply``): 32 conditional xors, no lookups."""
        product = tl.zeros_like(a)
        poly = tl.full(b.shape, 0x82F63B78, tl.uint32)  # crc_math.POLY
        for i in tl.static_range(32):
            product ^= tl.where(((a >> (31 - i)) & 1) != 0, b, 0)
            b = (b >> 1) ^ tl.where((b & 1) != 0, poly, 0)
        return product

    @triton.jit
    def _block_crcs(message, n, pad, slicing, products, out, fold, scale, ones, trailer, LANES: tl.constexpr,
                    SEG: tl.constexpr, LEVELS: tl.constexpr, FINAL: tl.constexpr, STORE: tl.constexpr,
                    SHIFTED: tl.constexpr, SCALED: tl.constexpr, FOLD: tl.constexpr):
        """Step 1; ``SHIFTED``: the lanes joined by ``_times`` with ``products`` holding each
        lane's x^(8 SEG (LANES - 1 - lane)), else by the tree."""
        block = tl.program_id(0).to(tl.int64)
        lane = tl.arange(0, LANES).to(tl.int64)
        j = tl.arange(0, 16)
        start = block * (LANES * SEG) + lane * SEG - pad
        crc = tl.zeros([LANES], dtype=tl.uint32)
        for t in tl.static_range(0, SEG, 16):
            at = start[:, None] + t + j[None, :]
            b = tl.load(message + at, mask=(at >= 0) & (at < n), other=0).to(tl.uint32)
            register = (crc[:, None] >> (8 * (j[None, :] & 3)).to(tl.uint32)) & 255
            mixed = b ^ tl.where(j[None, :] < 4, register, 0)
            effect = tl.load(slicing + (15 - j[None, :]) * 256 + mixed.to(tl.int32)).to(tl.uint32, bitcast=True)
            crc = tl.xor_sum(effect, axis=1)
        if SHIFTED:
            shifts = tl.load(products + tl.arange(0, LANES)).to(tl.uint32, bitcast=True)
            crc = tl.xor_sum(tl.reshape(_times(crc, shifts), [1, LANES]), axis=1)
        else:
            crc = _tree(crc, products, LANES, LEVELS)
        _settle(crc, out, fold, ones, trailer, FINAL, STORE, scale, SCALED, FOLD)

    @triton.jit
    def _finish(crc, out, ones, trailer, FINAL: tl.constexpr, STORE: tl.constexpr, scale=0,
                SCALED: tl.constexpr = False):
        """Store one CRC; the last one (``FINAL``) is multiplied by ``scale`` when ``SCALED``,
        gets the all-ones term and, with ``STORE``, is also written little-endian into the
        message's 4-byte trailer."""
        if FINAL:
            if SCALED:
                crc = _times(crc, tl.full(crc.shape, scale, tl.int32).to(tl.uint32, bitcast=True))
            crc ^= ones.to(tl.uint32, bitcast=True)
        tl.store(out + tl.arange(0, 1), crc.to(tl.int32, bitcast=True))
        if STORE:
            shift = (8 * tl.arange(0, 4)).to(tl.uint32)
            tl.store(trailer + tl.arange(0, 4), ((crc >> shift) & 255).to(tl.uint8))

    @triton.jit
    def _settle(crc, out, fold, ones, trailer, FINAL: tl.constexpr, STORE: tl.constexpr, scale, SCALED: tl.constexpr,
                FOLD: tl.constexpr):
        """A block's CRC stored for step 2 (``_finish``), or, with ``FOLD``, moved to the
        buffer's end, xor-ed into the tally ``fold[0]`` and counted in ``fold[1]``; the
        program counted last finishes the CRC from the tally and resets both words."""
        if FOLD:
            k = tl.num_programs(0) - 1 - tl.program_id(0)  # blocks after this one
            bits = tl.load(fold + 2)  # log2 FOLD_SPLIT
            one = tl.arange(0, 1)
            near = tl.load(fold + 3 + (k & ((1 << bits) - 1)) + one).to(tl.uint32, bitcast=True)
            far = tl.load(fold + 3 + (1 << bits) + (k >> bits) + one).to(tl.uint32, bitcast=True)
            moved = tl.xor_sum(_times(_times(crc, near), far), axis=0)
            tl.atomic_xor(fold, moved.to(tl.int32, bitcast=True))
            if tl.atomic_add(fold + 1, 1) == tl.num_programs(0) - 1:
                total = tl.atomic_xchg(fold, 0)
                tl.atomic_xchg(fold + 1, 0)
                _finish((total + tl.zeros([1], tl.int32)).to(tl.uint32, bitcast=True), out, ones, trailer, True,
                        STORE, scale, SCALED)
        else:
            _finish(crc, out + tl.program_id(0), ones, trailer, FINAL, STORE, scale, SCALED)

    @triton.jit
    def _join(crcs, m, pad, products, out, ones, trailer, GROUP: tl.constexpr, LEVELS: tl.constexpr,
              FINAL: tl.constexpr, STORE: tl.constexpr, scale=0, SCALED: tl.constexpr = False):
        group = tl.program_id(0)
        at = group * GROUP + tl.arange(0, GROUP) - pad
        crc = tl.load(crcs + at, mask=(at >= 0) & (at < m), other=0).to(tl.uint32, bitcast=True)
        crc = _tree(crc, products, GROUP, LEVELS)
        _finish(crc, out + group, ones, trailer, FINAL, STORE, scale, SCALED)

    @triton.jit
    def _block_words(words, tail_bytes, nfull, tail, padw, product, shifts, out, fold, scale, ones, trailer,
                     target_words, target_tail, LANES: tl.constexpr, STEPS: tl.constexpr, FINAL: tl.constexpr,
                     STORE: tl.constexpr, SCALED: tl.constexpr, FOLD: tl.constexpr, COPY: tl.constexpr):
        """Step 1 of ``"words"``: lane l of a block reads words l, l + LANES, l + 2 LANES, ...
        (each load of the block's lanes one contiguous run), ``crc = crc * x^(32 LANES) + w``
        by one product table, then each lane's CRC times x^(32 (LANES - lane)) (``shifts``,
        by ``_times``), all xor-ed. The last ``tail`` bytes (< 4) come as one word padded
        with zeros at the end; ``scale`` takes that padding out again. ``COPY``: every word
        (and the tail's bytes) is also stored at the same place in the target."""
        block = tl.program_id(0).to(tl.int64)
        lane = tl.arange(0, LANES)
        first = block * (LANES * STEPS) - padw  # the block's first word (before 0: padding)
        k4 = tl.arange(0, 4)
        tail_part = tl.load(tail_bytes + k4, mask=k4 < tail, other=0).to(tl.uint32)
        tail_word = tl.sum(tail_part << (8 * k4).to(tl.uint32), axis=0)
        crc = tl.zeros([LANES], dtype=tl.uint32)
        for k in tl.static_range(STEPS):
            at = first + k * LANES + lane
            full = (at >= 0) & (at < nfull)
            w = tl.load(words + at, mask=full, other=0)
            if COPY:
                tl.store(target_words + at, w, mask=full)
            w = tl.where(at == nfull, tail_word, w.to(tl.uint32, bitcast=True))
            crc = _mul(crc, product) ^ w
        if COPY:
            held = nfull - first + 0 * k4  # the tail word's place in this block, per byte
            tl.store(target_tail + k4, tail_part.to(tl.uint8), mask=(k4 < tail) & (held >= 0) & (held < LANES * STEPS))
        crc = _times(crc, tl.load(shifts + lane).to(tl.uint32, bitcast=True))
        crc = tl.xor_sum(tl.reshape(crc, [1, LANES]), axis=1)
        _settle(crc, out, fold, ones, trailer, FINAL, STORE, scale, SCALED, FOLD)


def crc32c(buffer: torch.Tensor) -> int:
    """The CRC-32C of a contiguous uint8 tensor's bytes, computed on its device (a GPU, or
    the CPU under ``TRITON_INTERPRET=1``); reading the result waits for the device."""
    return int(crc32c_tensor(buffer).item()) & 0xFFFFFFFF


def _check(**tensors: torch.Tensor | None) -> None:
    if not AVAILABLE:
        raise RuntimeError("triton_crc needs the triton package (it comes with CUDA builds of torch)")
    for name, t in tensors.items():
        if t is not None and (t.dtype != torch.uint8 or t.dim() != 1 or not t.is_contiguous()):
            raise ValueError(f"{name} must be a contiguous 1-d uint8 tensor, got {t.dtype} {tuple(t.shape)}")


def crc32c_tensor(buffer: torch.Tensor, trailer: torch.Tensor | None = None) -> torch.Tensor:
    """``crc32c`` as a one-element int32 tensor on the buffer's device (the CRC's bits),
    without waiting for the device.

    ``trailer`` (4 uint8 on that device): the CRC is also written there, little-endian, by
    the last kernel, as a message's trailer (no separate operation per message)."""
    _check(buffer=buffer, trailer=trailer)
    return _checksum(buffer, None, ONE, _ones_term(buffer.numel()), trailer)


def crc32c_copy(source: torch.Tensor, target: torch.Tensor, prefix: bytes = b"",
                trailer: torch.Tensor | None = None, rest: int = 0) -> torch.Tensor:
    """``target[:] = source`` and the CRC-32C of ``prefix || source`` (``prefix``: host bytes,
    such as a message's header and padding before its first part), as ``crc32c_tensor``
    returns it and writes it into ``trailer``. With ``KERNEL = "words"`` and both tensors'
    data 4-byte aligned the copy and the CRC are one pass over ``source``; otherwise the
    copy is made first and ``target`` checksummed. ``rest``: the CRC of ``prefix || source
    || R`` for ``rest`` bytes R taken as zeros, to which the caller adds R's own (``raw_crc``):
    the source is a message's first part of several."""
    _check(source=source, target=target, trailer=trailer)
    if target.numel() != source.numel() or target.device != source.device:
        raise ValueError(f"target must hold source's {source.numel()} bytes on {source.device}, got "
                         f"{target.numel()} on {target.device}")
    n = source.numel()
    add = after(prefix, n + rest)
    if not n:
        target = None
    return _checksum(source, target, shifted(rest), add, trailer)


def after(prefix: bytes, n: int) -> int:
    """What the CRC-32C of ``prefix || B`` adds to the raw CRC of any ``n`` bytes B: the host
    bytes ``prefix`` (a message's header and padding) moved past B, and the all-ones term
    of ``len(prefix) + n`` bytes. Asked once per message, so the product is ``crc.combine``'s
    compiled one, not ``crc_math.multiply``'s loop in Python."""
    import crc32c as host  # the prefix is a few host bytes
    h = len(prefix)
    return int(combine(host.crc32c(bytes(prefix)) ^ _ones_term(h), _ones_term(h + n), n))


def shifted(rest: int) -> int:
    """x^(8 rest): the scale that moves a raw CRC past ``rest`` more bytes."""
    return x_8n(rest) if rest else ONE


def raw_crc(buffer: torch.Tensor) -> torch.Tensor:
    """The raw CRC of ``buffer`` (no all-ones register, no final xor) as a one-element int32
    tensor: what the bytes after a part checksummed with ``rest`` (``crc32c_copy``) add to
    its CRC, xor-ed in."""
    return _checksum(buffer, None, ONE, 0, None)


def empty(device, add: int, trailer: torch.Tensor | None) -> torch.Tensor:
    """The CRC of no bytes past a prefix (``add``), as a one-element tensor, into ``trailer``."""
    return _checksum(torch.empty(0, dtype=torch.uint8, device=device), None, ONE, add, trailer)


def by_words(kernel, nbytes: int, device: torch.device, scale: int, add: int, trailer: torch.Tensor | None,
             before: tuple, after: tuple, pad_end: bool = False, warps: int = WORD_WARPS,
             **constants) -> torch.Tensor:
    """Step 1 by a kernel of the ``"words"`` form over the ``nbytes`` bytes it produces or
    reads (``_block_words``, ``triton_halves``' casts, ``triton_uniform``'s 8-bit codes): one
    program per ``WORD_LANES`` x ``WORD_STEPS`` words, launched with ``before``, then
    (padding words, the step's product table, the lanes' shifts, the blocks' CRCs, the
    final scale, ``add``, the trailer), then ``after`` and ``constants``; then step 2. A last
    word padded with zeros at the end is taken out of ``scale`` (``scale`` times the raw
    CRC, plus ``add``, is what the last kernel makes). The first block starts with padding
    words (``padw``, leading zeros leave a raw CRC as it is), so the last block ends with
    the last word; ``pad_end``: the first block starts with the first word (a kernel whose
    blocks hold whole groups of values from the start, ``triton_qsgd``'s buckets) and the
    last block's words past the end are zeros, taken out of ``scale`` as the last word's are.
    ``warps``: per program, for a kernel that holds more values per word than 4."""
    nw = -(-nbytes // 4)
    per_block = WORD_LANES * WORD_STEPS
    if 4 * per_block != BLOCK:  # the blocks' CRCs are joined by BLOCK's product tables
        raise ValueError(f"WORD_LANES x WORD_STEPS must be {BLOCK // 4} words, got {WORD_LANES} x {WORD_STEPS}")
    blocks = -(-nw // per_block)
    product, shifts = _word_tables(str(device), WORD_LANES)
    block_products = _tables(str(device), max(1, (blocks - 1).bit_length()))[2]
    padded = 4 * blocks * per_block if pad_end else 4 * nw
    if padded != nbytes:
        scale = multiply(scale, _unpadded(padded - nbytes))  # the zero bytes after the last taken out
    crcs, fold, folds = _block_outputs(blocks, device)
    store, final = trailer is not None, blocks == 1
    kernel[(blocks,)](*before, 0 if pad_end else blocks * per_block - nw, product, shifts, crcs, fold, _bits(scale),
                      _bits(add), trailer if store else crcs, *after, LANES=WORD_LANES, STEPS=WORD_STEPS, FINAL=final,
                      STORE=store and (final or folds), SCALED=scale != ONE, FOLD=folds, num_warps=warps,
                      **constants)
    return crcs if folds else _joined(crcs, block_products, scale, add, trailer)


def _block_outputs(blocks: int, device) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """(where step 1 stores, the fold's words, whether it folds): one CRC and
    ``_fold_state`` where ``JOIN`` folds step 2 into it, else the blocks' CRCs (and them
    again, unused)."""
    folds = _folds(blocks)
    crcs = torch.empty(1 if folds else blocks, dtype=torch.int32, device=device)
    return crcs, _fold_state(device) if folds else crcs, folds


@functools.lru_cache(maxsize=None)
def _unpadded(pad: int) -> int:
    """x^(-8 pad): what takes ``pad`` zero bytes at the end back out of a raw CRC."""
    return inverse(x_8n(pad))


def _bits(value: int) -> int:
    """A 32-bit constant as int32's bits (how the kernels take it)."""
    return value - (1 << 32) if value >= 1 << 31 else value


def _int32_view(t: torch.Tensor, nwords: int) -> torch.Tensor:
    """The first ``nwords`` 4-byte words of the uint8 tensor ``t`` (4-byte aligned) as int32."""
    return torch.empty(0, dtype=torch.int32, device=t.device).set_(t.untyped_storage(), t.storage_offset() // 4,
                                                                   (nwords,), (1,))


def _word_aligned(t: torch.Tensor | None) -> bool:
    return t is None or (t.data_ptr() % 4 == 0 and t.untyped_storage().data_ptr() % 4 == 0)


def _checksum(buffer: torch.Tensor, target: torch.Tensor | None, scale: int, add: int,
              trailer: torch.Tensor | None) -> torch.Tensor:
    """``scale`` times the raw CRC of ``buffer``, plus ``add`` (which carries the all-ones
    term), copying ``buffer`` into ``target`` when given, by ``KERNEL``'s kernels."""
    if trailer is not None and (trailer.numel() != 4 or trailer.device != buffer.device):
        raise ValueError(f"trailer must be 4 bytes on {buffer.device}, got {trailer.numel()} on {trailer.device}")
    if KERNEL not in KERNELS:
        raise ValueError(f"triton_crc.KERNEL must be one of {KERNELS}, got {KERNEL!r}")
    n = buffer.numel()
    if n == 0:
        crc = torch.tensor([_bits(add)], dtype=torch.int32, device=buffer.device)
        if trailer is not None:
            trailer.copy_(crc.view(torch.uint8))
        return crc
    if KERNEL == "words" and _word_aligned(buffer) and _word_aligned(target):
        return _by_words(buffer, target, scale, add, trailer)
    if target is not None:
        target.copy_(buffer)
    blocks = -(-n // BLOCK)
    slicing, lane_products, block_products = _tables(str(buffer.device), max(1, (blocks - 1).bit_length()))
    crcs, fold, folds = _block_outputs(blocks, buffer.device)
    store, final, shifted = trailer is not None, blocks == 1, KERNEL == "shifted"
    _block_crcs[(blocks,)](buffer, n, blocks * BLOCK - n, slicing,
                           _lane_shifts(str(buffer.device)) if shifted else lane_products, crcs, fold, _bits(scale),
                           _bits(add), trailer if store else crcs, LANES=LANES, SEG=SEG, LEVELS=LANE_LEVELS,
                           FINAL=final, STORE=store and (final or folds), SHIFTED=shifted, SCALED=scale != ONE,
                           FOLD=folds)
    return crcs if folds else _joined(crcs, block_products, scale, add, trailer)


def _by_words(buffer: torch.Tensor, target: torch.Tensor | None, scale: int, add: int,
              trailer: torch.Tensor | None) -> torch.Tensor:
    """``_checksum`` by ``_block_words`` (both tensors word aligned)."""
    n = buffer.numel()
    nfull, tail = divmod(n, 4)
    words = _int32_view(buffer, nfull)
    targets = (_int32_view(target, nfull), target[4 * nfull:] if tail else target) if target is not None \
        else (words, buffer)
    return by_words(_block_words, n, buffer.device, scale, add, trailer,
                    (words, buffer[4 * nfull:] if tail else buffer, nfull, tail), targets, COPY=target is not None)


def _joined(crcs: torch.Tensor, block_products: torch.Tensor, scale: int, add: int,
            trailer: torch.Tensor | None) -> torch.Tensor:
    """Step 2: the blocks' CRCs (of ``BLOCK`` bytes each) joined until one is left, which gets
    ``scale`` and ``add`` and goes into ``trailer``."""
    store = trailer is not None
    level = 0  # each CRC in crcs now covers BLOCK << level bytes
    while crcs.numel() > 1:
        m = crcs.numel()
        levels = min(JOIN_LEVELS, (m - 1).bit_length())
        groups = -(-m // (1 << levels))
        joined = torch.empty(groups, dtype=torch.int32, device=crcs.device)
        final = groups == 1
        _join[(groups,)](crcs, m, (groups << levels) - m, block_products[level:], joined, _bits(add),
                         trailer if store else joined, GROUP=1 << levels, LEVELS=levels, FINAL=final,
                         STORE=store and final, scale=_bits(scale), SCALED=scale != ONE)
        crcs, level = joined, level + levels
    return crcs
