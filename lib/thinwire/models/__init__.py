"""The papers' models, defined here (no torchvision), and batched replicas of them."""

from .cnn import CNN
from .dropout import SeededDropout
from .evaluate import evaluate
from .mlp import MLP
from .registry import MODELS, build_model
from .replicas import Replicas

__all__ = ["CNN", "evaluate", "MLP", "MODELS", "build_model", "Replicas", "SeededDropout"]
