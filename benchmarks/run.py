"""``make bench``: codec throughput against this machine's memory roofline, the slowdown
of every codec under a competing CPU load, and the in-process simulation overhead.

Writes ``benchmarks/out/results.json``, prints every table, and rewrites the README's
blocks ``<!-- bench: NAME -->`` ... ``<!-- /bench -->`` with them, so the README's benchmark
numbers are the last run's, never typed. ``--no-readme`` leaves the README alone.
"""

from __future__ import annotations

import json
import platform
import re
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))

import codecs_bench  # noqa: E402
import graddrop_bench  # noqa: E402
import load_bench  # noqa: E402
import oland_raj_bench  # noqa: E402
import replicas_bench  # noqa: E402

README = Path(__file__).parents[1] / "README.md"
BLOCK = re.compile(r"(<!-- bench: (\w+) -->\n)(.*?)(<!-- /bench -->)", re.S)


def _target(value: float, target: float | None, at_least: bool = True) -> str:
    if target is None:
        return f"{value:.3f}"
    met = value >= target if at_least else value <= target
    return f"**{value:.3f}** ({'>=' if at_least else '<='} {target}{'' if met else ', MISSED'})"


def tables(doc: dict) -> dict[str, str]:
    """Markdown for each README block, from a results document."""
    out = {}
    codecs = doc["codecs"]
    first = codecs[0]
    bound = (f", so a codec that copies the values into its message and out of it again reaches at most "
             f"{first['add_pass_s'] / (2 * first['stream_copy_s']):.2f} of the roofline"
             if "stream_copy_s" in first else "")
    lines = [f"One add pass over {first['values']:,} float32 values (the roofline): "
             f"{first['add_pass_s'] * 1e3:.1f} ms; one copy of them into a reused buffer by torch: "
             f"{first['copy_pass_s'] * 1e3:.1f} ms"
             + (f", streamed (`kernels/stream.py`): {first['stream_copy_s'] * 1e3:.1f} ms" if "stream_copy_s" in first
                else "") + bound + ".\n",
             "| codec | payload bytes | framing bytes | encode ms | decode ms | fraction of roofline |",
             "|---|---|---|---|---|---|"]
    for r in codecs:
        lines.append(f"| {r['codec']} | {r['payload']:,} | {r['bytes'] - r['payload']} | {r['encode_s'] * 1e3:.1f} | "
                     f"{r['decode_s'] * 1e3:.1f} | {_target(r['fraction_of_roofline'], r['target'])} |")
    out["codecs"] = "\n".join(lines) + "\n"

    lines = ["| codec | loads paused between pairs: alone ms | with load ms | slowdown | loads left running: "
             "alone ms | with load ms | slowdown |", "|---|---|---|---|---|---|---|"]
    running = {r["codec"]: r for r in doc.get("load_running", [])}
    for r in doc["load"]:
        c = running.get(r["codec"])
        tail = (f"{c['alone_s'] * 1e3:.1f} | {c['loaded_s'] * 1e3:.1f} | "
                f"{_target(c['slowdown'], c['target'], at_least=False)}" if c else " | | ")
        lines.append(f"| {r['codec']} | {r['alone_s'] * 1e3:.1f} | {r['loaded_s'] * 1e3:.1f} | "
                     f"{_target(r['slowdown'], r['target'], at_least=False)} | {tail} |")
    out["load"] = "\n".join(lines) + "\n"

    lines = ["| codec | payload bytes | encode ms | decode ms | fraction of roofline | x faster than a sorting top-k 1% "
             "| density | density error |", "|---|---|---|---|---|---|---|---|"]
    for r in doc["graddrop"]:
        t = r["target"] or {}
        lines.append(f"| {r['codec']} | {r['payload']:,} | {r['encode_s'] * 1e3:.1f} | {r['decode_s'] * 1e3:.1f} | "
                     f"{_target(r['fraction_of_roofline'], t.get('fraction_of_roofline'))} | "
                     f"{_target(r['speedup_vs_topk'], t.get('speedup_vs_topk'))} | {r['density']:.5f} | "
                     f"{_target(r['density_error'], t.get('density_error'), at_least=False)} |")
    out["graddrop"] = "\n".join(lines) + "\n"

    rep = doc["replicas"]
    out["replicas"] = "\n".join([
        f"K = {rep['workers']} in-process workers (batch {rep['batch_per_worker']} each) against one model on the same "
        f"{rep['workers'] * rep['batch_per_worker']} samples ({rep['one_model_s'] * 1e3:.1f} ms per step):\n",
        "| K-worker step | used by | ms | ratio to one model |", "|---|---|---|---|",
        f"| gradient step: K gradients written, then `p -= lr g` | gradient compression (dropping, MQGrad) | "
        f"{rep['gradient_step_s'] * 1e3:.1f} | {rep['ratio_gradient_step']:.2f} |",
        f"| local SGD step (`Replicas.sgd_step`): update fused into backward | local training (Oland & Raj, "
        f"EventGraD) | {rep['local_sgd_step_s'] * 1e3:.1f} | "
        f"{_target(rep['ratio_local_sgd_step'], rep['target'], at_least=False)} |"]) + "\n"

    h = doc["oland_raj"]["huffman"]
    out["huffman"] = "\n".join([
        f"{h['symbols']:,} 8-bit symbols, entropy {h['entropy_bits']:.3f} bits:\n",
        "| coder | bits per symbol | encode M symbols/s, one core | decode M symbols/s, one core | "
        "encode, all cores | decode, all cores |", "|---|---|---|---|---|---|",
        f"| Huffman | {h['huffman_bits_per_symbol']:.3f} | {_target(h['encode_symbols_per_s'] / 1e6, h['encode_target'] / 1e6)}"
        f" | {_target(h['decode_symbols_per_s'] / 1e6, h['decode_target'] / 1e6)} | "
        f"{h['encode_all_cores_symbols_per_s'] / 1e6:.1f} | {h['decode_all_cores_symbols_per_s'] / 1e6:.1f} |",
        f"| ANS | {h['ans_bits_per_symbol']:.3f} | | | {h['ans_encode_symbols_per_s'] / 1e6:.1f} | "
        f"{h['ans_decode_symbols_per_s'] / 1e6:.1f} |"]) + "\n"

    lines = ["| N bits | quantize + pack ms | fraction of roofline |", "|---|---|---|"]
    for r in doc["oland_raj"]["quantize_pack"]:
        lines.append(f"| {r['bits']} | {r['seconds'] * 1e3:.1f} | {_target(r['fraction_of_roofline'], r['target'])} |")
    out["quantize_pack"] = "\n".join(lines) + "\n"
    return out


def update_readme(text: str, blocks: dict[str, str]) -> str:
    return BLOCK.sub(lambda m: m.group(1) + blocks[m.group(2)] + m.group(4) if m.group(2) in blocks else m.group(0),
                     text)


def main(argv: list[str]) -> int:
    out = Path(__file__).parent / "out"
    out.mkdir(exist_ok=True)
    doc = {"machine": {"cpu": platform.processor() or platform.machine(), "threads": torch.get_num_threads(),
                       "torch": torch.__version__},
           "codecs": codecs_bench.run(), "graddrop": graddrop_bench.run(), "replicas": replicas_bench.run(),
           "oland_raj": oland_raj_bench.run(), "load": load_bench.run(), "load_running": load_bench.run_continuous()}
    (out / "results.json").write_text(json.dumps(doc, indent=1))
    blocks = tables(doc)
    for name, table in blocks.items():
        print(f"\n## {name}\n\n{table}")
    if "--no-readme" not in argv:
        README.write_text(update_readme(README.read_text(), blocks))
        print(f"README.md benchmark tables rewritten from {out / 'results.json'}")
    for mode in ("load", "load_running"):
        missed = [r["codec"] for r in doc[mode] if not r["met"]]
        if missed:
            print(f"slowdown under load ({mode}) above {load_bench.TARGET}x: {missed}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
