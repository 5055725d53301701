"""The one-seed studies of the accuracy gap, made here or quoted from a committed long run.

The default profile runs the paper's figures and tables and the gap over seeds
(``profiles.py``); the pull diagnosis, Marian's settings one at a time and twice the
training length come from ``STUDIES_RUN``, the notebook executed at the default profile with
every study from a clean commit. They are quoted only where this notebook's runs are that
run's: the default profile with the notebook's default parameters, bar those in ``ALLOWED``
(``notebook_parameters.quotes_apply``).
"""

from __future__ import annotations

from pathlib import Path

from ...scraps import made_or_quoted, quoted_table

STUDIES_RUN = "long-runs/gradient_dropping_studies.ipynb"  # the default profile with -p studies True
LEVELS = {"diagnosis": 2, "marian": 2, "length": 1}       # the row-index levels of each quoted table
ALLOWED = {"gloo", "studies", "paper_width"}                # parameters that leave the quoted runs as they were


def quoted_studies(path: str | Path) -> dict:
    """name -> the table ``path`` recorded under that name; {} when the file is missing."""
    tables = {name: quoted_table(path, name, levels) for name, levels in LEVELS.items()}
    return {name: table for name, table in tables.items() if table is not None}


def study(name: str, make, ran: bool, quoted: dict):
    """``scraps.made_or_quoted`` with ``STUDIES_RUN`` as the source."""
    return made_or_quoted(name, make, ran, quoted, f"{STUDIES_RUN} (this notebook at the default profile with "
                          "-p studies True)")
