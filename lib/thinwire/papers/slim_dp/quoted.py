"""The Slim-DP studies, made here or quoted from a committed long run.

The default profile runs the headline (Table 1, Figs. 2, 3 and 5); the epsilon sweep
(Fig. 4), the refresh sweep, the gap ablation, the Elias coding and the codec work at the
paper's sizes come from ``STUDIES_RUN``, the notebook executed at the default profile with ``-p studies True``
from a clean commit. They are quoted only at the default profile with no parameter set
beyond ``ALLOWED`` (``notebook_parameters.quotes_apply``).
"""

from __future__ import annotations

from pathlib import Path

from ...scraps import made_or_quoted, quoted_table

STUDIES_RUN = "long-runs/slim_dp_studies.ipynb"  # the default profile with -p studies True
ALLOWED = {"gloo", "studies"}                     # parameters that leave the quoted runs as they were


def quoted_studies(path: str | Path) -> dict:
    """name -> the table ``path`` recorded (``refresh`` with q as ints, ``epsilon`` as floats,
    ``ablation``, ``elias`` with K as ints, ``scale`` with its (size, method) rows); {} when
    the file is missing."""
    found = {name: quoted_table(path, name) for name in ("refresh", "epsilon", "ablation", "elias")}
    found["scale"] = quoted_table(path, "scale", levels=2)
    found = {name: table for name, table in found.items() if table is not None}
    for name, kind, label in (("refresh", int, "q"), ("epsilon", float, "epsilon"), ("elias", int, "K")):
        if name in found:
            found[name].index = found[name].index.astype(kind)
            found[name].index.name = label
    if "ablation" in found:
        found["ablation"].index.name = "Slim-DP (0.3, 0.15), K = 4"
    if "scale" in found:
        found["scale"].index.names = ["size", "method"]
    return found


def study(name: str, make, ran: bool, quoted: dict):
    """``scraps.made_or_quoted`` with ``STUDIES_RUN`` as the source."""
    return made_or_quoted(name, make, ran, quoted, f"{STUDIES_RUN} (this notebook at the default profile with "
                          "-p studies True)")
