"""Prints the goldens' paths longest first: ``make golden-test`` hands them to two pytest
workers in that order (``--no-loadscope-reorder``), so that the longest notebook starts first
and the others fill the second worker, instead of the longest starting last while the other
worker idles. A golden's length is the sum of the cell durations papermill recorded when
``make golden`` executed it; a golden without them (or missing) goes last, in the given order.

    python tests/golden_order.py quickstart slim_dp ... -> tests/golden/compare.ipynb ...
"""

import json
import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent / "golden"


def recorded_seconds(path: Path) -> float:
    try:
        cells = json.loads(path.read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return 0.0
    return sum(float(c.get("metadata", {}).get("papermill", {}).get("duration") or 0) for c in cells)


def longest_first(names: list[str]) -> list[str]:
    paths = [GOLDEN / f"{name}.ipynb" for name in names]
    ordered = sorted(paths, key=lambda p: -recorded_seconds(p))  # stable: ties keep the given order
    return [str(p.relative_to(GOLDEN.parents[1])) for p in ordered]


if __name__ == "__main__":
    print(" ".join(longest_first(sys.argv[1:])))
