"""The nbval goldens are executed copies of notebooks/ (``make golden``): a golden whose
sources differ from its notebook is stale. Also: README tables render from table scraps."""

import json
import re
from pathlib import Path

import pytest

from thinwire.report import documents, render, update_readme
from thinwire.papers import PAPERS

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = PAPERS  # one list: thinwire.papers.PAPERS


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


def test_the_readme_lists_every_registered_papers_notebook():
    from thinwire.cli import unlisted_notebooks
    from thinwire.papers import REGISTRY
    text = (ROOT / "README.md").read_text()
    assert unlisted_notebooks(text) == []
    assert unlisted_notebooks(text.replace("| `notebooks/slim_dp.ipynb` |", "| slim |")) == ["notebooks/slim_dp.ipynb"]
    assert all((ROOT / p.notebook).exists() and p.recipes for p in REGISTRY.values())


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


def test_the_notebook_table_is_written_from_the_paper_records_and_their_reports(tmp_path):
    """A row per registered paper, its headline read from its default-profile report: a
    report of another profile, or one without the scrap, leaves the cell empty and says so."""
    from thinwire.papers import Headline, Paper
    reports = tmp_path / "reports"
    reports.mkdir()

    def report(name, profile, scraps):
        outputs = [{"data": {"application/vnd.thinwire.scrap+json": {"name": k, "value": v}}} for k, v in scraps.items()]
        (reports / f"{name}.ipynb").write_text(json.dumps({"cells": [
            {"cell_type": "code", "metadata": {"tags": ["injected-parameters"]}, "source": [f'profile = "{profile}"\n'],
             "outputs": outputs}]}))
    report("one", "default", {"ratio": 4.6445, "by": {"a": 7.0}})
    report("two", "smoke", {"ratio": 1.0})
    report("three", "default", {"other": 1.0})
    papers = [Paper("one", "One", 0, reproduces="the first", headline=Headline("ratio", "{ours:.2f}x (paper: 9x)")),
              Paper("two", "Two", 1, reproduces="the second", headline=Headline("ratio", "{ours:.2f}x")),
              Paper("three", "Three", 2, reproduces="the third", headline=Headline("by", "{ours:.0f}", key="a"))]
    readme = tmp_path / "README.md"
    readme.write_text("# x\n<!-- notebooks -->\nold\n<!-- /notebooks -->\nafter\n")
    text, problems = update_readme(readme, reports, tmp_path, papers)
    assert "| `notebooks/one.ipynb` | the first | 4.64x (paper: 9x) |" in text
    assert "| `notebooks/two.ipynb` | the second |  |" in text and "| `notebooks/three.ipynb` | the third |  |" in text
    assert "old" not in text and text.endswith("<!-- /notebooks -->\nafter\n")
    assert problems == [f"notebooks/two (the notebook table is the default profile; {reports / 'two.ipynb'} ran at the "
                        "smoke profile)", "notebooks/three/by"]
    assert Headline("by", "{ours:.0f}", key="a").render({"by": {"a": 7.0}}) == "7"


def test_every_paper_has_a_line_and_a_headline_its_report_records():
    from thinwire.papers import REGISTRY
    from thinwire.scraps import read_scraps
    for paper in REGISTRY.values():
        assert paper.reproduces and "\n" not in paper.reproduces and paper.headline is not None, paper.name
        report = ROOT / "reports" / f"{paper.name}.ipynb"
        if report.exists():  # committed: the scrap it names is there
            assert paper.headline.render(read_scraps(report)) is not None, paper.name


def test_readme_refuses_a_notebook_of_another_profile(tmp_path):
    scrap = {"columns": ["accuracy"], "index": ["a"], "data": [[0.9]]}
    nb = {"cells": [
        {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": ['profile: str = "smoke"  # p'],
         "outputs": []},
        {"cell_type": "code", "metadata": {"tags": ["injected-parameters"]}, "source": ['profile = "smoke"\n'],
         "outputs": [{"data": {"application/vnd.thinwire.scrap+json": {"name": "results", "value": scrap}}}]}]}
    (tmp_path / "demo.ipynb").write_text(json.dumps(nb))
    readme = tmp_path / "README.md"
    readme.write_text("## Results (default profile, 2-core CPU)\n<!-- table: demo/results -->\nold\n<!-- /table -->\n"
                      "## Smoke check (smoke profile)\n<!-- table: demo/results -->\nold\n<!-- /table -->\n")
    text, problems = update_readme(readme, tmp_path)
    assert problems == [f"demo/results (the section is the default profile; {tmp_path / 'demo.ipynb'} ran at the smoke profile)"]
    assert text.count("old") == 1 and render(scrap) in text  # the smoke section took it


def _report(path, provenance):
    scrap = {"columns": ["accuracy"], "index": ["a"], "data": [[0.9]]}
    outputs = [{"data": {"application/vnd.thinwire.scrap+json": {"name": "results", "value": scrap}}}]
    if provenance is not None:
        outputs.append({"data": {"application/vnd.thinwire.scrap+json": {"name": "provenance", "value": provenance}}})
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "source": [], "outputs": outputs}]}))


CLEAN = "4bb94bb" + "0" * 33


@pytest.mark.parametrize("provenance, problem", [
    ({"executed_at": CLEAN, "runs": {CLEAN: 3}}, None),
    ({"executed_at": CLEAN + "+dirty", "runs": {CLEAN + "+dirty": 3}}, r"executed from an uncommitted tree \(4bb94bb0+\+dirty\)"),
    ({"executed_at": CLEAN, "runs": {CLEAN: 2, "d4e0c97" + "1" * 33: 1}}, r"its runs came from elsewhere \(1 at d4e0c9711111\)"),
    ({"executed_at": CLEAN, "runs": {CLEAN: 2, "None": 1}}, r"came from elsewhere \(1 at None\)"),
    (None, "records no provenance"),
])
def test_readme_check_refuses_a_report_not_tied_to_one_clean_commit(tmp_path, capsys, provenance, problem):
    """``readme --check`` fails on a report executed from an uncommitted tree, or whose runs
    were made at another commit, or that records no provenance; passes on a clean one."""
    from thinwire.cli import main
    from thinwire.report import provenance_problems
    reports = tmp_path / "reports"
    reports.mkdir()
    _report(reports / "demo.ipynb", provenance)
    readme = tmp_path / "README.md"
    from thinwire.papers import REGISTRY
    rows = "".join(f"| `{p.notebook}` |\n" for p in REGISTRY.values())  # the notebook table it also checks
    readme.write_text(rows + "<!-- table: demo/results -->\nold\n<!-- /table -->\n")
    assert main(["readme", "--readme", str(readme), "--reports", str(reports)]) == 0  # writes the tables
    rc = main(["readme", "--check", "--readme", str(readme), "--reports", str(reports)])
    problems = provenance_problems(reports / "demo.ipynb")
    if problem is None:
        assert rc == 0 and problems == []
    else:
        assert rc == 1 and len(problems) == 1 and re.search(problem, problems[0])
        assert problems[0] in capsys.readouterr().err


def test_an_installed_copy_reads_data_from_the_configured_folder(tmp_path, monkeypatch):
    from thinwire import paths
    assert paths.source_checkout(tmp_path / "site-packages") is None and paths.source_checkout() == ROOT
    monkeypatch.setattr(paths, "source_checkout", lambda: None)  # as an installed copy finds itself
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("THINWIRE_DATA", raising=False)
    monkeypatch.delenv("THINWIRE_RESULTS", raising=False)
    assert paths.data_dir() == tmp_path / "data" and paths.results_dir() == tmp_path / "results"
    monkeypatch.setenv("THINWIRE_DATA", str(ROOT / "data"))
    assert paths.data_dir() == ROOT / "data"
    monkeypatch.setenv("THINWIRE_CACHE", str(tmp_path / "cache"))
    assert paths.cache_dir() == tmp_path / "cache"


def test_a_golden_fails_when_a_checked_float_moves_beyond_its_tolerance(tmp_path):
    """The quickstart golden with its recorded accuracies moved by 0.05 (beyond the stated
    0.02): rerun by nbval, the checked cell's text differs and the test fails; the golden as
    it is passes (``make golden-test``)."""
    import subprocess
    import sys
    from thinwire.scraps import MIME
    nb = json.loads((ROOT / "tests/golden/quickstart.ipynb").read_text())
    moved = 0
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            scrap = out.get("data", {}).get(MIME)
            if scrap and scrap["name"] == "checks":
                for label in scrap["value"]:
                    if label.endswith("accuracy"):
                        scrap["value"][label] += 0.05
                        moved += 1
    assert moved == 3
    (tmp_path / "quickstart.ipynb").write_text(json.dumps(nb))
    env = {**__import__("os").environ, "THINWIRE_GOLDEN": str(tmp_path), "THINWIRE_RESULTS": str(tmp_path / "r")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "--nbval-lax", "--nbval-current-env",
                           "--sanitize-with", str(ROOT / "tests/golden/sanitize.cfg"), str(tmp_path / "quickstart.ipynb")],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode != 0 and "1 failed" in done.stdout, done.stdout[-2000:]
    assert "more than 0.02" in done.stdout


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_notebook_names_the_one_kernel(name):
    spec = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())["metadata"]["kernelspec"]
    assert spec == {"display_name": "thinwire (.venv)", "language": "python", "name": "thinwire"}


@pytest.mark.parametrize("readme", documents(ROOT), ids=lambda p: str(p.relative_to(ROOT)))
def test_readme_tables_are_the_committed_executed_notebooks(readme):
    """Every results block of the README and of each paper package's README is what its
    committed executed notebook gives (reports/, long-runs/, gpu-runs/), and names that
    notebook."""
    from thinwire.report import BLOCK
    text, problems = update_readme(readme, ROOT / "reports", root=ROOT)
    assert problems == [] and text == readme.read_text()
    blocks = BLOCK.findall(text)
    assert all("<sub>From `" in body for *_, body, _ in blocks)


def test_every_paper_package_readme_holds_its_results():
    """The results tables live beside each paper's code: every paper package's README holds
    at least one block."""
    from thinwire.report import BLOCK
    packages = [p for p in documents(ROOT) if p.parent.parent.name == "papers"]
    assert packages and all(BLOCK.search(p.read_text()) for p in packages)


def test_tidy_keeps_results_and_drops_widgets(tmp_path):
    import base64
    import io

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    from thinwire.scraps import read_scraps
    from thinwire.tidy import WIDGET, tidy
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot(range(50), [i * i for i in range(50)], color="C1")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    png = base64.b64encode(buf.getvalue()).decode()
    scrap = {"name": "t", "value": {"columns": ["a"], "index": ["x"], "data": [[1.5]]}}
    nb = {"metadata": {"widgets": {"state": {"k": 1}}}, "nbformat": 4, "nbformat_minor": 5, "cells": [
        {"cell_type": "code", "source": ["x"], "metadata": {}, "outputs": [
            {"output_type": "display_data", "data": {WIDGET: {"model_id": "m"}, "text/plain": ["bar"]}, "metadata": {}},
            {"output_type": "display_data", "data": {WIDGET: {"model_id": "n"}}, "metadata": {}},
            {"output_type": "display_data", "data": {"image/png": png, "text/plain": ["<Figure>"]}, "metadata": {}},
            {"output_type": "display_data", "data": {"application/vnd.thinwire.scrap+json": scrap}, "metadata": {}},
            {"output_type": "stream", "name": "stdout", "text": ["1.234\n"]}]}]}
    path = tmp_path / "r.ipynb"
    path.write_text(json.dumps(nb))
    before, after = tidy(path)
    out = json.loads(path.read_text())
    assert after < before and "widgets" not in out["metadata"]
    outputs = out["cells"][0]["outputs"]
    assert [list(o.get("data", {})) for o in outputs] == [["text/plain"], ["image/png", "text/plain"],
                                                          ["application/vnd.thinwire.scrap+json"], []]
    assert outputs[-1]["text"] == ["1.234\n"] and read_scraps(path)["t"] == scrap["value"]
    small = base64.b64decode(outputs[1]["data"]["image/png"])
    assert len(small) < len(buf.getvalue())
    with Image.open(io.BytesIO(small)) as image, Image.open(io.BytesIO(buf.getvalue())) as original:
        assert image.size == original.size and image.mode == "P"
    assert tidy(path)[1] == after  # tidying twice changes nothing


def test_the_front_readme_stays_a_front_door():
    """The front README holds what a newcomer needs (at most 400 lines); results live in the
    paper packages' READMEs and speed in the codec engine's."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 400
    assert "make reproduce" in text.split("\n## ")[0] and "make test" in text.split("\n## ")[0]
