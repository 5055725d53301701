"""The bit-rate studies, made here or quoted from a committed long run.

The default profile runs the headline transmissions and the sweeps of Figs. 1 and 4
(``profiles.py``); the L1 ablation and the settings table (initialisations, the rule's
readings, the longer runs) come from ``STUDIES_RUN``, the notebook executed at the default
profile with ``-p studies True`` from a clean commit. They are quoted only at the default
profile with no parameter set beyond ``ALLOWED`` (``notebook_parameters.quotes_apply``).
"""

from __future__ import annotations

from pathlib import Path

from ...scraps import made_or_quoted, quoted_table

STUDIES_RUN = "long-runs/oland_raj_studies.ipynb"  # the default profile with -p studies True
ALLOWED = {"gloo", "studies"}                      # parameters that leave the quoted runs as they were


def quoted_studies(path: str | Path) -> dict:
    """name -> the table ``path`` recorded (``l1_ablation`` with its strengths as floats,
    ``settings``); {} when the file is missing."""
    found = {name: quoted_table(path, name) for name in ("l1_ablation", "settings")}
    found = {name: table for name, table in found.items() if table is not None}
    if "l1_ablation" in found:
        found["l1_ablation"].index = found["l1_ablation"].index.astype(float)
    return found


def study(name: str, make, ran: bool, quoted: dict):
    """``scraps.made_or_quoted`` with ``STUDIES_RUN`` as the source."""
    return made_or_quoted(name, make, ran, quoted, f"{STUDIES_RUN} (this notebook at the default profile with "
                          "-p studies True)")
