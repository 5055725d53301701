"""The quickstart: what compression buys on a parameter server (Plump-DP, Slim-DP Sec. 2)."""

from .profiles import QUICKSTART
from .runs import METHODS, quickstart_configs

__all__ = ["METHODS", "QUICKSTART", "quickstart_configs"]
