"""Executed notebooks kept in the repository hold results, small.

``make reproduce`` executes every notebook into ``reports/``, and those files are committed:
the README's tables are read from them, so anyone can check a number against the notebook
that computed it without rerunning. ``tidy`` keeps what a reader checks and drops what only
a live kernel uses:

- progress-bar widgets (their outputs and the notebook's widget state);
- PNG figures are re-encoded with an adaptive 256-colour palette, when that is smaller
  (a figure's few flat colours survive; the numbers are in the tables, not the pixels).

Text, HTML tables, scraps (the recorded numbers), tracebacks and every cell's source stay as
executed. The file is rewritten atomically.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

WIDGET = "application/vnd.jupyter.widget-view+json"


def _smaller_png(encoded: str) -> str:
    """The PNG re-encoded with a 256-colour palette when that is smaller, else as it was."""
    from PIL import Image
    raw = base64.b64decode(encoded)
    with Image.open(io.BytesIO(raw)) as image:
        rgb = image.convert("RGB")
    out = io.BytesIO()
    rgb.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(out, "PNG", optimize=True)
    smaller = out.getvalue()
    return base64.b64encode(smaller).decode("ascii") if len(smaller) < len(raw) else encoded


def tidy_notebook(notebook: dict) -> dict:
    """The notebook without widgets, its PNGs palette-encoded (a new dict)."""
    notebook = json.loads(json.dumps(notebook))
    notebook.get("metadata", {}).pop("widgets", None)
    for cell in notebook.get("cells", []):
        kept = []
        for output in cell.get("outputs", []):
            data = output.get("data")
            if data is not None:
                data.pop(WIDGET, None)
                if not data:
                    continue
                if isinstance(data.get("image/png"), str):
                    data["image/png"] = _smaller_png(data["image/png"])
            kept.append(output)
        if "outputs" in cell:
            cell["outputs"] = kept
    return notebook


def tidy(path: Path) -> tuple[int, int]:
    """Tidy the executed notebook at ``path`` in place; (bytes before, bytes after)."""
    path = Path(path)
    before = path.stat().st_size
    from .experiment.result import atomic_write
    text = json.dumps(tidy_notebook(json.loads(path.read_text())), indent=1, ensure_ascii=False) + "\n"
    atomic_write(path, lambda f: f.write(text.encode()))
    return before, path.stat().st_size
