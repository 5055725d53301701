"""RunConfig -> run -> Result, with caching, resume and launching on N processes."""

from . import measures
from .config import RunConfig
from .result import Result
from .runner import cached, result_folder, run

__all__ = ["RunConfig", "measures", "Result", "cached", "result_folder", "run"]
