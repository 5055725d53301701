"""The finished runs in a results folder: a table to list or export, and removal by key.

Each run is ``results/<key>-<backend>[-cuda]/result.json`` (``runner.result_folder``). The
table reads only ``result.json`` (not the ledger), so listing thousands of runs is quick.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ..paths import results_dir


def _summary(config: dict) -> str:
    algorithm = config.get("algorithm", "?")
    section = config.get(algorithm, {})
    codecs = ", ".join(f"{k}={v}" for k, v in section.items() if k.endswith("_codec"))
    return (f"{algorithm} {config.get('model')} {config.get('dataset')} K={config.get('workers')} "
            f"seed={config.get('seed')}" + (f" {codecs}" if codecs else ""))


def runs_table(root: str | Path | None = None):
    """One row per finished run: key, backend, config summary, steps, final accuracy,
    bytes, median times and the provenance of the times (pandas DataFrame)."""
    import pandas as pd
    folder = Path(root or results_dir())
    rows = []
    for path in sorted(folder.glob("*/result.json")) if folder.is_dir() else []:
        try:
            doc = json.loads(path.read_text())
            config, summary = doc["config"], doc["summary"]
        except (OSError, ValueError, KeyError, TypeError):
            rows.append({"key": path.parent.name.split("-")[0], "folder": path.parent.name, "summary": "damaged"})
            continue
        provenance = doc.get("provenance") or {}
        rows.append({
            "key": path.parent.name.split("-")[0], "folder": path.parent.name, "backend": doc.get("backend"),
            "algorithm": config.get("algorithm"), "summary": _summary(config), "steps": config.get("steps"),
            "final_accuracy": summary.get("final_accuracy"), "payload_bytes": summary.get("payload_bytes"),
            "compute_seconds_per_step": summary.get("compute_seconds_per_step"),
            "codec_seconds_per_step": summary.get("codec_seconds_per_step"),
            "date": provenance.get("date"), "host_cpu": provenance.get("host_cpu"),
            "git_commit": provenance.get("git_commit"), "torch": provenance.get("torch"),
            "load_average": (provenance.get("load_average") or [None])[0],
        })
    columns = ["key", "folder", "backend", "algorithm", "summary", "steps", "final_accuracy", "payload_bytes",
               "compute_seconds_per_step", "codec_seconds_per_step", "date", "host_cpu", "git_commit", "torch",
               "load_average"]
    return pd.DataFrame(rows, columns=columns)


def remove_runs(keys: list[str], root: str | Path | None = None) -> list[Path]:
    """Delete the folders of the runs whose key starts with one of ``keys`` (at least 4
    hex digits each); a key that matches nothing is an error, before anything is removed."""
    folder = Path(root or results_dir())
    found = {}
    for key in keys:
        if len(key) < 4 or any(c not in "0123456789abcdef" for c in key):
            raise ValueError(f"key={key!r} is not allowed: give at least 4 hex digits of a run's key "
                             "(thinwire runs lists them)")
        matches = [p for p in folder.glob(f"{key}*") if p.is_dir()] if folder.is_dir() else []
        if not matches:
            raise ValueError(f"key={key!r}: no run in {folder} has this key")
        found.update({p: None for p in matches})
    for path in found:
        shutil.rmtree(path)
    return list(found)
