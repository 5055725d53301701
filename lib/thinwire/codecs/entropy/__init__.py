"""Entropy coding: raw packing, Huffman and ANS as symbol coders (their kernels: the engine's huffman_code,
huffman_stream and rans)."""
