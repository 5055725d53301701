"""RunConfig -> run -> Result, with caching, resume and launching on N processes."""

from .config import RunConfig
from .result import Result
from .runner import cached, result_folder, run

__all__ = ["RunConfig", "Result", "cached", "result_folder", "run"]
