"""The network model's check, run once and quoted: ``thinwire netcheck`` on the comparison's
rank counts takes about 10 minutes of emulated cluster on 2 cores (48 runs, each starting
4-5 ranks), half the default profile's budget. ``NETCHECK_RUN`` is the compare notebook
executed with ``-p fixed_costs fitted`` (the fp16 all-reduce alone beside the check); it
records the report as the scrap ``netcheck_report`` (``report_scrap``), and the notebook at
``fixed_costs="quoted"`` reads it back (``quoted_netcheck``) for the checked range and the
fitted-cost variant. The check is of the model and this machine's emulation, not of any
method's run, so a quoted check prices the same as one made in the same notebook."""

from __future__ import annotations

from pathlib import Path

NETCHECK_RUN = "long-runs/compare_netcheck.ipynb"
FIXED_COSTS = ("quoted", "fitted", "none")


def report_scrap(report: dict, workers: int) -> dict:
    """``netcheck``'s report as a scrap: its fitted costs and every row but the per-phase
    detail, with the ``workers`` it was checked at."""
    kept = {k: v for k, v in report.items() if k not in ("calibration", "rows")}
    rows = [{k: v for k, v in row.items() if k != "phases"} for row in report["rows"]]
    return {**kept, "rows": rows, "workers": int(workers)}


def quoted_netcheck(path: str | Path, workers: int) -> dict | None:
    """The report a committed run recorded (``report_scrap``), or None when the file or the
    scrap is missing or it was checked at another number of workers than ``workers``."""
    from ...scraps import read_scraps
    try:
        report = read_scraps(path).get("netcheck_report")
    except FileNotFoundError:
        return None
    if report is None or report.get("workers") != workers:
        return None
    return report
