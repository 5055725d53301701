"""A notebook's checked numbers: exact ones printed as they are, float ones within a tolerance.

The goldens in ``tests/golden`` are the notebooks executed at the smoke profile; nbval reruns
them and compares the text of the ``# NBVAL_CHECK_OUTPUT`` cells. Float results (accuracies,
densities, ratios of bytes that depend on gradient values) differ in their last digits from
one CPU to another, because torch and oneDNN pick other vector kernels (AVX2, AVX-512,
AMX) and sum in another order, and a few training steps amplify that. Printing such a number
to three decimals makes a golden fail on another CPU with no code change.

So a checked cell says what it checks::

    checks = CheckedNumbers("slim_dp")
    checks.exact("K=4 Plump-DP messages", messages)        # printed as it is
    checks.near("K=4 Plump-DP accuracy", accuracy, 0.02)   # printed as the recorded value
    checks.record()                                        # (next, unchecked cell)

``near`` prints the *recorded* value when the new one is within ``tolerance`` of it, and
both values with the difference when it is not, so the cell's text changes exactly when a
number moved by more than its tolerance. The recorded values are the full-precision numbers
the golden itself holds (a ``checks`` scrap, written by ``record``): ``make golden-test``
points ``THINWIRE_GOLDEN`` at ``tests/golden``. Without it (``make golden``, a user's run)
nothing is recorded yet, each value is its own record, and the cell prints the values.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from .scraps import glue, read_scraps

SCRAP = "checks"


def _digits(tolerance: float) -> int:
    """Decimals that show a value to a tenth of its tolerance."""
    return max(0, -math.floor(math.log10(tolerance)) + 1)


class CheckedNumbers:
    """The checked numbers of notebook ``name``; recorded values come from
    ``$THINWIRE_GOLDEN/<name>.ipynb`` when that variable is set."""

    def __init__(self, name: str, golden_dir: str | Path | None = None):
        self.name = name
        folder = golden_dir if golden_dir is not None else os.environ.get("THINWIRE_GOLDEN")
        self.recorded: dict = {}
        if folder:
            path = Path(folder) / f"{name}.ipynb"
            if not path.exists():
                raise FileNotFoundError(f"THINWIRE_GOLDEN={folder!s}: no golden {path}")
            self.recorded = read_scraps(path).get(SCRAP, {})
        self.values: dict = {}
        self.failed: list[str] = []

    def _recorded(self, label: str, value):
        if not self.recorded:
            return value
        if label not in self.recorded:
            raise ValueError(f"the golden of {self.name} records nothing under {label!r}: run make golden")
        return self.recorded[label]

    def exact(self, label: str, value, digits: int | None = None) -> None:
        """A value that must be the same on any machine (bytes, counts, ratios of exact
        sizes, booleans); a float is shown to ``digits`` decimals."""
        if isinstance(value, float) and digits is not None:
            value = round(value, digits)
        self.values[label] = value
        print(f"{label}: {value}")

    def near(self, label: str, value: float, tolerance: float, relative: bool = False) -> None:
        """A float result that may move by at most ``tolerance`` between machines (a
        fraction of the recorded value when ``relative``)."""
        if isinstance(tolerance, bool) or not (isinstance(tolerance, (int, float)) and 0 < tolerance < math.inf):
            raise ValueError(f"tolerance={tolerance!r} is not allowed: it must be a positive finite number")
        value = float(value)
        self.values[label] = value
        recorded = self._recorded(label, value)
        bound = tolerance * abs(recorded) if relative else tolerance
        shown = f"{tolerance:.0%}" if relative else f"{tolerance:g}"
        d = _digits(bound) if bound > 0 else 6
        if abs(value - recorded) <= bound:
            print(f"{label}: {recorded:.{d}f} (within {shown})")
        else:
            self.failed.append(label)
            print(f"{label}: {value:.{d + 2}f} is {value - recorded:+.{d + 2}f} from the recorded "
                  f"{recorded:.{d + 2}f}, more than {shown}")

    def record(self) -> None:
        """Glue the full-precision values (the record that the golden test reads back)."""
        glue(SCRAP, self.values)
