"""Errors raised by codecs."""


class CorruptMessageError(ValueError):
    """A message failed its checksum, is truncated, or does not match the decoding codec.

    Raised instead of ever returning a wrong tensor.
    """
