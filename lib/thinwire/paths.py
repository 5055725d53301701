"""Where the project keeps data, results, reports and caches.

In a source checkout (``lib/thinwire`` inside a folder with ``pyproject.toml`` and
``data/``) data, results and reports live in that checkout. An installed copy
(``pip install .``, not editable) has no checkout: it reads data from ``$THINWIRE_DATA``
(or ``./data``) and writes results and reports under the current folder. Environment
variables override each place:

    THINWIRE_DATA      datasets (MNIST, Fashion-MNIST, data/cifar10)
    THINWIRE_RESULTS   cached run results
    THINWIRE_REPORTS   executed notebooks and their figures
    THINWIRE_CACHE     compiled kernels (default $XDG_CACHE_HOME/thinwire or ~/.cache/thinwire)
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def source_checkout(root: Path = REPO_ROOT) -> Path | None:
    """The checkout this package runs from (``root``: the folder two above it), or None for an
    installed copy."""
    is_checkout = (root / "pyproject.toml").exists() and (root / "lib" / "thinwire").is_dir()
    return root if is_checkout else None


def _base() -> Path:
    return source_checkout() or Path.cwd()


def data_dir() -> Path:
    """Embedded datasets: $THINWIRE_DATA, else <checkout>/data, else ./data."""
    return Path(os.environ.get("THINWIRE_DATA") or _base() / "data")


def results_dir() -> Path:
    """Cached run results: $THINWIRE_RESULTS, else <checkout>/results, else ./results."""
    return Path(os.environ.get("THINWIRE_RESULTS") or _base() / "results")


def reports_dir() -> Path:
    """Executed notebooks and figures: $THINWIRE_REPORTS, else <checkout>/reports, else ./reports."""
    return Path(os.environ.get("THINWIRE_REPORTS") or _base() / "reports")


def cache_dir() -> Path:
    """Compiled kernels and other rebuildable files: $THINWIRE_CACHE, else
    $XDG_CACHE_HOME/thinwire, else ~/.cache/thinwire (never the package's own folder)."""
    if os.environ.get("THINWIRE_CACHE"):
        return Path(os.environ["THINWIRE_CACHE"])
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "thinwire"
