"""Checked numbers: a float within its tolerance prints the recorded value (the golden's
text), one beyond it prints a different line (nbval fails); exact values print as they are."""

import json

import pytest

from thinwire.checks import SCRAP, CheckedNumbers
from thinwire.scraps import MIME


def _golden(folder, name, values):
    nb = {"cells": [{"cell_type": "code", "source": [], "outputs": [
        {"output_type": "display_data", "data": {MIME: {"name": SCRAP, "value": values}}}]}]}
    (folder / f"{name}.ipynb").write_text(json.dumps(nb))


def _printed(capsys, checks, *calls):
    for method, args in calls:
        getattr(checks, method)(*args)
    return capsys.readouterr().out.splitlines()


def test_recording_prints_the_values_and_record_round_trips(tmp_path, capsys):
    checks = CheckedNumbers("demo", golden_dir="")
    lines = _printed(capsys, checks, ("near", ("accuracy", 0.81734, 0.01)), ("exact", ("bytes", 1234)),
                     ("near", ("reduction", 77.78, 0.1, True)))
    assert lines == ["accuracy: 0.817 (within 0.01)", "bytes: 1234", "reduction: 77.8 (within 10%)"]
    _golden(tmp_path, "demo", checks.values)
    again = CheckedNumbers("demo", golden_dir=tmp_path)
    assert _printed(capsys, again, ("near", ("accuracy", 0.8235, 0.01)), ("exact", ("bytes", 1234)),
                    ("near", ("reduction", 80.2, 0.1, True))) == lines  # another CPU: same text
    assert not again.failed


def test_a_value_beyond_its_tolerance_changes_the_text(tmp_path, capsys):
    _golden(tmp_path, "demo", {"accuracy": 0.81734, "reduction": 77.78})
    checks = CheckedNumbers("demo", golden_dir=tmp_path)
    lines = _printed(capsys, checks, ("near", ("accuracy", 0.80, 0.01)), ("near", ("reduction", 90.0, 0.1, True)))
    assert "more than 0.01" in lines[0] and "0.80000" in lines[0]
    assert "more than 10%" in lines[1]
    assert checks.failed == ["accuracy", "reduction"]


def test_a_label_the_golden_does_not_record_is_an_error(tmp_path):
    _golden(tmp_path, "demo", {"accuracy": 0.8})
    with pytest.raises(ValueError, match="records nothing under 'loss'"):
        CheckedNumbers("demo", golden_dir=tmp_path).near("loss", 0.3, 0.01)
    with pytest.raises(FileNotFoundError, match="no golden"):
        CheckedNumbers("missing", golden_dir=tmp_path)


@pytest.mark.parametrize("tolerance", [0, -0.1, float("nan"), float("inf"), True, "0.1"])
def test_bad_tolerances_are_refused(tolerance):
    with pytest.raises(ValueError, match="tolerance="):
        CheckedNumbers("demo", golden_dir="").near("x", 1.0, tolerance)
