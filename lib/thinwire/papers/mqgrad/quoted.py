"""The studies beside MQGrad's headline, made here or quoted from a committed long run.

The default profile runs every method on every seed (``profiles.py``); MQGrad's shuffled
controls, the agent's learning variants, MQGrad at the paper's lr and the lr grid over every
method come from ``STUDIES_RUN``, the notebook executed at the default profile
with ``-p studies True`` from a clean commit. They are quoted only at the default profile
with no parameter set beyond ``ALLOWED`` (``notebook_parameters.quotes_apply``).
"""

from __future__ import annotations

from pathlib import Path

from ...scraps import made_or_quoted, quoted_table, read_scraps

STUDIES_RUN = "long-runs/mqgrad_studies.ipynb"  # the default profile with -p studies True
ALLOWED = {"gloo", "studies"}                    # parameters that leave the quoted runs as they were
SCALARS = ("paper_text_agent_reward_to_q_ratio", "mean_bits_mqgrad_eps0", "lr_chosen")


def quoted_studies(path: str | Path) -> dict:
    """name -> the table (``learning``, ``stability``, ``control``, ``lr_grid``, its lrs as floats) or
    number (``SCALARS``) ``path`` recorded; {} when the file is missing."""
    found = {name: quoted_table(path, name) for name in ("learning", "stability", "lr_grid", "control")}
    found = {name: table for name, table in found.items() if table is not None}
    if "lr_grid" in found:
        found["lr_grid"].index = found["lr_grid"].index.astype(float)
    if found:
        scraps = read_scraps(path)
        found.update({name: scraps[name] for name in SCALARS if name in scraps})
    return found


def study(name: str, make, ran: bool, quoted: dict):
    """``scraps.made_or_quoted`` with ``STUDIES_RUN`` as the source."""
    return made_or_quoted(name, make, ran, quoted, f"{STUDIES_RUN} (this notebook at the default profile with "
                          "-p studies True)")
