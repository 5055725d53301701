"""Saving and restoring what one process of a star-shaped run holds: its local agents'
replicas, their sender and receiver codec states and, where hosted, the server agent."""

from __future__ import annotations


class LocalState:
    """Mixin for algorithms with ``replicas``, ``push_states``, ``pull_states`` (a
    ``StateBook``) and ``center`` (a ``ServerAgent`` or None)."""

    def state_dict(self) -> dict:
        return {
            "replicas": self.replicas.state_dict(),
            "push_states": {k: s.state_dict() for k, s in self.push_states.items()},
            "pull_states": self.pull_states.state_dict(),
            "center": None if self.center is None else self.center.state_dict(),
            "push_policies": {k: p.state_dict() for k, p in getattr(self, "push_policies", {}).items()},
        }

    def load_state_dict(self, state: dict) -> None:
        self.replicas.load_state_dict(state["replicas"])
        for k, s in self.push_states.items():
            s.load_state_dict(state["push_states"][k])
        self.pull_states.load_state_dict(state["pull_states"])
        if self.center is not None:
            self.center.load_state_dict(state["center"])
        for k, p in getattr(self, "push_policies", {}).items():
            p.load_state_dict(state["push_policies"][k])
