"""Declared state: an agent names what a checkpoint must hold, once, where it builds it.

``self.declare("optimizer", optimizer)`` registers a thing; ``state_dict`` and
``load_state_dict`` follow from the declarations. A thing is a tensor (saved as a copy,
restored in place), an object with ``state_dict`` / ``load_state_dict`` (replicas,
optimizers, codec states, policies, state books, other declared agents), a dict of
things (agent id or tensor name -> thing) or None (declared but absent on this process).
Nothing is saved that was not declared, and a checkpoint that lacks a declared entry
raises ``KeyError`` naming it (the runner then treats the checkpoint as damaged).
"""

from __future__ import annotations

import torch


def _save(thing):
    if thing is None:
        return None
    if isinstance(thing, torch.Tensor):
        return thing.detach().clone()
    if isinstance(thing, dict):
        return {k: _save(v) for k, v in thing.items()}
    return thing.state_dict()


def _load(thing, saved, name: str) -> None:
    if thing is None:
        return
    if isinstance(thing, torch.Tensor):
        thing.copy_(saved)
    elif isinstance(thing, dict):
        for k, v in thing.items():
            if k not in saved:
                raise KeyError(f"checkpoint has no {name}[{k!r}]")
            _load(v, saved[k], f"{name}[{k!r}]")
    else:
        thing.load_state_dict(saved)


class Declared:
    """Mixin: ``declare`` what to checkpoint; ``state_dict`` / ``load_state_dict`` follow."""

    def declare(self, name: str, thing):
        """Register ``thing`` under ``name`` and return it."""
        self.__dict__.setdefault("_declared", {})[name] = thing
        return thing

    def declared(self) -> dict:
        return self.__dict__.get("_declared", {})

    def state_dict(self) -> dict:
        return {name: _save(thing) for name, thing in self.declared().items()}

    def load_state_dict(self, state: dict) -> None:
        for name, thing in self.declared().items():
            if name not in state:
                raise KeyError(f"checkpoint has no {name!r} (it holds {sorted(state)})")
            _load(thing, state[name], name)
