"""CRC-32C of a buffer in device memory, computed on the device (Triton): the checksum a
message kept on a GPU would need, so that its bytes never cross to the host.

A message written into a GPU tensor (``wire/tensor_message.py``) is checksummed by it,
on the GPU, and ``gpu_bench``'s ``device_crc`` part measures it against the GPU's add pass. It gives ``wire/checksum.py``'s value
for the same bytes (tested on the CPU under Triton's interpreter, ``TRITON_INTERPRET=1``).

The arithmetic is ``crc_math``'s: for the raw CRC R (zero initial register, no final xor),
R(A || B) = R(A) x^(8 |B|) + R(B) in GF(2)[x] mod the Castagnoli polynomial, and leading
zero bytes leave R unchanged. The standard CRC-32C (initial register and final xor all
ones) is R(M) + x^(8 |M|) (2^32 - 1) + (2^32 - 1).

1. ``_block_crcs``, one program per ``BLOCK`` bytes: ``LANES`` lanes each advance their own
   register over ``SEG`` contiguous bytes, 16 at a time through 16 slicing tables; each
   lane's CRC is multiplied by x^(8 SEG (LANES - 1 - lane)) (``_times``: 32 conditional
   xors) and the products xor-ed: the block's CRC. The message is padded with zeros at the
   front to whole blocks, which changes no raw CRC.
2. ``_join``: the blocks' CRCs joined in pairs, a tree of up to 2^``JOIN_LEVELS`` per
   program (level k multiplies the left one by x^(8 BLOCK 2^k), four lookups in the
   constant's 4 x 256 table: ``_mul``), again on the groups' CRCs until one is left.
3. ``_finish``: the last kernel adds the all-ones term and, for a message, writes the
   trailer's 4 bytes itself: one or two launches and nothing else.

``by_words`` is the same CRC over 4-byte words, for kernels that make or read a message's
bytes and checksum them in the same pass (``triton_uniform``, ``triton_range``,
``triton_rows``' 8-bit codes): lane l of a block reads words l, l + WORD_LANES, ..., with
``crc = crc * x^(32 WORD_LANES) + w`` per step, and the block's CRC is the xor over lanes of
crc_l * x^(32 (WORD_LANES - l)); a zero-padded last word is taken out by the inverse of its
factor (``crc_math.inverse``). Every table is made once per device on the host from
``crc_math``. The engine's README records the other block kernels and joins measured on
H100s and deleted.
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
# Triton's interpreter runs the kernels on the CPU (the test suite: ``TRITON_INTERPRET=1`` set
# before the import). Under it the codec kernels take programs of a few values
# (``triton_uniform.GROUPS``, ``triton_drop.BLOCK``), so that a test's small tensor spans
# several programs, the last one partly past its end, as a GPU's large tensor does.
INTERPRETING = AVAILABLE and os.environ.get("TRITON_INTERPRET") == "1"
LANES, SEG = 256, 64           # one program: 256 lanes x 64 contiguous bytes
BLOCK = LANES * SEG            # 16 KiB
JOIN_LEVELS = 10               # one program of ``_join`` joins up to 2^10 CRCs
WORD_LANES, WORD_STEPS = 256, 16  # ``by_words``: one program, 256 lanes x 16 words (BLOCK bytes)
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
def _tables(device: str, block_levels: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The slicing tables and the product tables of x^(8 BLOCK 2^k), k < ``block_levels``."""
    def on(t: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(t.view(np.int32).copy()).to(device)
    return on(slicing_tables()), on(product_tables([x_8n(BLOCK << k) for k in range(block_levels)]))


@functools.lru_cache(maxsize=None)
def _lane_shifts(device: str) -> torch.Tensor:
    """x^(8 SEG (LANES - 1 - lane)) mod the polynomial for each lane, as int32 bits: what
    moves a lane's CRC to the end of its block."""
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
    """``by_words``: the product table of x^(32 lanes) (what one step moves a lane's CRC by)
    and each lane's x^(32 (lanes - lane))."""
    def on(t: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(t.view(np.int32).copy()).to(device)
    shifts = np.array([x_8n(4 * (lanes - lane)) for lane in range(lanes)], np.uint32)
    return on(product_tables([x_8n(4 * lanes)])), on(shifts)


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
    def _block_crcs(message, n, pad, slicing, shifts, out, scale, ones, trailer, LANES: tl.constexpr,
                    SEG: tl.constexpr, FINAL: tl.constexpr, STORE: tl.constexpr, SCALED: tl.constexpr):
        """Step 1: the lanes' CRCs, joined by ``_times`` with ``shifts`` holding each lane's
        x^(8 SEG (LANES - 1 - lane))."""
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
        moved = _times(crc, tl.load(shifts + tl.arange(0, LANES)).to(tl.uint32, bitcast=True))
        _settle(tl.xor_sum(tl.reshape(moved, [1, LANES]), axis=1), out, ones, trailer, FINAL, STORE, scale, SCALED)

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
    def _settle(crc, out, ones, trailer, FINAL: tl.constexpr, STORE: tl.constexpr, scale, SCALED: tl.constexpr):
        """A block's CRC stored for step 2, or, for the only block (``FINAL``), finished."""
        _finish(crc, out + tl.program_id(0), ones, trailer, FINAL, STORE, scale, SCALED)

    @triton.jit
    def _join(crcs, m, pad, products, out, ones, trailer, GROUP: tl.constexpr, LEVELS: tl.constexpr,
              FINAL: tl.constexpr, STORE: tl.constexpr, scale=0, SCALED: tl.constexpr = False):
        group = tl.program_id(0)
        at = group * GROUP + tl.arange(0, GROUP) - pad
        crc = tl.load(crcs + at, mask=(at >= 0) & (at < m), other=0).to(tl.uint32, bitcast=True)
        crc = _tree(crc, products, GROUP, LEVELS)
        _finish(crc, out + group, ones, trailer, FINAL, STORE, scale, SCALED)


def crc32c(buffer: torch.Tensor, join_levels: int = JOIN_LEVELS) -> int:
    """The CRC-32C of a contiguous uint8 tensor's bytes, computed on its device (a GPU, or
    the CPU under ``TRITON_INTERPRET=1``); reading the result waits for the device.
    ``join_levels``: the levels one program of step 2 joins (``JOIN_LEVELS``)."""
    return int(crc32c_tensor(buffer, join_levels=join_levels).item()) & 0xFFFFFFFF


def _check(**tensors: torch.Tensor | None) -> None:
    if not AVAILABLE:
        raise RuntimeError("triton_crc needs the triton package (it comes with CUDA builds of torch)")
    for name, t in tensors.items():
        if t is not None and (t.dtype != torch.uint8 or t.dim() != 1 or not t.is_contiguous()):
            raise ValueError(f"{name} must be a contiguous 1-d uint8 tensor, got {t.dtype} {tuple(t.shape)}")


def crc32c_tensor(buffer: torch.Tensor, trailer: torch.Tensor | None = None,
                  join_levels: int = JOIN_LEVELS) -> torch.Tensor:
    """``crc32c`` as a one-element int32 tensor on the buffer's device (the CRC's bits),
    without waiting for the device.

    ``trailer`` (4 uint8 on that device): the CRC is also written there, little-endian, by
    the last kernel, as a message's trailer (no separate operation per message)."""
    _check(buffer=buffer, trailer=trailer)
    return _checksum(buffer, ONE, _ones_term(buffer.numel()), trailer, join_levels)


def crc32c_copy(source: torch.Tensor, target: torch.Tensor, prefix: bytes = b"",
                trailer: torch.Tensor | None = None, rest: int = 0) -> torch.Tensor:
    """``target[:] = source`` and the CRC-32C of ``prefix || source`` (``prefix``: host bytes,
    such as a message's header and padding before its first part), as ``crc32c_tensor``
    returns it and writes it into ``trailer``: the copy is made first and ``target``
    checksummed. ``rest``: the CRC of ``prefix || source
    || R`` for ``rest`` bytes R taken as zeros, to which the caller adds R's own (``raw_crc``):
    the source is a message's first part of several."""
    _check(source=source, target=target, trailer=trailer)
    if target.numel() != source.numel() or target.device != source.device:
        raise ValueError(f"target must hold source's {source.numel()} bytes on {source.device}, got "
                         f"{target.numel()} on {target.device}")
    n = source.numel()
    add = after(prefix, n + rest)
    target.copy_(source)
    return _checksum(target, shifted(rest), add, trailer)


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
    return _checksum(buffer, ONE, 0, None)


def empty(device, add: int, trailer: torch.Tensor | None) -> torch.Tensor:
    """The CRC of no bytes past a prefix (``add``), as a one-element tensor, into ``trailer``."""
    return _checksum(torch.empty(0, dtype=torch.uint8, device=device), ONE, add, trailer)


def by_words(kernel, nbytes: int, device: torch.device, scale: int, add: int, trailer: torch.Tensor | None,
             before: tuple, after: tuple, **constants) -> torch.Tensor:
    """Step 1 by a kernel of the words form over the ``nbytes`` bytes it produces or reads
    (``triton_uniform``'s, ``triton_range``'s and ``triton_rows``' 8-bit codes): one
    program per ``WORD_LANES`` x ``WORD_STEPS`` words, launched with ``before``, then
    (padding words, the step's product table, the lanes' shifts, the blocks' CRCs, the
    final scale, ``add``, the trailer), then ``after`` and ``constants``; then step 2. A last
    word padded with zeros at the end is taken out of ``scale`` (``scale`` times the raw
    CRC, plus ``add``, is what the last kernel makes). The first block starts with padding
    words (``padw``, leading zeros leave a raw CRC as it is), so the last block ends with
    the last word."""
    nw = -(-nbytes // 4)
    per_block = WORD_LANES * WORD_STEPS
    if 4 * per_block != BLOCK:  # the blocks' CRCs are joined by BLOCK's product tables
        raise ValueError(f"WORD_LANES x WORD_STEPS must be {BLOCK // 4} words, got {WORD_LANES} x {WORD_STEPS}")
    blocks = -(-nw // per_block)
    product, shifts = _word_tables(str(device), WORD_LANES)
    block_products = _tables(str(device), max(1, (blocks - 1).bit_length()))[1]
    if 4 * nw != nbytes:
        scale = multiply(scale, _unpadded(4 * nw - nbytes))  # the zero bytes after the last taken out
    crcs = torch.empty(blocks, dtype=torch.int32, device=device)
    store, final = trailer is not None, blocks == 1
    kernel[(blocks,)](*before, blocks * per_block - nw, product, shifts, crcs, _bits(scale),
                      _bits(add), trailer if store else crcs, *after, LANES=WORD_LANES, STEPS=WORD_STEPS, FINAL=final,
                      STORE=store and final, SCALED=scale != ONE, num_warps=WORD_WARPS, **constants)
    return _joined(crcs, block_products, scale, add, trailer)


@functools.lru_cache(maxsize=None)
def _unpadded(pad: int) -> int:
    """x^(-8 pad): what takes ``pad`` zero bytes at the end back out of a raw CRC."""
    return inverse(x_8n(pad))


def _bits(value: int) -> int:
    """A 32-bit constant as int32's bits (how the kernels take it)."""
    return value - (1 << 32) if value >= 1 << 31 else value


def _checksum(buffer: torch.Tensor, scale: int, add: int, trailer: torch.Tensor | None,
              join_levels: int = JOIN_LEVELS) -> torch.Tensor:
    """``scale`` times the raw CRC of ``buffer``, plus ``add`` (which carries the all-ones
    term), by steps 1 to 3."""
    if trailer is not None and (trailer.numel() != 4 or trailer.device != buffer.device):
        raise ValueError(f"trailer must be 4 bytes on {buffer.device}, got {trailer.numel()} on {trailer.device}")
    n = buffer.numel()
    if n == 0:
        crc = torch.tensor([_bits(add)], dtype=torch.int32, device=buffer.device)
        if trailer is not None:
            trailer.copy_(crc.view(torch.uint8))
        return crc
    blocks = -(-n // BLOCK)
    slicing, block_products = _tables(str(buffer.device), max(1, (blocks - 1).bit_length()))
    crcs = torch.empty(blocks, dtype=torch.int32, device=buffer.device)
    store, final = trailer is not None, blocks == 1
    _block_crcs[(blocks,)](buffer, n, blocks * BLOCK - n, slicing, _lane_shifts(str(buffer.device)), crcs,
                           _bits(scale), _bits(add), trailer if store else crcs, LANES=LANES, SEG=SEG, FINAL=final,
                           STORE=store and final, SCALED=scale != ONE)
    return _joined(crcs, block_products, scale, add, trailer, join_levels)


def _joined(crcs: torch.Tensor, block_products: torch.Tensor, scale: int, add: int,
            trailer: torch.Tensor | None, join_levels: int = JOIN_LEVELS) -> torch.Tensor:
    """Step 2: the blocks' CRCs (of ``BLOCK`` bytes each) joined until one is left, which gets
    ``scale`` and ``add`` and goes into ``trailer``."""
    store = trailer is not None
    level = 0  # each CRC in crcs now covers BLOCK << level bytes
    while crcs.numel() > 1:
        m = crcs.numel()
        levels = min(join_levels, (m - 1).bit_length())
        groups = -(-m // (1 << levels))
        joined = torch.empty(groups, dtype=torch.int32, device=crcs.device)
        final = groups == 1
        _join[(groups,)](crcs, m, (groups << levels) - m, block_products[level:], joined, _bits(add),
                         trailer if store else joined, GROUP=1 << levels, LEVELS=levels, FINAL=final,
                         STORE=store and final, scale=_bits(scale), SCALED=scale != ONE)
        crcs, level = joined, level + levels
    return crcs
