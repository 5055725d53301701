"""The papers' models, defined here (no torchvision), and batched replicas of them."""

from .evaluate import evaluate
from .mlp import MLP
from .registry import MODELS, build_model
from .replicas import Replicas

__all__ = ["evaluate", "MLP", "MODELS", "build_model", "Replicas"]
