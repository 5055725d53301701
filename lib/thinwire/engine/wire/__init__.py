"""The wire format: message layout (``format.py``) and its checksum (``checksum.py``), and
a large part copied out of a message as the checksum is verified (``checked_copy.py``), and
message tensors' checksums compared at the end of a block (``deferred.py``)."""

from . import clock
from .checked_copy import copy_part, read_host_part, read_part, settle
from .checksum import checksum
from .deferred import deferred_checks
from .format import DTYPE_CODES, DTYPES, MAGIC, NAMES, Message, measure, name_bytes, pack, unpack, verify

__all__ = ["clock", "DTYPE_CODES", "DTYPES", "MAGIC", "NAMES", "Message", "checksum", "copy_part", "deferred_checks", "measure", "name_bytes", "pack", "read_host_part", "read_part", "settle",
           "unpack", "verify"]
