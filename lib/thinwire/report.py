"""The README's results tables, written from the numbers executed notebooks recorded.

A block in README.md such as

    <!-- table: gradient_dropping/paper_vs_ours -->
    ... (generated) ...
    <!-- /table -->

is replaced by the markdown rendering of the table scrap ``paper_vs_ours`` that
``reports/gradient_dropping.ipynb`` recorded (``scraps.glue_table``). A notebook named with
a folder (``gpu-runs/quickstart_paper_gpu``) is read from the repository instead: executed
notebooks kept from runs on other machines. ``python -m thinwire readme`` runs after
``make reproduce``; nothing in those blocks is typed by hand.
"""

from __future__ import annotations

import re
from pathlib import Path

from .scraps import read_scraps

BLOCK = re.compile(r"(<!-- table: ([\w\-/]+)/([\w\-]+) -->\n)(.*?)(<!-- /table -->)", re.S)


def _format(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if v == 0:
            return "0"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        if abs(v) >= 1:
            return f"{v:.4g}" if abs(v) < 100 else f"{v:.1f}"
        return f"{v:.4f}" if abs(v) >= 1e-3 else f"{v:.2e}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def render(table: dict) -> str:
    """Markdown for a table scrap."""
    head = "| | " + " | ".join(table["columns"]) + " |\n"
    rule = "|---" * (len(table["columns"]) + 1) + "|\n"
    rows = "".join(f"| {_format(label)} | " + " | ".join(_format(v) for v in row) + " |\n"
                   for label, row in zip(table["index"], table["data"]))
    return head + rule + rows


def update_readme(readme: Path, reports: Path, root: Path | None = None) -> tuple[str, list[str]]:
    """(new README text, names of the blocks that had no executed notebook or scrap)."""
    missing, cache = [], {}

    def fill(m):
        notebook, name = m.group(2), m.group(3)
        path = (root or readme.parent) / f"{notebook}.ipynb" if "/" in notebook else reports / f"{notebook}.ipynb"
        if notebook not in cache:
            cache[notebook] = read_scraps(path) if path.exists() else {}
        table = cache[notebook].get(name)
        if not isinstance(table, dict) or "columns" not in table:
            missing.append(f"{notebook}/{name}")
            return m.group(0)
        return m.group(1) + render(table) + m.group(5)

    return BLOCK.sub(fill, readme.read_text()), missing
