"""Notebook parameters: every one typed and visible to papermill --help-notebook; a misspelt
or mistyped -p fails at once, naming the parameters."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from thinwire.notebook_parameters import check_parameters
from thinwire.papers import PAPERS

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = PAPERS  # one list: thinwire.papers.PAPERS
DECLARED = 'profile: str = "smoke"  # smoke | default\nworkers: int = 4  # K\nlr: float = 0.1  # step size\ngloo: bool = True  # also gloo'


def _parameters_cell(name: str) -> str:
    cells = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())["cells"]
    return "".join(next(c for c in cells if "parameters" in c["metadata"].get("tags", []))["source"])


def _namespace(*cells):
    ns = {}
    for cell in cells:
        exec(compile(cell, "cell", "exec"), ns)
    return ns


def test_injected_parameters_are_checked():
    injected = '# Parameters\nworkers = 8\nlr = 1\n'
    assert check_parameters(_namespace(DECLARED, injected), ["", DECLARED, injected])["workers"] == 8
    assert check_parameters(_namespace(DECLARED), ["", DECLARED])["profile"] == "smoke"
    assert check_parameters(_namespace(DECLARED), [])["gloo"] is True  # no history (nbval): types only
    misspelt = "# Parameters\nwokers = 8\n"
    with pytest.raises(ValueError, match="unknown notebook parameter 'wokers'.*profile, workers, lr, gloo"):
        check_parameters(_namespace(DECLARED, misspelt), ["", DECLARED, misspelt])
    for wrong in ('workers = "8"', "workers = True", "lr = 'fast'", "gloo = 1"):
        with pytest.raises(ValueError, match=f"^{wrong.split(' =')[0]}=.* is not allowed: parameter"):
            check_parameters(_namespace(DECLARED, wrong), [])
    with pytest.raises(ValueError, match="no typed parameters cell"):
        check_parameters(_namespace("import os"), ["import os"])


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_parameter_is_typed_and_listed_by_papermill(name):
    declared = [line.split(":")[0] for line in _parameters_cell(name).splitlines() if line.strip()]
    out = subprocess.run([sys.executable, "-m", "papermill", "--help-notebook", str(ROOT / "notebooks" / f"{name}.ipynb")],
                         capture_output=True, text=True, check=True).stdout
    for parameter in declared:
        assert f"  {parameter}: " in out and f"{parameter}: Unknown type" not in out, parameter
    assert "Unable to parse" not in out


@pytest.mark.parametrize("name, value, said", [
    ("wokers", "8", "unknown notebook parameter 'wokers' (-p wokers 8) (did you mean 'workers'?)"),
    ("codec", "qsgd(bit=4)", "codec='qsgd(bit=4)' is not allowed: codec spec 'qsgd(bit=4)': qsgd takes no keyword "
                             "'bit' (did you mean 'bits'?); its keywords: bits=8,")])
def test_a_misspelt_parameter_stops_the_notebook_naming_it(tmp_path, name, value, said):
    proc = subprocess.run([sys.executable, "-m", "papermill", "-k", "thinwire", "--cwd", str(ROOT / "notebooks"),
                           str(ROOT / "notebooks" / "quickstart.ipynb"), str(tmp_path / "out.ipynb"),
                           "-p", "profile", "smoke", "-p", name, value], capture_output=True, text=True,
                          env={**__import__("os").environ, "THINWIRE_RESULTS": str(tmp_path)})
    assert proc.returncode != 0
    assert said in proc.stderr + proc.stdout
    assert not list(tmp_path.glob("*-inprocess"))  # stopped before any run
