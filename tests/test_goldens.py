"""The nbval goldens are executed copies of notebooks/ (``make golden``): a golden whose
sources differ from its notebook is stale. Also: README tables render from table scraps."""

import json
from pathlib import Path

import pytest

from thinwire.report import render, update_readme

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ("quickstart", "gradient_dropping", "oland_raj", "slim_dp")


def _sources(path: Path) -> list[tuple[str, str]]:
    cells = json.loads(path.read_text())["cells"]
    return [(c["cell_type"], "".join(c["source"])) for c in cells
            if "injected-parameters" not in c.get("metadata", {}).get("tags", [])]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_golden_sources_match_the_notebook(name):
    golden, notebook = _sources(ROOT / "tests/golden" / f"{name}.ipynb"), _sources(ROOT / "notebooks" / f"{name}.ipynb")
    assert golden == notebook, f"tests/golden/{name}.ipynb is stale: run make golden"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_golden_was_executed_at_the_smoke_profile(name):
    cells = json.loads((ROOT / "tests/golden" / f"{name}.ipynb").read_text())["cells"]
    injected = [c for c in cells if "injected-parameters" in c.get("metadata", {}).get("tags", [])]
    assert injected and 'profile = "smoke"' in "".join(injected[0]["source"])
    assert all(c.get("outputs") is not None for c in cells if c["cell_type"] == "code")


def test_readme_blocks_are_filled_from_table_scraps(tmp_path):
    scrap = {"columns": ["accuracy", "bytes"], "index": ["a", "b"], "data": [[0.91234, 1234567], [None, 2.5]]}
    nb = {"cells": [{"cell_type": "code", "source": [], "outputs": [{"data": {
        "application/vnd.thinwire.scrap+json": {"name": "results", "value": scrap}}}]}]}
    (tmp_path / "demo.ipynb").write_text(json.dumps(nb))
    readme = tmp_path / "README.md"
    readme.write_text("x\n<!-- table: demo/results -->\nold\n<!-- /table -->\n<!-- table: demo/nothing -->\n<!-- /table -->\n")
    text, missing = update_readme(readme, tmp_path)
    assert render(scrap) in text and "old" not in text and missing == ["demo/nothing"]
    assert "| a | 0.9123 | 1,234,567 |" in render(scrap) and "| b |  | 2.5 |" in render(scrap)
