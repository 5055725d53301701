"""PowerSGD's rank-r compression of one worker's gradient matrices (Vogels, Karimireddy &
Jaggi, "PowerSGD: Practical low-rank gradient compression for distributed optimization",
NeurIPS 2019, Algorithms 1 and 2), with the choices of ``torch.distributed``'s
``powerSGD_hook`` (read for facts, not copied):

- every parameter is seen as a matrix M of shape (shape[0], numel / shape[0]); it is
  compressed when r' = min(n, m, rank) makes it worth it,
  (n + m) r' * min_compression_rate < n m; every other tensor (biases, small matrices) is
  all-reduced whole;
- error feedback (Alg. 2): M = gradient + the error this worker kept from its last
  step, and afterwards error = M - P^ Q^T, where P^ Q^T is the decompressed average every
  worker applies (the hook's ``input_tensor_cp - input_tensor``); the identity
  sent + error = accumulated gradient holds by construction;
- warm start: Q is the all-reduced Q of the previous step, orthogonalized again; the
  first Q (or every Q without warm start) is standard normal from a generator seeded the
  same on every worker, then orthogonalized;
- P = M Q is all-reduced as a sum (it is orthogonalized next, so its scale does not
  matter), Q = M^T P^ as a mean.
The hook keeps error feedback for the whole bucket, so a tensor sent whole carries the
gap between its local and its averaged value into the next step; its mean over workers
is zero, and here such tensors keep no error. A column of P that is exactly zero stays
zero (the hook refuses it unless ``orthogonalization_epsilon`` > 0).
"""

from __future__ import annotations

import torch


def compressible(shape: tuple[int, ...], rank: int, min_rate: float) -> bool:
    """True when the tensor is sent as rank-r factors rather than whole."""
    if len(shape) < 2 or rank < 1:
        return False
    n = shape[0]
    m = 1
    for d in shape[1:]:
        m *= d
    r = min(n, m, rank)
    return (n + m) * r * min_rate < n * m


def orthogonalize(matrix: torch.Tensor, eps: float = 0.0) -> torch.Tensor:
    """Gram-Schmidt on the columns of ``matrix`` (n, r), in place: each column divided by
    its norm (+ eps), then removed from the columns after it."""
    cols = matrix.shape[1]
    for i in range(cols):
        col = matrix[:, i:i + 1]
        norm = torch.linalg.vector_norm(col)
        if norm > 0 or eps > 0:
            col.div_(norm + eps)
        if i + 1 < cols:
            rest = matrix[:, i + 1:]
            rest.sub_((col * rest).sum(0, keepdim=True) * col)
    return matrix


class PowerSGDState:
    """One worker's memory: its error per compressed tensor and the last averaged Q."""

    def __init__(self, shapes: dict[str, tuple[int, ...]], rank: int, min_rate: float):
        self.compressed = [n for n, s in shapes.items() if compressible(s, rank, min_rate)]
        self.whole = [n for n in shapes if n not in self.compressed]
        self.dims = {}  # name -> (n, m, r'): the matrix's rows and columns, the rank used
        for name in self.compressed:
            n = shapes[name][0]
            m = torch.Size(shapes[name]).numel() // n
            self.dims[name] = (n, m, min(n, m, rank))
        self.error: dict[str, torch.Tensor] = {}
        self.q: dict[str, torch.Tensor] = {}

    def state_dict(self) -> dict:
        return {"error": {n: t.clone() for n, t in self.error.items()}, "q": {n: t.clone() for n, t in self.q.items()}}

    def load_state_dict(self, state: dict) -> None:
        self.error = {n: t.clone() for n, t in state["error"].items()}
        self.q = {n: t.clone() for n, t in state["q"].items()}


def accumulate(state: PowerSGDState, grads: dict[str, torch.Tensor], error_feedback: bool) -> dict[str, torch.Tensor]:
    """M for each compressed tensor: the gradient as a matrix, plus the kept error."""
    out = {}
    for name in state.compressed:
        n, m, _ = state.dims[name]
        matrix = grads[name].reshape(n, m).clone()
        if error_feedback and name in state.error:
            matrix.add_(state.error[name])
        out[name] = matrix
    return out


def start_q(state: PowerSGDState, warm_start: bool, generator: torch.Generator, eps: float,
            dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
    """Q for each compressed tensor: the last averaged one (warm start), else standard normal
    from ``generator`` (seeded alike on every worker); orthogonalized either way."""
    qs = {}
    for name in state.compressed:
        n, m, r = state.dims[name]
        q = state.q[name].clone() if warm_start and name in state.q else \
            torch.randn(m, r, generator=generator, dtype=torch.float32).to(dtype)
        qs[name] = orthogonalize(q, eps)
    return qs


def finish(state: PowerSGDState, matrices: dict[str, torch.Tensor], p_hat: dict[str, torch.Tensor],
           q_mean: dict[str, torch.Tensor], error_feedback: bool) -> dict[str, torch.Tensor]:
    """The decompressed average P^ Q^T of each compressed tensor (as a matrix); keeps
    error = M - P^ Q^T and the averaged Q for the next step."""
    out = {}
    for name, matrix in matrices.items():
        approx = p_hat[name] @ q_mean[name].T
        if error_feedback:
            state.error[name] = matrix - approx
        state.q[name] = q_mean[name].clone()
        out[name] = approx
    return out
