"""Message checksum: CRC-32 over 4 MiB chunks, then CRC-32 over the chunk CRCs.

Any single flipped byte changes its chunk's CRC (CRC-32 detects every burst of up to 32
bits) and so the outer CRC. Chunks let large messages be checked on all cores: zlib
releases the GIL while it hashes.
"""

from __future__ import annotations

import struct
import zlib
from concurrent.futures import ThreadPoolExecutor

CHUNK_BYTES = 4 << 20
_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="thinwire-crc")


def checksum(buffer: memoryview) -> int:
    """The 32-bit checksum of ``buffer`` (a byte memoryview)."""
    n = len(buffer)
    if n <= CHUNK_BYTES:
        crcs = [zlib.crc32(buffer)]
    else:
        starts = range(0, n, CHUNK_BYTES)
        crcs = list(_pool.map(lambda s: zlib.crc32(buffer[s:s + CHUNK_BYTES]), starts))
    return zlib.crc32(struct.pack(f"<Q{len(crcs)}I", n, *crcs))
