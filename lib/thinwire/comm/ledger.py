"""The ledger: one row per message (step, phase, sender, receiver, tensor, bytes).

Every byte figure in a result is a sum over these rows, and every row's ``bytes`` is the
length of a real encoded buffer. Rows are kept as columns; ``rows()`` is canonical
(sorted), so ledgers from one process and from several ranks compare equal.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

COLUMNS = ("step", "phase", "sender", "receiver", "tensor", "bytes")


class Ledger:
    def __init__(self):
        self.columns: dict[str, list] = {c: [] for c in COLUMNS}

    def __len__(self) -> int:
        return len(self.columns["bytes"])

    def record(self, step: int, phase: str, sender: int, receiver: int, tensor: str, nbytes: int) -> None:
        for column, value in zip(COLUMNS, (step, phase, sender, receiver, tensor, nbytes)):
            self.columns[column].append(value)

    def extend(self, other: Ledger) -> None:
        for c in COLUMNS:
            self.columns[c].extend(other.columns[c])

    def rows(self) -> list[tuple]:
        return sorted(zip(*(self.columns[c] for c in COLUMNS)))

    def total_bytes(self, phase: str | None = None, network_only: bool = True) -> int:
        return sum(b for _, p, s, r, _, b in self.rows()
                   if (phase is None or p == phase) and not (network_only and s == r))

    def per_step(self, phases: tuple[str, ...]) -> dict[str, np.ndarray]:
        """Bytes and message counts per step, by phase; self-addressed rows excluded."""
        steps = max(self.columns["step"], default=-1) + 1
        out = {f"bytes_{p}": np.zeros(steps, np.int64) for p in phases}
        out["messages"] = np.zeros(steps, np.int64)
        for step, phase, s, r, _, b in zip(*(self.columns[c] for c in COLUMNS)):
            if s == r:
                continue
            out[f"bytes_{phase}"][step] += b
            out["messages"][step] += 1
        return out

    def by_phase_step(self) -> dict[tuple[int, str], list[tuple[int, int, int]]]:
        """(step, phase) -> [(sender, receiver, bytes)], for the network model."""
        groups: dict[tuple[int, str], list] = defaultdict(list)
        for step, phase, s, r, _, b in zip(*(self.columns[c] for c in COLUMNS)):
            groups[(step, phase)].append((s, r, b))
        return groups

    def to_arrays(self) -> dict[str, np.ndarray]:
        rows = self.rows()
        names = sorted(set(self.columns["tensor"]) | set(self.columns["phase"]))
        code = {n: i for i, n in enumerate(names)}
        cols = list(zip(*rows)) if rows else [[] for _ in COLUMNS]
        arrays = {c: np.asarray(v, np.int64) for c, v in zip(COLUMNS, cols) if c not in ("phase", "tensor")}
        arrays["phase"] = np.asarray([code[p] for p in cols[1]], np.int64)
        arrays["tensor"] = np.asarray([code[t] for t in cols[4]], np.int64)
        arrays["names"] = np.asarray(names)
        return arrays

    @classmethod
    def from_arrays(cls, arrays) -> Ledger:
        ledger = cls()
        names = [str(n) for n in arrays["names"]]
        cols = {k: np.asarray(arrays[k]).tolist() for k in ("step", "phase", "sender", "receiver", "tensor", "bytes")}
        for step, phase, sender, receiver, tensor, nbytes in zip(*cols.values()):  # each array read once
            ledger.record(step, names[phase], sender, receiver, names[tensor], nbytes)
        return ledger
