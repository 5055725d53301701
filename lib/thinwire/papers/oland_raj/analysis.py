"""The numbers the Oland & Raj notebook reports, computed from results (tested)."""

from __future__ import annotations

import numpy as np


def bits_per_parameter(result) -> dict[str, np.ndarray]:
    """Per exchange: bits per parameter of one worker's transmission (8 x payload bytes /
    parameters, from the real messages; framing excluded, as in the paper): what was sent,
    and the probes (raw, huffman, ans)."""
    m = result.metrics
    params = np.array([v for v in m["parameters"] if v is not None], dtype=float)
    out = {}
    for key in [k for k in m if k.startswith("probe_payload/")]:
        out[key.split("/", 1)[1]] = np.array([v for v in m[key] if v is not None]) * 8 / params
    up = np.array(m["push_payload"], dtype=float)
    out["sent"] = up[up > 0] / result.config.workers * 8 / params
    return out


def accuracy_curve(result) -> np.ndarray:
    return np.array([a for a in result.metrics["test_accuracy"] if a is not None])


def epochs_to_peak(result) -> int:
    """Epoch (1-based) of the highest test accuracy: the paper's convergence measure (Fig. 4c, d)."""
    return int(np.argmax(accuracy_curve(result))) + 1


def layer_series(result, prefix: str) -> dict[str, np.ndarray]:
    """{tensor name: values per exchange} for metrics named ``prefix/<tensor>``."""
    m = result.metrics
    return {k.split("/", 1)[1]: np.array([v for v in m[k] if v is not None])
            for k in m if k.startswith(prefix + "/")}
