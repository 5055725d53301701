"""The quickstart: what compression buys on a parameter server (Plump-DP, Slim-DP Sec. 2)."""

from ..record import Paper
from .profiles import QUICKSTART
from .runs import METHODS, quickstart_configs, quickstart_recipes

PAPER = Paper(name="quickstart", title="Quickstart: Plump-DP vs top-k with error feedback vs 8-bit quantization",
              order=0, recipes=quickstart_recipes())

__all__ = ["METHODS", "PAPER", "QUICKSTART", "quickstart_configs", "quickstart_recipes"]
