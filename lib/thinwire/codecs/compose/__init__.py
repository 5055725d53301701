"""Composition: chains of codecs and error feedback (memory)."""
