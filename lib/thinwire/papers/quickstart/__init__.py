"""The quickstart: what compression buys on a parameter server (Plump-DP, Slim-DP Sec. 2)."""

from ..record import Headline, Paper
from .profiles import QUICKSTART
from .runs import METHODS, quickstart_configs, quickstart_recipes

PAPER = Paper(name="quickstart", title="Quickstart: Plump-DP vs top-k with error feedback vs 8-bit quantization",
              order=0, recipes=quickstart_recipes(),
              reproduces="Plump-DP vs top-k 1% with error feedback vs 8-bit quantization, MNIST, 4 workers",
              headline=Headline("push_compression", "top-k 1% with error feedback pushes {ours:.0f}x less payload than "
                                "float32", key="top-k 1% + error feedback"))

__all__ = ["METHODS", "PAPER", "QUICKSTART", "quickstart_configs", "quickstart_recipes"]
