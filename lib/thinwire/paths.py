"""Where the project keeps data, results and reports (overridable by environment variables)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def data_dir() -> Path:
    """Embedded datasets: $THINWIRE_DATA or <repo>/data."""
    return Path(os.environ.get("THINWIRE_DATA", REPO_ROOT / "data"))


def results_dir() -> Path:
    """Cached run results: $THINWIRE_RESULTS or <repo>/results."""
    return Path(os.environ.get("THINWIRE_RESULTS", REPO_ROOT / "results"))


def reports_dir() -> Path:
    """Executed notebooks and figures: $THINWIRE_REPORTS or <repo>/reports."""
    return Path(os.environ.get("THINWIRE_REPORTS", REPO_ROOT / "reports"))
