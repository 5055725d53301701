"""Entropy coding: Huffman code lengths and streams, raw packing and ANS as symbol coders."""
