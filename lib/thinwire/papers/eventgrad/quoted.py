"""The studies behind EventGraD's "why" column, made here or quoted from a committed long run.

The default MNIST profile runs the headline tables only (``profiles.py``); the one-seed
ablations (horizon sweep, random trigger, Top-K fractions, heartbeat, optimizer, slowed
D-PSGD), the causes over seeds (``causes.py``) and 16 peers come from ``CAUSES_RUN``, the
same notebook executed at the default profile with ``-p studies True -p causes True`` from a
clean commit. ``study`` makes a table from this notebook's runs when they ran, and quotes
the long run's otherwise, saying which; a notebook quotes only at the default profile with
no parameter set beyond ``ALLOWED`` (``notebook_parameters.quotes_apply``).
"""

from __future__ import annotations

from pathlib import Path

from ...scraps import made_or_quoted, quoted_table

CAUSES_RUN = "long-runs/eventgrad_causes.ipynb"  # the default profile with -p studies True -p causes True
ALLOWED = {"gloo", "studies", "causes", "length_epochs"}  # parameters that leave the quoted runs as they were


def quoted_studies(path: str | Path) -> dict:
    """name -> the table ``path`` recorded under that name (``glue_table``), with the
    horizon sweep's (rule, horizon) and the tables' ring sizes restored as index values;
    {} when the file is missing."""
    import pandas as pd
    found = {}
    for name in ("table1", "table2", "sweep", "trigger", "heartbeat", "optimizer", "topk_fractions", "topk_norm_of",
                 "slowed", "pinning", "momentum_matched"):
        table = quoted_table(path, name)
        if table is None:
            continue
        if name == "sweep":
            table.index = pd.MultiIndex.from_tuples(
                [(i.split(" / ")[0], float(i.split(" / ")[1])) for i in table.index], names=["rule", "horizon"])
        elif name in ("table1", "table2"):
            table.index = pd.Index([int(i) for i in table.index], name="peers")
        found[name] = table
    return found


def study(name: str, make, ran: bool, quoted: dict, flag: str = "studies"):
    """``scraps.made_or_quoted`` with ``CAUSES_RUN`` as the source."""
    return made_or_quoted(name, make, ran, quoted, f"{CAUSES_RUN} (this notebook at the default profile with "
                          "-p studies True -p causes True)", flag)
