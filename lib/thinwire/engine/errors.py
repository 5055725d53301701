"""Errors raised by codecs."""


class CorruptMessageError(ValueError):
    """A message failed its checksum, is truncated, or does not match the decoding codec.

    Raised instead of ever returning a wrong tensor.
    """


class RefusedInputError(ValueError):
    """A tensor a codec cannot encode (NaN or Inf in it, a norm beyond float32), refused
    before its message is complete; the message writer lets it through, where it takes any
    other failure of a device kernel as the kernel's own (``tensor_message.pack``)."""


class DeviceChecksumError(RuntimeError):
    """The device CRC-32C's kernel failed where Triton is installed (a compiler or driver
    that refuses it): a message on that device cannot be checksummed there. Without Triton
    such messages are checksummed on the host."""
