"""The contract between an algorithm and the runner (``experiment/runner.py``).

The runner knows no topology: it builds an algorithm, feeds each step the batches of the
agents this process trains, gathers ``StepReport``s, evaluates the parameters the
algorithm names, and turns the transport's ledger into metrics for whatever phases and
roles the algorithm declares. Write an algorithm against this and it runs in one process
and on torch.distributed alike.

Agents are integers 0..n-1 spread over processes by ``Transport.rank_of``. An agent's
role names what it is in the paper (``"worker"``, ``"server"``, ``"peer"``); metrics
report bytes and messages sent per role. Phases are the names of the lock-step exchanges
of a step (``transport.exchange(outbox, step, phase)``); an algorithm may call any of
them any number of times per step, or not at all.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch

from .report import StepReport

ROLES = ("worker", "server", "peer")


@runtime_checkable
class Algorithm(Protocol):
    phases: tuple[str, ...]      # every phase name the algorithm may exchange in (metrics list them even when idle)
    roles: dict[int, str]        # every agent id -> its role (one of ROLES)
    local_workers: list[int]     # the agents on this process that train on data: step() gets their batches
    # An algorithm whose training reads ``config.network`` (e.g. to schedule by link speed)
    # sets the class attribute ``reads_network = True``: the network then enters its results key.
    # An algorithm that may end a run before ``config.steps`` (a time budget) sets
    # ``stops_early = True`` and returns ``StepReport.stop`` on the step after which it ends.

    def step(self, step: int, x: torch.Tensor, y: torch.Tensor) -> StepReport:
        """One synchronous step. x, y: the batches of ``local_workers`` stacked (len, B, ...)."""

    def global_params(self) -> dict[str, torch.Tensor] | None:
        """The parameters to evaluate, on rank 0 (None elsewhere). May be collective:
        every rank calls it at the same steps."""

    def state_dict(self) -> dict:
        """Everything this process needs to continue the run exactly: agents' parameters,
        optimizers, codec and policy states (generators included)."""

    def load_state_dict(self, state: dict) -> None:
        ...


def check_algorithm(algo) -> None:
    """``TypeError`` when ``algo`` misses part of the contract; ``ValueError`` for a bad role."""
    if not isinstance(algo, Algorithm):
        missing = [n for n in ("phases", "roles", "local_workers", "step", "global_params", "state_dict",
                               "load_state_dict") if not hasattr(algo, n)]
        raise TypeError(f"{type(algo).__name__} does not implement the algorithm contract; missing {missing}")
    bad = {a: r for a, r in algo.roles.items() if r not in ROLES}
    if bad:
        raise ValueError(f"{type(algo).__name__}.roles has roles {bad}; allowed roles: {list(ROLES)}")
