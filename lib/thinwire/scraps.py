"""Numbers a notebook records ("scraps"), readable back from the executed .ipynb.

``glue(name, value)`` displays a JSON output of MIME type ``MIME``; ``read_scraps``
collects them from a notebook file. ``python -m thinwire scraps NB.ipynb`` prints them.
"""

from __future__ import annotations

import json
from pathlib import Path

MIME = "application/vnd.thinwire.scrap+json"


def glue(name: str, value) -> None:
    """Record ``value`` (JSON-serialisable) under ``name`` in the notebook's outputs."""
    from IPython.display import display
    json.dumps(value)  # fail here, not when the notebook is saved
    display({MIME: {"name": name, "value": value}}, raw=True)


def table_scrap(frame) -> dict:
    """A pandas DataFrame as JSON: column names, row labels and cells (NaN as null)."""
    import math

    def cell(v):
        if hasattr(v, "item"):
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            return None
        return v if isinstance(v, (int, float, str, bool)) or v is None else str(v)

    return {"columns": [str(c) for c in frame.columns],
            "index": [" / ".join(map(str, i)) if isinstance(i, tuple) else str(i) for i in frame.index],
            "data": [[cell(v) for v in row] for row in frame.itertuples(index=False)]}


def glue_table(name: str, frame) -> None:
    """Record a table (a DataFrame) under ``name``; ``python -m thinwire readme`` renders it."""
    glue(name, table_scrap(frame))


class NotExecutedError(ValueError):
    """A notebook whose code cells never ran: it holds no scraps yet."""


def read_scraps(path: str | Path) -> dict:
    """name -> value of every scrap an executed notebook glued; ``NotExecutedError`` for a
    notebook none of whose code cells ran, ``UnicodeDecodeError`` or ``json.JSONDecodeError``
    for a file that is no notebook."""
    nb = json.loads(Path(path).read_bytes().decode("utf-8"))
    code = [c for c in nb.get("cells", []) if c.get("cell_type") == "code"]
    if code and not any(c.get("execution_count") or c.get("outputs") for c in code):
        raise NotExecutedError(f"{path}: no code cell has run (execute it first, e.g. with papermill)")
    found = {}
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if MIME in data:
                scrap = data[MIME]
                if isinstance(scrap, str):
                    scrap = json.loads(scrap)
                found[scrap["name"]] = scrap["value"]
    return found


def quoted_table(path: str | Path, name: str, levels: int = 1):
    """The table (a DataFrame) a committed executed notebook recorded under ``name``
    (``glue_table``), for a notebook that quotes a longer run instead of making it; a row
    index of ``levels`` > 1 levels is restored from its " / "-joined labels (as strings);
    None when the file or the scrap is missing."""
    import pandas as pd
    try:
        table = read_scraps(path).get(name)
    except FileNotFoundError:
        return None
    if not isinstance(table, dict) or "columns" not in table:
        return None
    index = table["index"]
    if levels > 1:
        index = pd.MultiIndex.from_tuples([tuple(label.split(" / ", levels - 1)) for label in index])
    frame = pd.DataFrame(table["data"], index=index, columns=table["columns"])
    for column in frame.columns:  # numbers (null for NaN) back to floats
        if all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in frame[column]):
            frame[column] = frame[column].astype(float)
    return frame


def made_or_quoted(name: str, make, ran: bool, quoted: dict, source: str, flag: str = "studies"):
    """The table ``make()`` builds from a notebook's own runs when ``ran`` (recorded under
    ``name``), else ``quoted[name]`` (a committed long run's, ``quoted_table``) or None;
    prints which, naming ``source`` and the notebook parameter ``flag`` that runs it here."""
    if ran:
        table = make()
        glue_table(name, table)
        return table
    table = quoted.get(name)
    print(f"{name}: quoted from {source}" if table is not None
          else f"{name}: not run at this profile; -p {flag} True runs it")
    return table
