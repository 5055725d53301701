"""The wire format: message layout (``format.py``) and its checksum (``checksum.py``)."""

from .checksum import checksum
from .format import DTYPE_CODES, DTYPES, MAGIC, NAMES, Message, measure, name_bytes, pack, unpack

__all__ = ["DTYPE_CODES", "DTYPES", "MAGIC", "NAMES", "Message", "checksum", "measure", "name_bytes", "pack", "unpack"]
