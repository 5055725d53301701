"""The README's results tables, written from the numbers executed notebooks recorded.

A block in README.md such as

    <!-- table: gradient_dropping/paper_vs_ours -->
    ... (generated) ...
    <!-- /table -->

is replaced by the markdown rendering of the table scrap ``paper_vs_ours`` that
``reports/gradient_dropping.ipynb`` recorded (``scraps.glue_table``), in the front README and
in each paper package's README, where its results live (``documents``). A block under a
heading that names a profile ("## Results (default profile, ...)") takes only a notebook
executed at that profile: a smoke run in reports/ is refused, naming it. A notebook named with
a folder (``gpu-runs/quickstart_paper_gpu``) is read from the repository instead: executed
notebooks kept from runs on other machines. ``python -m thinwire readme`` runs after
``make reproduce``; nothing in those blocks is typed by hand.

The front README's notebook table, between ``<!-- notebooks -->`` and ``<!-- /notebooks -->``,
is written from the registered papers (``papers.Paper``): one row each, with what the notebook
reproduces and its one headline number, read from its default-profile report.

Every block ends with a line naming the executed notebook it was read from and that
notebook's profile. The executed notebooks are committed (``reports/``, ``long-runs/``,
``gpu-runs/``, tidied by ``tidy.py``), so every number in those blocks can be checked
against the notebook that computed it; ``tests/test_goldens.py`` checks that the README's
blocks are what the committed notebooks give.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from .scraps import read_scraps

BLOCK = re.compile(r"(<!-- table: ([\w\-/]+)/([\w\-]+) -->\n)(.*?)(<!-- /table -->)", re.S)
INDEX = re.compile(r"(<!-- notebooks -->\n)(.*?)(<!-- /notebooks -->)", re.S)
INDEX_PROFILE = "default"
HEADING_PROFILE = re.compile(r"^## .*?\b(smoke|default|paper) profile", re.M)
PROFILE = re.compile(r"^profile(?:\s*:\s*str)?\s*=\s*[\"'](\w+)[\"']", re.M)


def notebook_profile(path: Path) -> str | None:
    """The profile an executed notebook ran at: papermill's injected value, else the
    parameters cell's default."""
    cells = json.loads(Path(path).read_text()).get("cells", [])
    for tag in ("injected-parameters", "parameters"):
        for cell in cells:
            if tag in cell.get("metadata", {}).get("tags", []):
                if m := PROFILE.search("".join(cell.get("source", []))):
                    return m.group(1)
    return None


def _section_profile(text: str, position: int) -> str | None:
    found = [m for m in HEADING_PROFILE.finditer(text, 0, position)]
    last_heading = text.rfind("\n## ", 0, position)
    return found[-1].group(1) if found and found[-1].start() >= last_heading else None


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


def source_line(path: Path, root: Path, profile: str | None) -> str:
    """The block's last line: the notebook it was read from, relative to the repository."""
    try:
        shown = Path(path).resolve().relative_to(Path(root).resolve())
    except ValueError:
        shown = Path(path)
    return f"<sub>From `{shown.as_posix()}`" + (f", {profile} profile" if profile else "") + ".</sub>\n"


def provenance_problems(path: Path) -> list[str]:
    """Why the executed notebook ``path`` cannot be tied to one clean commit: no
    ``provenance`` scrap (``timing.provenance_table`` records it), executed from an
    uncommitted tree, or runs taken at another commit (reused from elsewhere). Empty when
    it was executed from a clean commit and every run it reads was made there."""
    record = read_scraps(path).get("provenance")
    if not isinstance(record, dict) or "executed_at" not in record:
        return [f"{path}: records no provenance (executed before it was recorded: re-execute it)"]
    at, problems = str(record["executed_at"]), []
    if at.endswith("+dirty") or at == "None":
        problems.append(f"{path}: executed from an uncommitted tree ({at})")
    other = {c: n for c, n in dict(record.get("runs", {})).items() if c != at}
    if other:
        shown = ", ".join(f"{n} at {c[:12]}" for c, n in sorted(other.items()))
        problems.append(f"{path}: executed at {at[:12]}, but its runs came from elsewhere ({shown}): re-execute it "
                        "into an empty results folder")
    return problems


def documents(root: Path) -> list[Path]:
    """The files whose table blocks ``python -m thinwire readme`` writes: the front README,
    each paper package's README (its results tables) and the codec engine's (speed)."""
    library = root / "lib" / "thinwire"
    return [root / "README.md", *sorted((library / "papers").glob("*/README.md")), library / "engine" / "README.md"]


def block_notebooks(readme: Path, reports: Path, root: Path | None = None) -> list[Path]:
    """The executed notebooks the README's blocks are read from (those that exist), once each."""
    paths = {}
    for m in BLOCK.finditer(readme.read_text()):
        notebook = m.group(2)
        path = (root or readme.parent) / f"{notebook}.ipynb" if "/" in notebook else reports / f"{notebook}.ipynb"
        if path.exists():
            paths.setdefault(str(path), path)
    return list(paths.values())


def notebook_index(papers, reports: Path, root: Path) -> tuple[str, list[str]]:
    """(the notebook table's markdown, problems): a row per paper (``papers.Paper``) with
    its notebook, what it reproduces and its headline, read from ``reports/<name>.ipynb``
    executed at the default profile. A paper without a headline, or whose report is missing,
    of another profile or without the scrap, gets an empty cell and a problem."""
    rows, problems = ["| notebook | reproduces | headline (default profile) |", "|---|---|---|"], []
    for paper in papers:
        path, line = reports / f"{paper.name}.ipynb", ""
        ran = notebook_profile(path) if path.exists() else None
        if paper.headline is None:
            problems.append(f"{paper.name}: its Paper record has no headline")
        elif not path.exists():
            problems.append(f"notebooks/{paper.name} (no executed report {path})")
        elif ran != INDEX_PROFILE:
            problems.append(f"notebooks/{paper.name} (the notebook table is the {INDEX_PROFILE} profile; {path} ran at "
                            f"the {ran} profile)")
        elif (line := paper.headline.render(read_scraps(path))) is None:
            problems.append(f"notebooks/{paper.name}/{paper.headline.scrap}")
            line = ""
        rows.append(f"| `{paper.notebook}` | {_format(paper.reproduces)} | {_format(line)} |")
    where = source_line(reports / "<paper>.ipynb", root, INDEX_PROFILE).replace("From", "Headlines from")
    return "\n".join(rows) + "\n\n" + where, problems


def index_notebooks(readme: Path, papers, reports: Path) -> list[Path]:
    """The reports the notebook table reads (those that exist), when ``readme`` has one."""
    if not INDEX.search(readme.read_text()):
        return []
    return [path for paper in papers if (path := reports / f"{paper.name}.ipynb").exists()]


def update_readme(readme: Path, reports: Path, root: Path | None = None, papers=()) -> tuple[str, list[str]]:
    """(new README text, problems: blocks that had no executed notebook or scrap, and
    notebooks executed at another profile than their section's). ``papers`` (``Paper``
    records) fill the notebook table, where the README has one."""
    missing, cache = [], {}
    text = readme.read_text()
    if papers and INDEX.search(text):
        index, problems = notebook_index(papers, reports, root or readme.parent)
        missing += problems
        text = INDEX.sub(lambda m: m.group(1) + index + m.group(3), text)

    def fill(m):
        notebook, name = m.group(2), m.group(3)
        path = (root or readme.parent) / f"{notebook}.ipynb" if "/" in notebook else reports / f"{notebook}.ipynb"
        if notebook not in cache:
            cache[notebook] = read_scraps(path) if path.exists() else {}
        wanted, ran = _section_profile(text, m.start()), notebook_profile(path) if path.exists() else None
        if wanted and ran and ran != wanted:
            missing.append(f"{notebook}/{name} (the section is the {wanted} profile; {path} ran at the {ran} profile)")
            return m.group(0)
        table = cache[notebook].get(name)
        if not isinstance(table, dict) or "columns" not in table:
            missing.append(f"{notebook}/{name}")
            return m.group(0)
        return m.group(1) + render(table) + "\n" + source_line(path, root or readme.parent, ran) + m.group(5)

    return BLOCK.sub(fill, text), missing
