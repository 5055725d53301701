"""Sparsification: exact top-k and gradient dropping (Aji & Heafield 2017, Alg. 1)."""
