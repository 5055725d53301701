"""The ledger: one row per message (step, phase, sender, receiver, tensor, bytes, payload).

Every byte figure in a result is a sum over these rows, and every row's ``bytes`` is the
length of a real encoded buffer; ``payload`` is the part of it a paper would count
(``wire.measure``), so framing = bytes - payload. Rows are kept as columns; ``rows()`` is
canonical (sorted), so ledgers from one process and from several ranks compare equal.

Phases are plain names chosen by each algorithm (push, pull, ring, control, ...);
nothing here knows any of them.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

COLUMNS = ("step", "phase", "sender", "receiver", "tensor", "bytes", "payload")


class Ledger:
    def __init__(self):
        self.columns: dict[str, list] = {c: [] for c in COLUMNS}

    def __len__(self) -> int:
        return len(self.columns["bytes"])

    def record(self, step: int, phase: str, sender: int, receiver: int, tensor: str, nbytes: int,
               payload: int) -> None:
        if not 0 <= payload <= nbytes:
            raise ValueError(f"payload={payload} is not allowed: it must be in [0, bytes={nbytes}]")
        for column, value in zip(COLUMNS, (step, phase, sender, receiver, tensor, nbytes, payload)):
            self.columns[column].append(value)

    def extend(self, other: Ledger) -> None:
        for c in COLUMNS:
            self.columns[c].extend(other.columns[c])

    def rows(self) -> list[tuple]:
        return sorted(zip(*(self.columns[c] for c in COLUMNS)))

    def phases(self) -> list[str]:
        return sorted(set(self.columns["phase"]))

    def total_bytes(self, phase: str | None = None, network_only: bool = True, payload: bool = False) -> int:
        column = 6 if payload else 5
        return sum(row[column] for row in self.rows()
                   if (phase is None or row[1] == phase) and not (network_only and row[2] == row[3]))

    def per_step(self, steps: int, phases: tuple[str, ...] = (),
                 roles: dict[int, str] | None = None) -> dict[str, np.ndarray]:
        """Per-step sums over network rows (self-addressed rows excluded), one entry per
        step 0..steps-1 whether or not it had traffic:

        - ``bytes``, ``payload_bytes``, ``framing_bytes``, ``messages``: totals;
        - ``<phase>_bytes``, ``<phase>_payload``, ``<phase>_messages``: for every phase in
          ``phases`` and every phase the ledger holds;
        - ``<role>_sent_bytes``, ``<role>_sent_payload``, ``<role>_sent_messages``: by the
          sender's role, for every role in ``roles`` (agent id -> role).
        """
        if self.columns["step"] and max(self.columns["step"]) >= steps:
            raise ValueError(f"steps={steps} is not allowed: the ledger has rows for step "
                             f"{max(self.columns['step'])}")
        roles = roles or {}
        groups = ["", *(f"{p}_" for p in dict.fromkeys([*phases, *self.phases()])),
                  *(f"{r}_sent_" for r in dict.fromkeys(roles.values()))]
        out = {}
        for g in groups:
            for what in ("bytes", "payload", "messages"):
                out[f"{g}{what}"] = np.zeros(steps, np.int64)
        for step, phase, s, r, _, b, p in zip(*(self.columns[c] for c in COLUMNS)):
            if s == r:
                continue
            keys = ["", f"{phase}_"] + ([f"{roles[s]}_sent_"] if s in roles else [])
            for g in keys:
                out[f"{g}bytes"][step] += b
                out[f"{g}payload"][step] += p
                out[f"{g}messages"][step] += 1
        out["payload_bytes"] = out.pop("payload")
        out["framing_bytes"] = out["bytes"] - out["payload_bytes"]
        return out

    def by_phase_step(self) -> dict[tuple[int, str], list[tuple[int, int, int]]]:
        """(step, phase) -> [(sender, receiver, bytes)], for the network model."""
        groups: dict[tuple[int, str], list] = defaultdict(list)
        for step, phase, s, r, _, b, _ in zip(*(self.columns[c] for c in COLUMNS)):
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
        cols = {k: np.asarray(arrays[k]).tolist() for k in COLUMNS}  # each array read once
        for step, phase, sender, receiver, tensor, nbytes, payload in zip(*cols.values()):
            ledger.record(step, names[phase], sender, receiver, names[tensor], nbytes, payload)
        return ledger
