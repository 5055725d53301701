"""CRC-32C arithmetic in plain Python: products in GF(2)[x] modulo the Castagnoli
polynomial, and the table of x^(2^k) that joins the CRCs of consecutive pieces:
CRC(A || B) = CRC(A) x^(8 |B|) + CRC(B), init and final xor cancelling (the identity
behind zlib's ``crc32_combine``). ``crc.py`` compiles the same arithmetic; the message
checksum (``wire/checksum.py``) joins its threads' pieces with this one.
"""

from __future__ import annotations

import functools

POLY = 0x82F63B78        # CRC-32C, bit-reversed


def multiply(a: int, b: int) -> int:
    """a * b mod the polynomial, both in the reflected bit order CRCs are kept in."""
    product, bit = 0, 1 << 31
    while a:
        if a & bit:
            product ^= b
            a ^= bit
        bit >>= 1
        b = (b >> 1) ^ POLY if b & 1 else b >> 1
    return product


X_2K = [1 << 30]  # x^(2^k) mod the polynomial; x^1 is bit 30 when x^0 is bit 31
for _ in range(63):
    X_2K.append(multiply(X_2K[-1], X_2K[-1]))


def x_power(exponent: int) -> int:
    """x^exponent mod the polynomial: the product of x^(2^k) over the exponent's bits."""
    power, k = 1 << 31, 0
    while exponent:
        if exponent & 1:
            power = multiply(X_2K[k], power)
        exponent >>= 1
        k += 1
    return power


@functools.lru_cache(maxsize=4096)
def x_8n(nbytes: int) -> int:
    """x^(8 nbytes) mod the polynomial (kept for the last lengths asked: a message's
    length recurs every step, and a power of a large length is some 15 products)."""
    return x_power(8 * nbytes)


ONE = 1 << 31  # x^0


def inverse(a: int) -> int:
    """b with a * b = 1 mod the polynomial: multiplying by a is linear over GF(2), so b solves
    32 equations (Gauss-Jordan on the columns a * x^j). Every power of x has one (the
    polynomial has a constant term); an ``a`` sharing a factor with it has none (ValueError)."""
    if not a:
        raise ValueError("0 has no inverse modulo the polynomial")
    rows = [(multiply(a, 1 << j), 1 << j) for j in range(32)]  # (a * e_j, e_j)
    for bit in range(31, -1, -1):  # make each column's product a distinct power
        pivot = next((i for i in range(31 - bit, 32) if rows[i][0] >> bit & 1), None)
        if pivot is None:
            raise ValueError(f"{a:#x} has no inverse modulo the polynomial")
        i = 31 - bit
        rows[i], rows[pivot] = rows[pivot], rows[i]
        for r in range(32):
            if r != i and rows[r][0] >> bit & 1:
                rows[r] = (rows[r][0] ^ rows[i][0], rows[r][1] ^ rows[i][1])
    return next(b for p, b in rows if p == ONE)


def combine(crc_a: int, crc_b: int, length_b: int) -> int:
    """The CRC-32C of A || B from CRC(A), CRC(B) and len(B) in bytes."""
    return multiply(x_8n(length_b), crc_a) ^ crc_b
