"""thinwire codecs in your own training: a DDP communication hook (``hook.py``)."""

from .hook import CodecHook

__all__ = ["CodecHook"]
