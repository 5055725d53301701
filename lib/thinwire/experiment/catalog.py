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


def method_label(config: dict) -> str:
    """What a run's method is, in a few words: the algorithm and its codecs."""
    algorithm = config.get("algorithm", "?")
    codecs = [f"{k.removesuffix('_codec')} {v}" for k, v in config.get(algorithm, {}).items() if k.endswith("_codec")]
    return " ".join([algorithm, *codecs])


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
            "algorithm": config.get("algorithm"), "method": method_label(config), "summary": _summary(config), "steps": config.get("steps"),
            "final_accuracy": summary.get("final_accuracy"), "final_loss": summary.get("final_loss"),
            "payload_bytes": summary.get("payload_bytes"), "payload_per_step": summary.get("payload_per_step"),
            "wall_seconds": summary.get("wall_seconds"),
            "compute_seconds_per_step": summary.get("compute_seconds_per_step"),
            "codec_seconds_per_step": summary.get("codec_seconds_per_step"),
            "date": provenance.get("date"), "host_cpu": provenance.get("host_cpu"),
            "git_commit": provenance.get("git_commit"), "torch": provenance.get("torch"),
            "load_average": (provenance.get("load_average") or [None])[0],
        })
    columns = ["key", "folder", "backend", "algorithm", "method", "summary", "steps", "final_accuracy", "final_loss",
               "payload_bytes", "payload_per_step", "wall_seconds", "compute_seconds_per_step",
               "codec_seconds_per_step", "date", "host_cpu", "git_commit", "torch", "load_average"]
    return pd.DataFrame(rows, columns=columns)


def find_runs(key: str, root: str | Path | None = None) -> list[Path]:
    """The folders of the runs whose key starts with ``key`` (at least 4 hex digits, or a
    folder's whole name: ``<key>-<backend>``, which tells one key's backends apart); a key
    that matches nothing is an error."""
    folder = Path(root or results_dir())
    digits = key.split("-", 1)[0] if isinstance(key, str) else ""
    if len(digits) < 4 or any(c not in "0123456789abcdef" for c in digits):
        raise ValueError(f"key={key!r} is not allowed: give at least 4 hex digits of a run's key "
                         "(thinwire runs lists them)")
    matches = sorted(p for p in folder.glob(f"{key}*") if p.is_dir()) if folder.is_dir() else []
    if not matches:
        raise ValueError(f"key={key!r}: no run in {folder} has this key")
    return matches


def find_run(key: str, root: str | Path | None = None) -> Path:
    """The one run folder ``key`` names; an error naming the candidates when it names several."""
    matches = find_runs(key, root)
    if len(matches) > 1:
        raise ValueError(f"key={key!r} names {len(matches)} runs ({', '.join(p.name for p in matches)}): give more "
                         "of the key, or the folder's name")
    return matches[0]


def remove_runs(keys: list[str], root: str | Path | None = None) -> list[Path]:
    """Delete the folders of the runs whose key starts with one of ``keys`` (at least 4
    hex digits each); a key that matches nothing is an error, before anything is removed."""
    found = {}
    for key in keys:
        found.update({p: None for p in find_runs(key, root)})
    for path in found:
        shutil.rmtree(path)
    return list(found)


def flatten(doc: dict, prefix: str = "") -> dict:
    """A config's nested sections as one level of ``section.field`` keys."""
    out = {}
    for k, v in doc.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def diff_runs(a: str, b: str, root: str | Path | None = None):
    """The config fields that differ between two runs, then their summaries side by side
    (pandas DataFrame: field, A, B; the summary's rows prefixed ``summary.``)."""
    import pandas as pd
    docs = [json.loads((find_run(k, root) / "result.json").read_text()) for k in (a, b)]
    configs = [flatten(d["config"]) for d in docs]
    summaries = [d["summary"] for d in docs]
    rows = [(k, configs[0].get(k), configs[1].get(k)) for k in sorted(set(configs[0]) | set(configs[1]))
            if configs[0].get(k) != configs[1].get(k)]
    rows += [(f"summary.{k}", summaries[0].get(k), summaries[1].get(k))
             for k in sorted(set(summaries[0]) | set(summaries[1]))]
    return pd.DataFrame(rows, columns=["field", a, b])


def export_run(key: str, out: str | Path, root: str | Path | None = None) -> list[Path]:
    """A run's per-step metrics (``metrics.csv``: one row a step) and its ledger
    (``ledger.csv``: one row a message) as CSV files in ``out``; returns their paths."""
    import pandas as pd
    from .result import Result
    result = Result.load(find_run(key, root))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "metrics.csv", out / "ledger.csv"]
    result.frame().to_csv(paths[0], index=False)
    pd.DataFrame(result.ledger.columns).to_csv(paths[1], index=False)
    return paths
