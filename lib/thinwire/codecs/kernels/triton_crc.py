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

Multiplying by a constant K is linear in the other factor, so it is four lookups, one per
byte of the register, in K's 4 x 256 table (``_mul``). Every table is made once per device
on the host from ``crc_math.multiply``.

``KERNEL`` picks how step 1 joins its lanes' CRCs into the block's:

- ``"slicing"``: the tree above, each level's products by table lookups (``_tree``);
- ``"shifted"``: each lane's CRC multiplied by x^(8 SEG (LANES - 1 - lane)), the lanes'
  constants held in one table of ``LANES`` words, by 32 conditional xors (``_times``, no
  lookups), and the products xor-ed together. Compiled for sm_90 (Triton 3.6) the tree
  makes four times as many table loads per thread as the bytes' own lookups, and the
  shifted join a quarter as many as the tree; ``gpu_bench`` times both kernels, and
  ``"slicing"`` stays the default until a GPU has measured the other faster.

A kernel whose lanes' CRCs are parities of int8 matrix products on the tensor cores (no
lookups at all) measured slower than ``"slicing"`` on an H100 and lives among
``benchmarks/crc_variants.py``'s variants.
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np
import torch

from .crc_math import POLY, multiply, x_8n

AVAILABLE = importlib.util.find_spec("triton") is not None
LANES, SEG = 256, 64           # one program: 256 lanes x 64 contiguous bytes
BLOCK = LANES * SEG            # 16 KiB
LANE_LEVELS = LANES.bit_length() - 1
JOIN_LEVELS = 10               # one program of ``_join`` joins up to 2^10 CRCs
KERNEL = "slicing"             # step 1's join of its lanes: "slicing" (a tree) or "shifted"
KERNELS = ("slicing", "shifted")


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
    def _block_crcs(message, n, pad, slicing, products, out, ones, trailer, LANES: tl.constexpr,
                    SEG: tl.constexpr, LEVELS: tl.constexpr, FINAL: tl.constexpr, STORE: tl.constexpr,
                    SHIFTED: tl.constexpr):
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
        _finish(crc, out + block, ones, trailer, FINAL, STORE)

    @triton.jit
    def _finish(crc, out, ones, trailer, FINAL: tl.constexpr, STORE: tl.constexpr):
        """Store one CRC; the last one (``FINAL``) gets the all-ones term and, with ``STORE``,
        is also written little-endian into the message's 4-byte trailer."""
        if FINAL:
            crc ^= ones.to(tl.uint32, bitcast=True)
        tl.store(out + tl.arange(0, 1), crc.to(tl.int32, bitcast=True))
        if STORE:
            shift = (8 * tl.arange(0, 4)).to(tl.uint32)
            tl.store(trailer + tl.arange(0, 4), ((crc >> shift) & 255).to(tl.uint8))

    @triton.jit
    def _join(crcs, m, pad, products, out, ones, trailer, GROUP: tl.constexpr, LEVELS: tl.constexpr,
              FINAL: tl.constexpr, STORE: tl.constexpr):
        group = tl.program_id(0)
        at = group * GROUP + tl.arange(0, GROUP) - pad
        crc = tl.load(crcs + at, mask=(at >= 0) & (at < m), other=0).to(tl.uint32, bitcast=True)
        crc = _tree(crc, products, GROUP, LEVELS)
        _finish(crc, out + group, ones, trailer, FINAL, STORE)


def crc32c(buffer: torch.Tensor) -> int:
    """The CRC-32C of a contiguous uint8 tensor's bytes, computed on its device (a GPU, or
    the CPU under ``TRITON_INTERPRET=1``); reading the result waits for the device."""
    return int(crc32c_tensor(buffer).item()) & 0xFFFFFFFF


def crc32c_tensor(buffer: torch.Tensor, trailer: torch.Tensor | None = None) -> torch.Tensor:
    """``crc32c`` as a one-element int32 tensor on the buffer's device (the CRC's bits),
    without waiting for the device.

    ``trailer`` (4 uint8 on that device): the CRC is also written there, little-endian, by
    the last kernel, as a message's trailer (no separate operation per message)."""
    if not AVAILABLE:
        raise RuntimeError("triton_crc.crc32c needs the triton package (it comes with CUDA builds of torch)")
    for name, t in (("buffer", buffer), ("trailer", trailer)):
        if t is not None and (t.dtype != torch.uint8 or t.dim() != 1 or not t.is_contiguous()):
            raise ValueError(f"{name} must be a contiguous 1-d uint8 tensor, got {t.dtype} {tuple(t.shape)}")
    if trailer is not None and (trailer.numel() != 4 or trailer.device != buffer.device):
        raise ValueError(f"trailer must be 4 bytes on {buffer.device}, got {trailer.numel()} on {trailer.device}")
    n = buffer.numel()
    if n == 0:
        crc = torch.zeros(1, dtype=torch.int32, device=buffer.device)
        if trailer is not None:
            trailer.zero_()
        return crc
    ones = _ones_term(n)
    ones = ones - (1 << 32) if ones >= 1 << 31 else ones  # the constant as int32's bits
    blocks = -(-n // BLOCK)
    slicing, lane_products, block_products = _tables(str(buffer.device), max(1, (blocks - 1).bit_length()))
    crcs = torch.empty(blocks, dtype=torch.int32, device=buffer.device)
    store = trailer is not None
    final = blocks == 1
    if KERNEL not in KERNELS:
        raise ValueError(f"triton_crc.KERNEL must be one of {KERNELS}, got {KERNEL!r}")
    shifted = KERNEL == "shifted"
    _block_crcs[(blocks,)](buffer, n, blocks * BLOCK - n, slicing,
                           _lane_shifts(str(buffer.device)) if shifted else lane_products, crcs, ones,
                           trailer if store else crcs, LANES=LANES, SEG=SEG, LEVELS=LANE_LEVELS,
                           FINAL=final, STORE=store and final, SHIFTED=shifted)
    level = 0  # each CRC in crcs now covers BLOCK << level bytes
    while crcs.numel() > 1:
        m = crcs.numel()
        levels = min(JOIN_LEVELS, (m - 1).bit_length())
        groups = -(-m // (1 << levels))
        joined = torch.empty(groups, dtype=torch.int32, device=buffer.device)
        final = groups == 1
        _join[(groups,)](crcs, m, (groups << levels) - m, block_products[level:], joined, ones,
                         trailer if store else joined, GROUP=1 << levels, LEVELS=levels, FINAL=final,
                         STORE=store and final)
        crcs, level = joined, level + levels
    return crcs
