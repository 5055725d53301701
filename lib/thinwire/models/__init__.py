"""The papers' models, defined here (no torchvision), their specs, and batched replicas of them."""

from .cnn import CNN, CNNSpec
from .dropout import SeededDropout
from .evaluate import evaluate
from .mlp import MLP, MLPSpec
from .registry import MODELS, build_model, check_model, make_model, register_model
from .replicas import Replicas
from .spec import ModelSpec

__all__ = ["CNN", "CNNSpec", "evaluate", "MLP", "MLPSpec", "MODELS", "ModelSpec", "build_model", "check_model",
           "make_model", "register_model", "Replicas", "SeededDropout"]
