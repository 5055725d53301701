"""Oland & Raj's figure probes: measurements the reproduction needs from inside weight
averaging's exchange (``algorithms/observers.py``), never traffic and never timed.

``oland_raj_probes(coders=('raw', 'huffman', 'ans'), entropy_grid=False)``, at each exchange:
- ``grad_rms/<tensor>``: RMS of each tensor's loss gradient on the last batch, mean over
  local workers (Fig. 2);
- ``probe_payload/<coder>``: the payload bytes per worker the pushes would take with each
  other coder, the same quantization and decision encoded for real from a copy of the
  worker's codec state (Fig. 5, the ANS comparison); only when the push codec is ``binquant``;
- with ``entropy_grid``: worker 0's entropy estimate of each weight matrix for a grid of
  pre-quantization M and fraction F (Fig. 3), drawn from its own generator (seed 12345)
  so that no run's generator moves.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...algorithms.observers import Observer, register_observer
from ...algorithms.round import ready
from ...codecs import CodecState
from ...engine import estimate_entropy, wire
from ...codecs.quantize.binquant import BinQuantize
from ...codecs.quantize.minmax import value_range

GRID_M = (2, 4, 6, 8)
GRID_F = (0.01, 0.03, 0.1, 1.0)
GRID_SEED = 12345
CODERS = ("raw", "huffman", "ans")


@register_observer
@dataclass
class OlandRajProbes(Observer):
    name = "oland_raj_probes"
    coders: tuple = CODERS
    entropy_grid: bool = False

    def __post_init__(self):
        self.coders = tuple(self.coders)
        if any(c not in CODERS for c in self.coders):
            raise ValueError(f"coders={self.coders!r} is not allowed: coders must be a tuple of {list(CODERS)}")
        if not isinstance(self.entropy_grid, bool):
            raise ValueError(f"entropy_grid={self.entropy_grid!r} is not allowed: entropy_grid must be True or False")
        self._codecs, self._state, self._out, self._workers = None, CodecState(0), {}, 1

    def exchange(self, algorithm, x, y) -> None:
        """Gradient RMS per tensor (Fig. 2) and, when asked, worker 0's entropy grid (Fig. 3)."""
        self._workers = len(algorithm.local_workers)
        if self._codecs is None:  # the same quantization with each coder, for a binquant push codec
            codec = algorithm.push_codec
            self._codecs = ({c: ready(type(codec)(**{**codec.params(), "coder": c})) for c in self.coders}
                            if isinstance(codec, BinQuantize) else {})
        _, _, grads = algorithm.replicas.loss_and_grads(x, y)
        self._out = {f"grad_rms/{n}": float(g.reshape(g.shape[0], -1).square().mean(1).sqrt().mean())
                     for n, g in grads.items()}
        self._out.update({f"probe_payload/{c}": 0 for c in self._codecs})
        if self.entropy_grid and 0 in algorithm.local_workers:
            self._out.update(_entropy_grid(algorithm))

    def before_push(self, algorithm, worker, key, tensor, decision, state) -> None:
        """Each coder encodes the same decision from a copy of the worker's generator state."""
        for coder, codec in self._codecs.items():
            self._state.load_state_dict(state.state_dict())
            self._out[f"probe_payload/{coder}"] += wire.measure(codec.encode(tensor, self._state, key, decision))[0]

    def collect(self) -> dict:
        out = {k: v / max(1, self._workers) if k.startswith("probe_payload/") else v for k, v in self._out.items()}
        self._out = {}
        return out


def _entropy_grid(algorithm) -> dict:
    """Worker 0's entropy estimate per weight matrix for each (M, F) of the grid (Fig. 3)."""
    out, generator = {}, torch.Generator().manual_seed(GRID_SEED)
    index = algorithm.local_workers.index(0)
    for name in algorithm.matrices:
        w = algorithm.replicas.params[name][index].reshape(-1).cpu()  # numba kernels: host
        lo, hi = value_range(w, name)
        for m in GRID_M:
            for f in GRID_F:
                out[f"entropy_m{m}_f{f}/{name}"] = estimate_entropy(w, lo, hi, m, f, generator)
    return out
