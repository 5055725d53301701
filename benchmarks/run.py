"""``make bench``: codec throughput and in-process simulation overhead; writes
benchmarks/out/results.json and prints a table."""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))

import codecs_bench  # noqa: E402
import graddrop_bench  # noqa: E402
import oland_raj_bench  # noqa: E402
import replicas_bench  # noqa: E402


def main() -> int:
    out = Path(__file__).parent / "out"
    out.mkdir(exist_ok=True)
    codec_rows = codecs_bench.run()
    drop_rows = graddrop_bench.run()
    replica = replicas_bench.run()
    oland = oland_raj_bench.run()
    doc = {"machine": {"cpu": platform.processor() or platform.machine(), "threads": torch.get_num_threads(),
                       "torch": torch.__version__},
           "codecs": codec_rows, "graddrop": drop_rows, "replicas": replica,
           "oland_raj": oland}
    (out / "results.json").write_text(json.dumps(doc, indent=1))
    print(f"add pass over {codec_rows[0]['values']:,} float32: {codec_rows[0]['add_pass_s'] * 1e3:.1f} ms")
    print("| codec | payload bytes | framing bytes | encode ms | decode ms | fraction of roofline | target |")
    print("|---|---|---|---|---|---|---|")
    for r in codec_rows:
        target = f">= {r['target']}" if r["target"] else ""
        print(f"| {r['codec']} | {r['payload']:,} | {r['bytes'] - r['payload']} | {r['encode_s'] * 1e3:.1f} | {r['decode_s'] * 1e3:.1f} | "
              f"{r['fraction_of_roofline']:.3f} | {target} |")
    print("\n| gradient dropping | payload bytes | encode ms | decode ms | fraction of roofline | x faster than top-k 1% "
          "| density | density error |")
    print("|---|---|---|---|---|---|---|---|")
    for r in drop_rows:
        print(f"| {r['codec']} | {r['payload']:,} | {r['encode_s'] * 1e3:.1f} | {r['decode_s'] * 1e3:.1f} | "
              f"{r['fraction_of_roofline']:.3f} | {r['speedup_vs_topk']:.1f} | {r['density']:.5f} | "
              f"{r['density_error']:.3f} |")
        if r["target"]:
            print(f"  targets: {r['target']}")
    n = replica["workers"] * replica["batch_per_worker"]
    print(f"\nK={replica['workers']} in-process workers vs one model on the same {n} samples "
          f"({replica['one_model_s'] * 1e3:.1f} ms/step), target <= {replica['target']}:")
    print(f"  gradient step (gradients materialized): {replica['gradient_step_s'] * 1e3:.1f} ms, "
          f"ratio {replica['ratio_gradient_step']:.2f}")
    print(f"  local SGD step (update fused into backward): {replica['local_sgd_step_s'] * 1e3:.1f} ms, "
          f"ratio {replica['ratio_local_sgd_step']:.2f}")
    h = oland["huffman"]
    print(f"\nHuffman on {h['symbols']:,} 8-bit symbols (entropy {h['entropy_bits']:.3f} bits; Huffman "
          f"{h['huffman_bits_per_symbol']:.3f}, ANS {h['ans_bits_per_symbol']:.3f} bits/symbol), "
          f"target >= {h['target_symbols_per_s'] / 1e6:.0f} M/s:")
    print(f"  Huffman encode {h['encode_symbols_per_s'] / 1e6:.1f} M/s, decode {h['decode_symbols_per_s'] / 1e6:.1f} M/s; "
          f"ANS encode {h['ans_encode_symbols_per_s'] / 1e6:.1f} M/s, decode {h['ans_decode_symbols_per_s'] / 1e6:.1f} M/s")
    print("\n| quantize + pack, N bits | ms | fraction of roofline | target |")
    print("|---|---|---|---|")
    for r in oland["quantize_pack"]:
        print(f"| {r['bits']} | {r['seconds'] * 1e3:.1f} | {r['fraction_of_roofline']:.3f} | >= {r['target']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
