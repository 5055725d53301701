"""``make bench``: codec throughput against this machine's memory roofline, the slowdown
of every codec under a competing CPU load, and the in-process simulation overhead.

Writes ``benchmarks/out/results.json``, prints every table, and rewrites the codec engine's
README's (``lib/thinwire/engine/README.md``) blocks ``<!-- bench: NAME -->`` ... ``<!-- /bench -->``
with them, so its benchmark numbers are the last run's, never typed. ``--no-readme`` leaves it alone. On a machine
with a GPU it first runs ``gpu_bench.py``, which updates ``gpu-runs/bench_gpu.json``; the
README's GPU blocks are rendered from that file on any machine (``--gpu-tables``: only them).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

# torch's OpenMP runtime, which numba's kernels run on too, reads its wait policy when torch
# is imported: threads that sleep when idle, unless the environment chose (load_bench.py).
if __name__ == "__main__":
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

from thinwire.experiment.timing import provenance  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))

import codecs_bench  # noqa: E402
import roofline  # noqa: E402
import gpu_bench  # noqa: E402
import graddrop_bench  # noqa: E402
import kernel_registers  # noqa: E402
import load_bench  # noqa: E402
import oland_raj_bench  # noqa: E402
import replicas_bench  # noqa: E402
import wait_policy  # noqa: E402

README = Path(__file__).parents[1] / "lib" / "thinwire" / "engine" / "README.md"  # the engine's speed tables
GPU_RESULTS = Path(__file__).parents[1] / "gpu-runs" / "bench_gpu.json"
WAIT_POLICY_RESULTS = Path(__file__).with_name("wait_policy.json")
AUDIT_RESULTS = Path(__file__).with_name("device_audit.json")  # counts: the same on every machine
REGISTERS_RESULTS = kernel_registers.RESULTS  # compiled for a GPU: the same on every machine with the locked Triton
# the gradient-dropping paper profile's modelled images/s on pcie3_x16 in the H100 run
# before the codecs' device paths (gpu-runs/gradient_dropping_paper_gpu.ipynb, speed table)
BEFORE_DEVICE_PATHS = {"0.0%": 404.4, "90.0%": 388.8, "99.0%": 491.5, "99.9%": 504.3}
BLOCK = re.compile(r"(<!-- bench: (\w+) -->\n)(.*?)(<!-- /bench -->)", re.S)


def _target(value: float, target: float | None, at_least: bool = True) -> str:
    if target is None:
        return f"{value:.3f}"
    met = value >= target if at_least else value <= target
    return f"**{value:.3f}** ({'>=' if at_least else '<='} {target}{'' if met else ', MISSED'})"


def _above(rows) -> str:
    rows = list(rows)
    if not rows:
        return "not measured"
    above = [r for r in rows if r["slowdown"] > load_bench.TARGET]
    return (f"{len(above)} of {len(rows)} codecs above {load_bench.TARGET}x, the largest "
            f"{max(r['slowdown'] for r in rows):.2f}x")


def machine() -> dict:
    """Where and when ``make bench`` measured (``experiment.timing.provenance``): the CPU
    model, its cores, torch and its threads, the OpenMP wait policy, the date and the
    commit (with "+dirty" where tracked files differed from it)."""
    found = provenance()
    commit = found["git_commit"] or "unknown"
    return {"cpu": found["host_cpu"], "cores": found["cpu_count"], "threads": torch.get_num_threads(),
            "torch": torch.__version__, "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            "date": found["date"][:16].replace("T", " "),
            "commit": commit[:7] + ("+dirty" if commit.endswith("+dirty") else "")}


def measured(doc: dict, timing: str | None = None) -> str:
    """A table's provenance line: the machine, the date and commit, and how each time was
    taken (``timing``); empty for a document without them."""
    m = doc.get("machine", {})
    if "date" not in m:
        return ""
    policy = f"`OMP_WAIT_POLICY={m['omp_wait_policy']}`" if m.get("omp_wait_policy") else "OpenMP wait policy unset"
    how = f"; each time {timing}" if timing else ""
    return (f"\n<sub>{m['cpu']} ({m['cores']} cores, {m['threads']} torch threads), torch {m['torch']}, {policy}; "
            f"measured {m['date']} UTC at commit {m['commit']}{how}; `benchmarks/out/results.json`.</sub>\n")


def tables(doc: dict) -> dict[str, str]:
    """Markdown for each README block, from a results document."""
    out = {}
    codecs = doc["codecs"]
    p = codecs[0]["passes"]
    lines = [f"Passes over {codecs[0]['values']:,} float32 values, timed in turns: one add pass (the roofline) "
             f"{p['add'] * 1e3:.1f} ms; one copy into a reused buffer by torch {p['copy'] * 1e3:.1f} ms, streamed "
             f"(`kernels/stream.py`) {p['stream'] * 1e3:.1f} ms; fp32's kernels alone, in a row as a round trip runs "
             f"them (the copy into the message with its CRC, the copy out with the receiver's CRC), "
             f"{p['kernels'] * 1e3:.1f} ms: {p['add'] / p['kernels']:.3f} of the roofline. Each codec's encode and "
             f"decode are timed in turns with an add pass of their own (its column), the machine's bandwidth "
             f"drifting over minutes.\n",
             "| codec | payload bytes | framing bytes | encode ms | decode ms | add pass ms, in turns with them | "
             "fraction of roofline |",
             "|---|---|---|---|---|---|---|"]
    for r in codecs:
        lines.append(f"| {r['codec']} | {r['payload']:,} | {r['bytes'] - r['payload']} | {r['encode_s'] * 1e3:.1f} | "
                     f"{r['decode_s'] * 1e3:.1f} | {r['add_pass_s'] * 1e3:.1f} | "
                     f"{_target(r['fraction_of_roofline'], r['target'])} |")
    out["codecs"] = "\n".join(lines) + "\n" + measured(doc, codecs[0]["timing"])

    policy = doc.get("machine", {}).get("omp_wait_policy")
    default = {r["codec"]: r for r in doc.get("load_running_default", [])}
    lines = [f"OpenMP wait policy: {f'`OMP_WAIT_POLICY={policy}`' if policy else 'unset'}; the last three columns: "
             f"loads left running, in a process started with torch's default, unset "
             f"({_above(default.values())})."
             + (f" Each slowdown is the median of {doc['load'][0]['rounds']} rounds of measurements, with their range."
                if doc["load"] and doc["load"][0].get("rounds", 1) > 1 else "") + "\n",
             "| codec | loads paused between pairs: alone ms | with load ms | slowdown | loads left running: "
             "alone ms | with load ms | slowdown | torch's default policy: alone ms | with load ms | slowdown |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    running = {r["codec"]: r for r in doc.get("load_running", [])}

    def cells(c, target=True):
        if c is None:
            return " | | "
        shown = _target(c["slowdown"], c["target"], at_least=False) if target else f"{c['slowdown']:.3f}"
        if len(c.get("slowdowns", [])) > 1:  # the rounds' spread beside their median
            shown += f" ({min(c['slowdowns']):.2f}-{max(c['slowdowns']):.2f})"
        return f"{c['alone_s'] * 1e3:.1f} | {c['loaded_s'] * 1e3:.1f} | {shown}"
    for r in doc["load"]:
        lines.append(f"| {r['codec']} | {cells(r)} | {cells(running.get(r['codec']))} | "
                     f"{cells(default.get(r['codec']), target=False)} |")
    out["load"] = "\n".join(lines) + "\n" + measured(doc)

    lines = ["| codec | cores busy alone | cores busy with load | CPU time per call, with load / alone | "
             "slowdown |", "|---|---|---|---|---|"]
    for r in doc["load"]:
        if "cores_alone" in r:
            lines.append(f"| {r['codec']} | {r['cores_alone']:.2f} | {r['cores_loaded']:.2f} | {r['cpu_growth']:.2f} | "
                         f"{r['slowdown']:.3f} |")
    out["load_cores"] = "\n".join(lines) + "\n" + measured(doc)

    lines = ["| codec | payload bytes | encode ms | decode ms | add pass ms, in turns with them | fraction of roofline "
             "| x faster than a sorting top-k 1% | density | density error |", "|---|---|---|---|---|---|---|---|---|"]
    for r in doc["graddrop"]:
        t = r["target"] or {}
        lines.append(f"| {r['codec']} | {r['payload']:,} | {r['encode_s'] * 1e3:.1f} | {r['decode_s'] * 1e3:.1f} | "
                     f"{r['add_pass_s'] * 1e3:.1f} | {_target(r['fraction_of_roofline'], t.get('fraction_of_roofline'))} | "
                     f"{_target(r['speedup_vs_topk'], t.get('speedup_vs_topk'))} | {r['density']:.5f} | "
                     f"{_target(r['density_error'], t.get('density_error'), at_least=False)} |")
    out["graddrop"] = "\n".join(lines) + "\n" + measured(doc, doc["graddrop"][0].get("timing"))

    rep = doc["replicas"]
    out["replicas"] = "\n".join([
        f"K = {rep['workers']} in-process workers (batch {rep['batch_per_worker']} each) against one model on the same "
        f"{rep['workers'] * rep['batch_per_worker']} samples ({rep['one_model_s'] * 1e3:.1f} ms per step):\n",
        "| K-worker step | used by | ms | ratio to one model |", "|---|---|---|---|",
        f"| gradient step: K gradients written, then `p -= lr g` | gradient compression (dropping, MQGrad) | "
        f"{rep['gradient_step_s'] * 1e3:.1f} | {rep['ratio_gradient_step']:.2f} |",
        f"| local SGD step (`Replicas.sgd_step`): update fused into backward | local training (Oland & Raj, "
        f"EventGraD) | {rep['local_sgd_step_s'] * 1e3:.1f} | "
        f"{_target(rep['ratio_local_sgd_step'], rep['target'], at_least=False)} |"]) + "\n" \
        + measured(doc, rep.get("timing"))

    h = doc["oland_raj"]["huffman"]
    out["huffman"] = "\n".join([
        f"{h['symbols']:,} 8-bit symbols, entropy {h['entropy_bits']:.3f} bits:\n",
        "| coder | bits per symbol | encode M symbols/s, one core | decode M symbols/s, one core | "
        "encode, all cores | decode, all cores |", "|---|---|---|---|---|---|",
        f"| Huffman | {h['huffman_bits_per_symbol']:.3f} | {_target(h['encode_symbols_per_s'] / 1e6, h['encode_target'] / 1e6)}"
        f" | {_target(h['decode_symbols_per_s'] / 1e6, h['decode_target'] / 1e6)} | "
        f"{h['encode_all_cores_symbols_per_s'] / 1e6:.1f} | {h['decode_all_cores_symbols_per_s'] / 1e6:.1f} |",
        f"| ANS | {h['ans_bits_per_symbol']:.3f} | {h['ans_encode_symbols_per_s'] / 1e6:.1f} | "
        f"{h['ans_decode_symbols_per_s'] / 1e6:.1f} | {h['ans_encode_all_cores_symbols_per_s'] / 1e6:.1f} | "
        f"{h['ans_decode_all_cores_symbols_per_s'] / 1e6:.1f} |"]) + "\n" + measured(doc, roofline.timing(what="rounds"))

    lines = ["| N bits | quantize + pack ms | add pass ms, in turns with it | fraction of roofline |", "|---|---|---|---|"]
    for r in doc["oland_raj"]["quantize_pack"]:
        lines.append(f"| {r['bits']} | {r['seconds'] * 1e3:.1f} | {r['add_pass_s'] * 1e3:.1f} | "
                     f"{_target(r['fraction_of_roofline'], r['target'])} |")
    out["quantize_pack"] = "\n".join(lines) + "\n" + measured(doc, roofline.timing(what="rounds"))
    return out


# earlier paper-profile speed runs kept beside the last (``gpu-runs/bench_gpu.json``), oldest first
EARLIER_PAPER_RUNS = (("paper_previous", "GPU outs decoded on the host"),
                      ("paper_host_messages", "decoded on the GPU, messages in host memory"))


def library(r: dict) -> bool:
    """Whether a kept GPU row measured the library's one implementation (the device CRC's
    shifted block kernel, its blocks joined by a tree, the library's codec kernels), not a
    variant that earlier versions switched to (``variants_record``)."""
    return (r.get("kernel", "shifted") == "shifted" and r.get("crc_kernel", "shifted") == "shifted"
            and r.get("join", "tree") == "tree" and r.get("crc_join", "tree") == "tree"
            and r.get("kernels", "library") == "library" and "codec_kernel" not in r)


def _kept_table(rows: list[dict]) -> list[str]:
    """Markdown rows of messages kept on the device."""
    return ["| codec | values | payload bytes | encode ms | decode ms | add pass ms "
            "| fraction of the add pass |", "|---|---|---|---|---|---|---|",
            *(f"| {r['codec']} | {r['values']:,} | {r['payload']:,} | {r['encode_s'] * 1e3:.2f} | "
              f"{r['decode_s'] * 1e3:.2f} | {r['add_pass_s'] * 1e3:.3f} | "
              f"{_target(r['fraction_of_add_pass'], r['target'])} |" for r in rows)]


def _step_profile_lines(doc: dict, stamp) -> list[str]:
    """``gpu_bench``'s step profile, once a GPU has run it: per quickstart method, the three
    operators with the most host and device time per step, and the runtime's
    synchronizations and copies per step."""
    found = doc.get("step_profile")
    if not found:
        return []

    def top(ops: dict) -> str:
        return "; ".join(f"{name} {us:,.0f}" for name, us in list(ops.items())[:3])

    samples = (f", {found['train_samples']:,} training and {found['eval_samples']:,} test samples loaded"
               if "train_samples" in found else "")
    lines = ["", f"Where a quickstart step's time goes (paper profile, {found['steps']} steps per method{samples} under "
             f"`torch.profiler`; {stamp('step_profile')}), microseconds per step:\n",
             "| method | most host time (self) | most device time | stream synchronizations / step | copies / step |",
             "|---|---|---|---|---|"]
    for label, r in found["methods"].items():
        calls = r["runtime_calls_per_step"]
        lines.append(f"| {label} | {top(r['host_us_per_step'])} | {top(r['device_us_per_step'])} | "
                     f"{calls.get('cudaStreamSynchronize', 0):g} | {calls.get('cudaMemcpyAsync', 0):g} |")
    return lines


def _row_commits(doc: dict, part: str):
    """For a part whose rows runs at several commits measured (``gpu_bench.merged_rows``): a
    function giving each row's ", at COMMIT" (a row without one has the part's earlier
    stamp's), with " on GPU" where runs on several GPUs measured them, or "" for every row
    where one commit measured them all."""
    earlier = doc.get("earlier_stamp", {}).get(part, doc.get("measured", {}).get(part, {}))
    commit, device = earlier.get("commit", "?"), earlier.get("device", "?")
    commits = {r.get("commit", commit) for r in doc[part]}
    devices = {r.get("device", device) for r in doc[part]}
    return lambda r: (f", at {r.get('commit', commit)}" + (f" on {r.get('device', device)}" if len(devices) > 1 else "")
                      if len(commits) > 1 else "")


def _graphed_lines(doc: dict, stamp) -> list[str]:
    """``gpu_bench``'s graphed round trips (part 13), once a GPU has run them: each called
    (its checks read at each round trip's end) and replayed from a CUDA graph."""
    found = [r for r in doc.get("graphed", []) if library(r)]
    if not found:
        return []
    lines = ["", "Round trips inside a `wire.deferred_checks` block, which judges their checksums (and a range "
             "left on the device) at its end, called and replayed from a CUDA graph (`gpu_bench`'s part 13, "
             f"{stamp('graphed')}; the host's message and decoded values for the same tensor; a QSGD graph replays "
             "the noise key drawn on the host at its capture, so it is timed here, not trained with):\n",
             "| codec | values | called ms | fraction of the add pass | graph ms | fraction of the add pass"
             " | host's bytes | host's values |", "|---|---|---|---|---|---|---|---|"]
    for r in found:
        graph = (f"{r['graph_s'] * 1e3:.3f} | {_target(r['fraction_graph'], r['target'])}" if r.get("graph_s")
                 else f"failed: {r['graph_failure']} |" if "graph_failure" in r else "- | -")
        lines.append(f"| {r['codec']} | {r['values']:,} | {r['called_s'] * 1e3:.3f} | "
                     f"{_target(r['fraction_called'], r['target'])} | {graph} | {r.get('same_bytes', '-')} | "
                     f"{r['equal']} |")
    return lines


def _median(values) -> float:
    values = sorted(values)
    return values[len(values) // 2] if values else float("nan")


def _at(doc: dict, part: str, rows: list[dict] = ()) -> str:
    """Where a kept part (or its rows) was measured: commits and GPUs."""
    stamp = doc.get("earlier_stamp", {}).get(part) or doc.get("measured", {}).get(part, {})
    commits = sorted({r.get("commit", stamp.get("commit") or "?") for r in rows} or {stamp.get("commit") or "?"})
    devices = sorted({r.get("device", stamp.get("device", doc["device"]["name"])) for r in rows}
                     or {stamp.get("device", doc["device"]["name"])})
    return f"{', '.join(commits)}; {', '.join(devices)}"


def variants_record(doc: dict) -> str:
    """The record of the variants earlier versions of the engine switched between and that
    were deleted (git keeps their code): each variant's figure beside the library's in the
    same kept run, with the commit and GPU that measured it (``gpu-runs/bench_gpu.json``)."""
    rows = []  # (study, variant, measure, its figure, the library's figure, where)

    def add(study, variant, measure, value, library_value, where):
        rows.append(f"| {study} | {variant} | {measure} | {value:.3g} | "
                    f"{'' if library_value != library_value else f'{library_value:.3g}'} | {where} |")
    crc = [r for r in doc.get("device_crc", []) if "crc_s" in r]
    lib = {r["bytes"]: r["fraction_of_add_pass"] for r in crc if library(r)}
    for r in crc:
        if not library(r):
            add("device CRC", f"{r['kernel']} block kernel, {r['join']} join", f"fraction of the add pass, "
                f"{r['bytes']:,} bytes", r["fraction_of_add_pass"], lib.get(r["bytes"], float("nan")),
                _at(doc, "device_crc"))
    variants = [r for r in doc.get("crc_variants", []) if "seconds" in r]
    base = next((r["gb_per_s"] for r in variants if r["variant"].startswith("library")), float("nan"))
    for r in variants:
        if not r["variant"].startswith("library"):
            add("device CRC's block kernel", r["variant"], f"GB/s, {r['bytes']:,} bytes", r["gb_per_s"], base,
                _at(doc, "crc_variants"))
    kept = doc.get("device_messages", [])
    lib = _median(r["fraction_of_add_pass"] for r in kept if library(r))
    for kernel in sorted({r["crc_kernel"] for r in kept if not library(r)}):
        found = [r for r in kept if r["crc_kernel"] == kernel]
        add("messages kept on the device", f"{kernel} CRC kernel", f"median fraction of the add pass, {len(found)} rows",
            _median(r["fraction_of_add_pass"] for r in found), lib, _at(doc, "device_messages"))
    groups = {}
    for r in doc.get("codec_kernels", []) + doc.get("qsgd_one_pass", []):
        one_pass = ", codes written as checksummed" if r in doc.get("qsgd_one_pass", []) else ""
        label = f"{r['codec_kernel']} codec kernels, {r['crc_kernel']} CRC ({r.get('crc_join', 'tree')} join){one_pass}"
        groups.setdefault(label, []).append(r)
    for label, found in groups.items():
        add("codec kernels", label, f"median fraction of the add pass, {len(found)} rows",
            _median(r["fraction_of_add_pass"] for r in found), float("nan"),
            _at(doc, "qsgd_one_pass" if "checksummed" in label else "codec_kernels", found))
    for part in ("codec_profile", "host_profile"):
        found = doc.get(part, [])
        lib = {(r["codec"], r["values"]): r for r in found if library(r)}
        other = [r for r in found if not library(r) and (r["codec"], r["values"]) in lib]
        if other:
            add(part.replace("_", " "), f"{other[0]['kernels']} (Triton codec kernels, words CRC)",
                f"median encode + decode wall us, {len(other)} codecs",
                _median(r["encode_wall_us"] + r["decode_wall_us"] for r in other),
                _median(lib[(r["codec"], r["values"])]["encode_wall_us"] + lib[(r["codec"], r["values"])]["decode_wall_us"]
                        for r in other), _at(doc, part))
    fast, paper = doc.get("paper_kernels"), doc.get("paper", {})
    if fast:
        for group, net in (("gradient_dropping", "pcie3_x16"), ("quickstart", "ethernet_10g")):
            ratios = [r["images_per_s"][net] / paper[group][label]["images_per_s"][net]
                      for label, r in fast[group].items() if label in paper.get(group, {})]
            add("paper profiles on one GPU", f"{group.replace('_', ' ')}: Triton codec kernels, words CRC",
                f"median modelled images/s over the defaults', {net}, {len(ratios)} runs", _median(ratios), 1.0,
                _at(doc, "paper_kernels"))
    drops = doc.get("drop_variants", {})
    kernels = drops.get("kernels", [])
    lib = _median(r["count_s"] + r["compact_s"] for r in kernels if r["variant"] == "library")
    for variant in dict.fromkeys(r["variant"] for r in kernels if r["variant"] != "library"):
        found = [r for r in kernels if r["variant"] == variant]
        add("drop pass", variant, f"median count + compact ms, {len(found)} launches",
            _median((r["count_s"] + r["compact_s"]) * 1e3 for r in found), lib * 1e3, _at(doc, "drop_variants"))
    kth = drops.get("kth", [])
    lib = _median(r["seconds"] for r in kth if r["by"] == "topk")
    for by in dict.fromkeys(r["by"] for r in kth if r["by"] != "topk"):
        found = [r for r in kth if r["by"] == by]
        add("j-th smallest", f"by {by}", f"median ms, {len(found)} selections", _median(r["seconds"] * 1e3 for r in found),
            lib * 1e3, _at(doc, "drop_variants"))
    for r in drops.get("sample_draws", []):
        add("gradient dropping's sample", "drawn at each message's start", f"round trip ms, {r['values']:,} values, "
            f"{r['codec']}", r["at_start_s"] * 1e3, r["ahead_s"] * 1e3, _at(doc, "drop_variants"))
    shapes = doc.get("qsgd_variants", [])
    lib = {(r["bits"], r["norm"]): r for r in shapes if r["variant"] == "library"}
    for r in shapes:
        if r["variant"] != "library":
            base = lib.get((r["bits"], r["norm"]))
            add("QSGD's program shape", f"{r['values_per_program']:,} values, {r['warps']} warps; {r['bits']} bits, "
                f"{r['norm']} norm", "quantize + dequantize ms", (r["quantize_s"] + r["dequantize_s"]) * 1e3,
                (base["quantize_s"] + base["dequantize_s"]) * 1e3 if base else float("nan"), _at(doc, "qsgd_variants"))
    return ("| study | variant | measure | the variant's | the library's, same run | measured at; on |\n|---|---|---|---|---|---|\n"
            + "\n".join(rows) + "\n\n<sub>From `gpu-runs/bench_gpu.json`; the library's figure is from the same "
            "run, empty where that run did not measure it.</sub>\n")


def _host_profile_lines(doc: dict, stamp) -> list[str]:
    """``gpu_bench``'s host profile (part 12), once a GPU has run it: per codec,
    the wall time of a small message's encode and decode on the device (the host's time)
    and the three Python functions that take most of it with what they call, beyond the
    call itself (microseconds per call under ``cProfile``, which slows every call)."""
    found = [r for r in doc.get("host_profile", []) if library(r)]
    if not found:
        return []
    outer = ("<lambda>", ":encode", ":decode", "format.py", ":unpack", ":pack", ":_open")

    def top(profiled: dict) -> str:
        inner = [(name, us) for name, us in profiled["with_callees"].items() if not any(o in name for o in outer)]
        return "; ".join(f"{name} {us:,.0f}" for name, us in inner[:3])

    lines = ["", f"Where the host's time goes: encode and decode of {found[0]['values']:,} values kept on the device, "
             f"where the device's work is negligible (wall: best of {found[0]['calls']} calls, each ended by a "
             f"synchronize; functions with their callees under `cProfile`, microseconds per call; "
             f"{stamp('host_profile')}):\n",
             "| codec | encode wall | most time, with callees | decode wall | most time, with callees |",
             "|---|---|---|---|---|"]
    lines += [f"| {r['codec']} | {r['encode_wall_us']:,.0f} | {top(r['encode_python_us'])} | "
              f"{r['decode_wall_us']:,.0f} | {top(r['decode_python_us'])} |" for r in found]
    return lines


def gpu_tables(doc: dict) -> dict[str, str]:
    """Markdown for the README's GPU blocks, from ``gpu-runs/bench_gpu.json`` (``gpu_bench.py``)."""
    dev, stamps = doc["device"], doc.get("measured", {})

    def stamp(part: str) -> str:
        s = stamps.get(part, {})
        return (f"{s.get('device', dev['name'])}, torch {s.get('torch', dev['torch'])}, measured {s.get('date', '?')} "
                f"at commit {s.get('commit') or '?'}")

    out = {}
    same = doc["same_bytes"]
    rows = doc["codecs"]
    lines = [f"GPU messages equal the CPU's byte for byte (1M values, two steps, same seed) for "
             f"{sum(same.values())} of {len(same)} codecs"
             + ("" if all(same.values()) else f"; differ: {[k for k, v in same.items() if not v]}") + ".\n",
             "| codec | values | payload bytes | encode ms | decode ms | the message's two host copies alone, ms "
             "| add pass ms | fraction of the add pass |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['codec']} | {r['values']:,} | {r['payload']:,} | {r['encode_s'] * 1e3:.2f} | "
                     f"{r['decode_s'] * 1e3:.2f} | {r['host_copy_s'] * 1e3:.2f} | {r['add_pass_s'] * 1e3:.3f} | "
                     f"{_target(r['fraction_of_add_pass'], r['target'])} |")
    slower = sum(r["host_copy_s"] > r["add_pass_s"] for r in rows)
    lines += ["", f"Fractions of the add pass: {min(r['fraction_of_add_pass'] for r in rows):.3f} to "
              f"{max(r['fraction_of_add_pass'] for r in rows):.3f}; {sum(r['fraction_of_add_pass'] >= gpu_bench.TARGET for r in rows)}"
              f" of {len(rows)} rows meet {gpu_bench.TARGET}. The message's two host copies alone take longer than the whole "
              f"add pass in {slower} of {len(rows)} rows.", "", f"<sub>{stamp('codecs')}.</sub>"]
    for r in filter(library, doc.get("device_crc", [])):  # kernels/triton_crc.py, once a GPU has run it
        if "error" in r:
            lines += ["", f"Device CRC-32C of {r['bytes']:,} bytes ({stamp('device_crc')}): failed: {r['error']}"]
            continue
        lines += ["", f"Device CRC-32C of {r['bytes']:,} bytes (`kernels/triton_crc.py`, {stamp('device_crc')}): "
                  f"{r['crc_s'] * 1e3:.3f} ms, {r['gb_per_s']:.0f} GB/s, {r['fraction_of_add_pass']:.3f} of the add pass; "
                  f"equal to the host's: {r['equal_to_host']}."]
    kept = [r for r in doc.get("device_messages", []) if library(r)]  # wire/tensor_message.py
    if kept:
        lines += ["", f"Messages kept on the device (`wire/tensor_message.py`, {stamp('device_messages')}), equal to "
                  f"the host's message byte for byte in {sum(r['equal_to_host'] for r in kept)} of {len(kept)} rows:\n",
                  *_kept_table(kept)]
        lines += ["", f"{sum(r['fraction_of_add_pass'] >= gpu_bench.TARGET for r in kept)} of {len(kept)} rows meet "
                  f"{gpu_bench.TARGET} (best {max(r['fraction_of_add_pass'] for r in kept):.3f}), with the message kept "
                  "on the device."]
    overhead = doc.get("message_overhead", [])
    if overhead:
        def count(calls: dict, *names: str) -> str:
            return f"{sum(calls.get(n, 0) for n in names):g}"
        lines += ["", f"What one small message costs (message tensors on the device; {stamp('message_overhead')}): "
                  "seconds per call over 50 calls in a row, and the CUDA runtime's calls per message under "
                  "`torch.profiler`:\n",
                  "| codec | values | encode us | decode us | kernel launches, encode / decode | "
                  "stream synchronizations, encode / decode | copies, encode / decode |", "|---|---|---|---|---|---|---|"]
        for r in overhead:
            e, d = r["encode_calls"], r["decode_calls"]
            launches, syncs, copies = ("cudaLaunchKernel", "cuLaunchKernelEx"), ("cudaStreamSynchronize",), \
                ("cudaMemcpyAsync",)
            lines.append(f"| {r['codec']} | {r['values']:,} | {r['encode_s_per_call'] * 1e6:,.0f} | "
                         f"{r['decode_s_per_call'] * 1e6:,.0f} | {count(e, *launches)} / {count(d, *launches)} | "
                         f"{count(e, *syncs)} / {count(d, *syncs)} | {count(e, *copies)} / {count(d, *copies)} |")
    lines += _step_profile_lines(doc, stamp)
    profiled = [r for r in doc.get("codec_profile", []) if library(r)]  # gpu_bench part 11
    if profiled:
        def kernels(found: dict) -> str:
            return "; ".join(f"{name} {us:,.0f}" for name, (us, _) in list(found.items())[:3])
        sizes = sorted({r["values"] for r in profiled})  # one size in the header, else in each row
        lines += ["", f"Where an encode and a decode of "
                  f"{f'{sizes[0]:,} values' if len(sizes) == 1 else 'the values in each row'} spend their time "
                  f"(`torch.profiler`, microseconds per call; wall: best call, ended by a synchronize; returned: "
                  f"best time until the call returned to the host, begun on an idle device, '-' where not measured; "
                  f"device: the kernels' and copies' own time, '<' where a run counted a torch operation's kernels "
                  f"twice, so the figure is an upper bound; "
                  f"{stamp('codec_profile')}):\n",
                  "| codec | encode wall | returned | device | its largest kernels | syncs | "
                  "decode wall | returned | device | its largest kernels | syncs |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]

        def on_device(r: dict, w: str) -> str:  # the kernels' own time; an upper bound (marked) from earlier runs
            return f"{r[f'{w}_kernel_us']:,.0f}" if f"{w}_kernel_us" in r else f"<{r[f'{w}_device_us']:,.0f}"

        def returned(r: dict, w: str) -> str:  # the time until the call returned to the host, where measured
            return f"{r[f'{w}_host_return_us']:,.0f}" if f"{w}_host_return_us" in r else "-"

        def syncs(found: dict) -> str:
            return f"{sum(v for k, v in found.items() if 'Synchronize' in k):g}"

        at = _row_commits(doc, "codec_profile")

        def codec(r: dict) -> str:
            return (r["codec"] if len(sizes) == 1 else f"{r['codec']}, {r['values']:,}") + at(r)

        lines += [f"| {codec(r)} | "
                  + " | ".join(f"{r[f'{w}_wall_us']:,.0f} | {returned(r, w)} | {on_device(r, w)} | "
                               f"{kernels(r[f'{w}_kernels'])} | "
                               f"{syncs(r[f'{w}_runtime_calls'])}" for w in ("encode", "decode")) + " |"
                  for r in profiled]
    lines += _host_profile_lines(doc, stamp)
    lines += _graphed_lines(doc, stamp)
    out["gpu_codecs"] = "\n".join(lines) + "\n\n<sub>All from `gpu-runs/bench_gpu.json`.</sub>\n"
    out["gpu_variants"] = variants_record(doc)

    paper = doc["paper"]
    nets = list(next(iter(paper["gradient_dropping"].values()))["images_per_s"])
    earlier = [(key, what, stamps.get(key, {}).get("commit", "?"), doc[key]) for key, what in EARLIER_PAPER_RUNS
               if key in doc]
    lines = [f"Gradient dropping, paper profile (3 x 4096, 4 nodes, batch 40), {paper['steps']} steps per ratio:\n",
             "| dropped | paper images/s | notebook run before the device paths, pcie3_x16 | "
             + "".join(f"at {commit}, {what}, pcie3_x16 | " for _, what, commit, _ in earlier)
             + " | ".join(f"modelled {n}" for n in nets)
             + " | compute ms / step | codec ms / step | codec share of compute |",
             "|---|---|---|" + "---|" * len(earlier) + "---|" * len(nets) + "---|---|---|"]
    for ratio, r in paper["gradient_dropping"].items():
        before = [run["gradient_dropping"].get(ratio, {}).get("images_per_s", {}).get("pcie3_x16", float("nan"))
                  for *_, run in earlier]
        lines.append(f"| {ratio} | {r['paper_images_per_s']:,} | {BEFORE_DEVICE_PATHS.get(ratio, float('nan')):,.1f} | "
                     + "".join(f"{b:,.1f} | " for b in before)
                     + " | ".join(f"{r['images_per_s'][n]:,.1f}" for n in nets)
                     + f" | {r['compute_s_per_step'] * 1e3:.1f} | {r['codec_s_per_step'] * 1e3:.1f} | "
                     f"{r['codec_share_of_compute']:.3f} |")
    second = doc.get("paper_second_run")
    if second:
        rates = [r["images_per_s"]["pcie3_x16"] for r in second["gradient_dropping"].values()]
        lines += ["", f"A second run of the same speed runs ({stamp('paper_second_run')}), after `message_overhead` had "
                  f"run `torch.profiler` in the same process, modelled {min(rates):,.0f} to {max(rates):,.0f} images/s "
                  "on pcie3_x16, with compute per step "
                  + ", ".join(f"{r['compute_s_per_step'] * 1e3:.1f}" for r in second["gradient_dropping"].values())
                  + " ms; `gpu_bench` now runs that part last."]
    shares = [r["codec_share_of_compute"] for r in paper["gradient_dropping"].values()]
    lines += ["", f"The codecs are {min(shares):.0%} to {max(shares):.0%} of each step's compute in the last run "
              f"(messages {'kept on the GPU' if 'paper_host_messages' in doc else 'in host memory'})."]
    quick = [(what, commit, run["quickstart"]) for _, what, commit, run in earlier if "quickstart" in run]
    lines += ["", f"Quickstart, paper profile (784-1024-1024-10, 4 workers, batch 32), {paper['steps']} steps:\n",
              "| method | " + "".join(f"at {commit}, {what}, ethernet_10g | " for what, commit, _ in quick)
              + "modelled images/s, ethernet_10g | compute ms / step | codec ms / step | codec share of compute |",
              "|---|" + "---|" * len(quick) + "---|---|---|---|"]
    for label, r in paper["quickstart"].items():
        before = "".join(f"{q.get(label, {}).get('images_per_s', {}).get('ethernet_10g', float('nan')):,.0f} | "
                         for *_, q in quick)
        lines.append(f"| {label} | {before}{r['images_per_s']['ethernet_10g']:,.0f} | {r['compute_s_per_step'] * 1e3:.1f} | "
                     f"{r['codec_s_per_step'] * 1e3:.1f} | {r['codec_share_of_compute']:.3f} |")
    out["gpu_paper"] = "\n".join(lines) + f"\n\n<sub>{stamp('paper')}; `gpu-runs/bench_gpu.json`.</sub>\n"

    lines = ["| codec | processes | backend | steps | exit | test accuracy | bytes sent | median encode ms | "
             "median exchange ms | median decode ms |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["hook_nccl"]:
        t = r["median_step_seconds"]
        ms = [f"{t[k] * 1e3:.2f}" if t.get(k) is not None else "" for k in ("encode", "exchange", "decode")]
        accuracy = f"{r['test_accuracy']:.4f}" if r["test_accuracy"] is not None else ""
        sent = f"{r['sent_bytes']:,}" if r["sent_bytes"] is not None else ""
        lines.append(f"| {r['codec']} | {r['processes']} | {r['backend']} | {r['steps']} | {r['returncode']} | "
                     f"{accuracy} | {sent} | {' | '.join(ms)} |")
    out["gpu_hook"] = "\n".join(lines) + f"\n\n<sub>{stamp('hook_nccl')}; `gpu-runs/bench_gpu.json`.</sub>\n"
    return out


WHAT_IS_PASSIVE = {"default": "nothing (torch's default: spin, then sleep)", "passive": "the whole process",
                   "torch_only": "torch's libgomp only (set at its import, cleared before numba's threads start)",
                   "numba_only": "the second libgomp numba loads, on which its kernels do not run"}


def wait_policy_table(doc: dict) -> dict[str, str]:
    """The README block for ``wait_policy.py``'s ablation, from its kept results."""
    lines = [f"| `OMP_WAIT_POLICY=PASSIVE` for | runs | codecs above {doc['target']}x in each run | largest slowdown |",
             "|---|---|---|---|"]
    for setting, s in doc["summary"].items():
        lines.append(f"| {WHAT_IS_PASSIVE[setting]} | {s['runs']} | {', '.join(map(str, s['above_target']))} | "
                     f"{s['largest_slowdown']:.2f}x |")
    return {"wait_policy": "\n".join(lines) + f"\n\n<sub>{doc['date']}, {doc['commit']}, {doc['cpu']} "
            f"({doc['cores']} cores); `benchmarks/wait_policy.py`, results in `benchmarks/wait_policy.json`.</sub>\n"}


def audit_table(doc: dict) -> dict[str, str]:
    """The README block for ``device_audit.py``'s counts, from its kept results."""
    name = doc["path"]
    lines = ["| codec | message | encode | decode | encode inside a `wire.deferred_checks()` block | decode inside it "
             "| the block's end |", "|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        if r["size"] in ("small", "large"):
            counts = r[name]
            lines.append(f"| {r['codec']} | {r['values']:,} values ({r['size']}) | "
                         + " | ".join(_cell(counts[part]) for part in ("encode", "decode", "encode_deferred",
                                                                       "decode_deferred", "block_end")) + " |")
    by = {(r["codec"], r["size"]): r for r in doc["rows"]}
    traffic = ["| codec | encode + decode bytes per value | at most this fraction of the add pass | the same inside a "
               "`wire.deferred_checks()` block | at most |", "|---|---|---|---|---|"]
    for codec in dict.fromkeys(r["codec"] for r in doc["rows"]):
        large, larger = by[(codec, "large")], by[(codec, "larger")]
        cells = []
        for parts in (("encode", "decode"), ("encode_deferred", "decode_deferred")):
            per = [(larger[name][part]["bytes"] - large[name][part]["bytes"]) / (larger["values"] - large["values"])
                   for part in parts]
            cells.append(f"{per[0]:.1f} + {per[1]:.1f} | {12 / sum(per):.2f}")
        traffic.append(f"| {codec} | " + " | ".join(cells) + " |")
    return {"device_audit": "Each cell: torch operations + Triton kernels (the launches) / waits for the device "
            "(host reads of its values, and blocking copies to it; none of the latter is left). The block's end judges "
            "every checksum (and a range left on the device) in one copy.\n\n" + "\n".join(lines)
            + "\n\nBytes the launches touch per value (the difference between 65,536 and 32,768 values), and the "
            "fraction of the add pass (12 bytes per value) a codec could reach at the add pass's bandwidth:\n\n"
            + "\n".join(traffic) + f"\n\n<sub>{doc['date']}, {doc['commit']}; "
            "`benchmarks/device_audit.py`, results in `benchmarks/device_audit.json`.</sub>\n"}


def registers_table(doc: dict) -> dict[str, str]:
    """The README block for ``kernel_registers.py``'s compiled kernels, from its kept results."""
    return {"kernel_registers": kernel_registers.table(doc["rows"], doc["arch"]) + f"\n\n<sub>{doc['date']}, "
            f"{doc['commit']}; `benchmarks/kernel_registers.py`, results in `benchmarks/kernel_registers.json`.</sub>\n"}


def _kept_tables() -> dict[str, str]:
    """The blocks of the results kept in ``benchmarks/`` (counted or compiled, not timed here)."""
    blocks = {}
    if AUDIT_RESULTS.exists():
        blocks.update(audit_table(json.loads(AUDIT_RESULTS.read_text())))
    if REGISTERS_RESULTS.exists():
        blocks.update(registers_table(json.loads(REGISTERS_RESULTS.read_text())))
    return blocks


def _cell(counts: dict) -> str:
    return f"{counts['ops']} + {counts['triton']} / {counts['reads']}"


def update_readme(text: str, blocks: dict[str, str]) -> str:
    return BLOCK.sub(lambda m: m.group(1) + blocks[m.group(2)] + m.group(4) if m.group(2) in blocks else m.group(0),
                     text)


def main(argv: list[str]) -> int:
    out = Path(__file__).parent / "out"
    out.mkdir(exist_ok=True)
    if "--gpu-tables" in argv:  # only the README's GPU blocks, from the kept results
        blocks = {**gpu_tables(json.loads(GPU_RESULTS.read_text())), **_kept_tables()}
        README.write_text(update_readme(README.read_text(), blocks))
        return 0
    where = machine()  # before this run rewrites its kept results
    if gpu_bench.available():  # the GPU part updates gpu-runs/bench_gpu.json; without a GPU it is kept
        gpu_bench.main([str(GPU_RESULTS)])
    # the device paths' launches and host reads, counted under Triton's interpreter (a process of its own)
    subprocess.run([sys.executable, str(Path(__file__).with_name("device_audit.py")), str(AUDIT_RESULTS)], check=True)
    # every Triton kernel compiled for an H100 (Triton's own ptxas), where this Triton has its CUDA tools
    subprocess.run([sys.executable, str(Path(__file__).with_name("kernel_registers.py")),
                    f"--json={REGISTERS_RESULTS}"], check=True, stdout=subprocess.DEVNULL)
    doc = {"machine": where,
           "codecs": codecs_bench.run(), "graddrop": graddrop_bench.run(), "replicas": replicas_bench.run(),
           "oland_raj": oland_raj_bench.run(), "load": load_bench.run(), "load_running": load_bench.run_continuous(),
           "load_running_default": wait_policy.measure("default", load_bench.N, 7, load_bench.ROUNDS)}
    (out / "results.json").write_text(json.dumps(doc, indent=1))
    blocks = tables(doc)
    if GPU_RESULTS.exists():
        blocks.update(gpu_tables(json.loads(GPU_RESULTS.read_text())))
    if WAIT_POLICY_RESULTS.exists():
        blocks.update(wait_policy_table(json.loads(WAIT_POLICY_RESULTS.read_text())))
    blocks.update(_kept_tables())
    for name, table in blocks.items():
        print(f"\n## {name}\n\n{table}")
    if "--no-readme" not in argv:
        README.write_text(update_readme(README.read_text(), blocks))
        print(f"{README.relative_to(README.parents[3])} benchmark tables rewritten from {out / 'results.json'}")
    for mode in ("load", "load_running"):  # load_running_default shows torch's default policy; no target
        missed = [r["codec"] for r in doc[mode] if not r["met"]]
        if missed:
            print(f"slowdown under load ({mode}) above {load_bench.TARGET}x: {missed}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
