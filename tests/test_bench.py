"""``make bench`` end to end at a small size: every registered codec is benchmarked under
load, and every README benchmark block gets a table."""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

import pytest

from thinwire.codecs import CODECS
from thinwire.codecs.kernels import triton_crc, triton_uniform

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import codecs_bench  # noqa: E402
import gpu_bench  # noqa: E402
import graddrop_bench  # noqa: E402
import load_bench  # noqa: E402
import oland_raj_bench  # noqa: E402
import replicas_bench  # noqa: E402
import roofline  # noqa: E402
import run  # noqa: E402
import wait_policy  # noqa: E402


def test_the_load_benchmark_covers_every_registered_codec():
    assert load_bench.covered() == set(CODECS)


@pytest.fixture(scope="module")
def small_doc():
    return {"machine": run.machine(), "codecs": codecs_bench.run(n=20_000), "graddrop": graddrop_bench.run(n=200_000),
            "replicas": replicas_bench.run(), "oland_raj": oland_raj_bench.run(n=20_000),
            "load": load_bench.run(n=20_000, repeats=1, rounds=2),
            "load_running": load_bench.run_continuous(n=20_000, repeats=1, rounds=2),
            "load_running_default": wait_policy.measure("default", 20_000, 1)}


def test_every_readme_block_is_written_from_a_run(small_doc):
    blocks = {**run.tables(small_doc), **run.gpu_tables(json.loads(run.GPU_RESULTS.read_text())),
              **run.wait_policy_table(json.loads(run.WAIT_POLICY_RESULTS.read_text())),
              **run.audit_table(json.loads(run.AUDIT_RESULTS.read_text())),
              **run.registers_table(json.loads(run.REGISTERS_RESULTS.read_text()))}
    readme = run.README.read_text()
    names = re.findall(r"<!-- bench: (\w+) -->", readme)
    assert sorted(names) == sorted(blocks)
    text = run.update_readme(readme, blocks)
    for name, table in blocks.items():
        assert f"<!-- bench: {name} -->\n{table}<!-- /bench -->" in text
    assert [r["codec"] for r in small_doc["load"]] == load_bench.SPECS
    assert all(r["alone_s"] > 0 and r["loaded_s"] > 0 for r in small_doc["load"])
    assert [r["codec"] for r in small_doc["load_running"]] == load_bench.SPECS
    assert all(r["alone_s"] > 0 and r["loaded_s"] > 0 for r in small_doc["load_running"])
    for row in small_doc["load"] + small_doc["load_running"]:  # the slowdown is the rounds' median
        assert row["rounds"] == len(row["slowdowns"]) == 2
        assert row["slowdown"] == pytest.approx(sum(row["slowdowns"]) / 2)
        assert row["met"] == (row["slowdown"] <= load_bench.TARGET)
    assert [r["codec"] for r in small_doc["load_running_default"]] == load_bench.SPECS
    assert "torch's default policy" in blocks["load"]
    for name in ("codecs", "graddrop", "replicas", "huffman", "quantize_pack"):  # with their provenance
        sub = blocks[name].splitlines()[-1]
        assert sub.startswith("<sub>") and small_doc["machine"]["commit"] in sub and "each time the median of" in sub
    assert blocks["load"].splitlines()[-1].startswith("<sub>")


def test_the_cpu_benchmarks_report_the_median_call_after_a_warm_up(monkeypatch):
    durations = iter([50.0, 40.0, 3.0, 1.0, 2.0, 9.0, 1.5])  # two warm-up calls, then five timed
    now = [0.0]

    def call():
        now[0] += next(durations)
    monkeypatch.setattr(roofline, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))
    assert roofline.median_seconds(call, repeats=5, warmup=2) == 2.0
    assert roofline.timing(5, 2) == "the median of 5 calls after 2 warm-up calls"


def test_the_wait_policy_ablation_runs_and_its_kept_results_are_whole():
    """Each setting's child process runs the benchmark; the kept results cover every
    setting with the same number of runs, each run every codec."""
    rows = wait_policy.measure("numba_only", 20_000, 1)
    assert [r["codec"] for r in rows] == load_bench.SPECS
    doc = json.loads(run.WAIT_POLICY_RESULTS.read_text())
    assert list(doc["runs"]) == list(wait_policy.SETTINGS) == list(doc["summary"])
    assert len({len(runs) for runs in doc["runs"].values()}) == 1
    assert all([r["codec"] for r in one] == load_bench.SPECS for runs in doc["runs"].values() for one in runs)
    assert doc["summary"] == wait_policy.summary(doc["runs"])


def test_the_gpu_benchmark_runs_its_codecs_through_the_device_paths_on_the_cpu(monkeypatch):
    """``gpu_bench --dry-run``'s codec part: every spec's row, its message compared with the
    host kernels' byte for byte (the device paths forced on CPU tensors)."""
    monkeypatch.setattr(gpu_bench, "DEVICE", "cpu")
    rows = gpu_bench.codecs(sizes=(20_000,))
    assert [r["codec"] for r in rows] == gpu_bench.SPECS
    assert all(r["encode_s"] > 0 and r["decode_s"] > 0 and 0 < r["payload"] < r["bytes"] for r in rows)
    assert all(gpu_bench.same_bytes(spec, n=5_000) for spec in [*gpu_bench.SPECS, *gpu_bench.SAME_BYTES_ALSO])
    kept = gpu_bench.device_messages(sizes=(20_000,))  # part 5: message tensors, once per CRC kernel
    kernels = triton_crc.KERNELS
    assert [r["codec"] for r in kept] == gpu_bench.SPECS * len(kernels) and all(r["equal_to_host"] for r in kept)
    assert [r["crc_kernel"] for r in kept] == [k for k in sorted(kernels, key=lambda k: k == triton_crc.KERNEL)
                                               for _ in gpu_bench.SPECS]
    assert [r["bytes"] for r in kept] == [r["bytes"] for r in rows] * len(kernels)
    assert triton_crc.KERNEL == "shifted"  # each kernel's pass restores the library's
    doc = json.loads(run.GPU_RESULTS.read_text())
    tables = run.gpu_tables({**doc, "device_messages": kept})
    n = 12 * len(kernels)
    assert "Messages kept on the device" in tables["gpu_codecs"] and f"{n} of {n} rows;" in tables["gpu_codecs"]
    assert all(re.search(rf"with the {k} kernel, \d+ of 12 rows meet 0\.5", tables["gpu_codecs"]) for k in kernels)
    kept_so_far = []
    monkeypatch.setattr(gpu_bench, "CHECKPOINT", kept_so_far.append)  # as ``run`` sets it: the rows so far
    kernel_rows = gpu_bench.codec_kernels(sizes=(20_000,))  # part 8: torch's operations, then the Triton kernels
    assert [len(rows) for rows in kept_so_far] == list(range(1, len(kernel_rows) + 1))
    assert kept_so_far[-1] == kernel_rows
    assert [(r["codec_kernel"], r["crc_kernel"], r["crc_join"], r["codec"]) for r in kernel_rows] == [
        (k, crc, "tree", spec) for k in triton_uniform.KERNELS for crc in gpu_bench.KERNEL_CRCS
        for spec in gpu_bench.KERNEL_SPECS]
    assert all(r["equal_to_host"] for r in kernel_rows) and triton_uniform.KERNEL == "triton"
    assert "Triton codec kernels" in run.gpu_tables({**doc, "codec_kernels": kernel_rows})["gpu_codecs"]
    profiled = gpu_bench.step_profile(steps=2, profile="smoke")  # part 9: what a quickstart step spends
    assert len(profiled["methods"]) == 3 and all(r["host_us_per_step"] for r in profiled["methods"].values())
    table = run.gpu_tables({**doc, "step_profile": profiled})["gpu_codecs"]
    assert "Where a quickstart step's time goes" in table and all(f"| {m} |" in table for m in profiled["methods"])
    specs = ("quantize(bits=8)", "colquant(bits=8)")  # part 11: each codec with both sets of kernels
    rows = gpu_bench.codec_profile(2_000, specs=specs, calls=1)
    assert [(r["kernels"], r["codec"]) for r in rows] == [(k, s) for k in ("library", "triton, words") for s in specs]
    assert all(r["encode_host_us"] > 0 and r["decode_host_us"] > 0 and r["encode_wall_us"] > 0 and r["encode_python_us"]
               for r in rows)
    assert triton_uniform.KERNEL == "triton" and triton_crc.KERNEL == "shifted"  # fast_kernels restores them
    table = run.gpu_tables({**doc, "codec_profile": rows})["gpu_codecs"]
    assert "spend their time" in table and "| colquant(bits=8) | triton, words |" in table
    table = run.gpu_tables({**doc, "codec_profile": [*rows, {**rows[0], "values": 4_000}]})["gpu_codecs"]
    assert "| quantize(bits=8), 2,000 | library |" in table and "| quantize(bits=8), 4,000 | library |" in table
    rows = gpu_bench.graphed(sizes=(3_000,))  # part 13: called only (no graph on the CPU)
    assert [r["codec"] for r in rows] == list(gpu_bench.GRAPH_SPECS)
    assert all(r["equal"] and r["same_bytes"] and r["called_s"] > 0 and r["graph_s"] is None for r in rows)
    table = run.gpu_tables({**doc, "graphed": rows})["gpu_codecs"]
    assert "replayed from a CUDA graph" in table and "| bf16 | 3,000 | shifted |" in table
    monkeypatch.setattr(gpu_bench, "GRAPH_CRCS", ("words", "shifted"))  # --graph-crcs=words;shifted
    rows = gpu_bench.graphed(sizes=(3_000,), specs=("fp16", "quantize(bits=8)"))
    assert [(r["crc_kernel"], r["codec"]) for r in rows] == [(c, s) for c in ("words", "shifted")
                                                              for s in ("fp16", "quantize(bits=8)")]
    assert all(r["equal"] and r["same_bytes"] for r in rows) and triton_crc.KERNEL == "shifted"


def test_gradient_dropping_is_timed_with_its_sample_drawn_ahead_on_a_thread_inline_and_not_with_the_same_messages(
        monkeypatch):
    """``drop_variants.sample_draws`` (part 17) on the CPU: the three settings send the same
    messages, every message after the first takes the draws made ahead where they are made
    ahead, and the library's settings are restored; the table shows part 14's earlier rows
    (drawn in the caller's thread) until part 17 has run."""
    import drop_variants
    from thinwire.codecs.sparsify import draws_ahead, graddrop
    monkeypatch.setattr(gpu_bench, "DEVICE", "cpu")
    rows = drop_variants.sample_draws(20_000, lambda fn: gpu_bench.device_seconds(fn, 2, 1), "cpu", rounds=2)
    assert [r["codec"] for r in rows] == ["graddrop(ratio=0.99)", "graddrop(ratio=0.99, bits=1)"]
    assert all(r["same_messages"] and r["taken"] == r["taken_inline"] == 2 * 3 - 1 and not r["drew_ahead_at_start"]
               and min(r["ahead_s"], r["ahead_inline_s"], r["at_start_s"]) > 0 for r in rows), rows
    assert graddrop.DRAW_AHEAD is True and draws_ahead.THREAD is True
    doc = json.loads(run.GPU_RESULTS.read_text())
    earlier = [r for r in doc["drop_variants"]["sample_draws"] if r["codec"] == "graddrop(ratio=0.99)"][0]
    table = run.gpu_tables({k: v for k, v in doc.items() if k != "sample_draws"})["gpu_codecs"]
    assert f"| graddrop(ratio=0.99) | 250,000,000 | – | {earlier['ahead_s'] * 1e3:.3f} |" in table
    table = run.gpu_tables({**doc, "sample_draws": rows})["gpu_codecs"]
    assert (f"| graddrop(ratio=0.99, bits=1) | 20,000 | {rows[1]['ahead_s'] * 1e3:.3f} | "
            f"{rows[1]['ahead_inline_s'] * 1e3:.3f} | {rows[1]['at_start_s'] * 1e3:.3f} | 5 | True |") in table


def test_a_partial_kernel_run_replaces_only_the_rows_it_measured(monkeypatch):
    """``--kernel-specs`` / ``--kernel-crcs`` runs of part 8 keep the rows they did not measure."""
    monkeypatch.setattr(gpu_bench, "DEVICE", gpu_bench.DEVICE)  # what a dry run's main sets, restored after
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    key = gpu_bench.ROW_KEYS["codec_kernels"]
    row = dict(codec_kernel="torch", crc_kernel="words", codec="quantize(bits=8)", values=25, encode_s=1.0)
    before = [row, {**row, "codec": "fp32"}]
    now = {**row, "crc_join": "tree", "encode_s": 0.5}  # a row kept from before the join was a key: the tree's
    stamp = {"commit": "abc", "date": "d", "device": "gpu"}  # each row measured now names its commit and GPU
    merged = gpu_bench.merged_rows(before, [now], stamp, key)
    assert merged == [{**row, "codec": "fp32"}, {**now, **stamp}]
    folded = {**now, "crc_join": "fold"}
    merged = gpu_bench.merged_rows(before, [folded], stamp, key)
    assert merged == [*before, {**folded, **stamp}]
    with pytest.raises(SystemExit, match="--kernel-specs=qsgd is not allowed"):
        gpu_bench.main(["--dry-run", "--only=codec_kernels", "--kernel-specs=qsgd"])
    with pytest.raises(SystemExit, match="--kernel-crcs=crc64 is not allowed"):
        gpu_bench.main(["--dry-run", "--only=codec_kernels", "--kernel-crcs=crc64"])
    with pytest.raises(SystemExit, match="--crc-joins=tree;zip is not allowed"):
        gpu_bench.main(["--dry-run", "--only=codec_kernels", "--crc-joins=tree;zip"])
    with pytest.raises(SystemExit, match="--graph-crcs=crc64 is not allowed"):
        gpu_bench.main(["--dry-run", "--only=graphed", "--graph-crcs=crc64"])
    with pytest.raises(SystemExit, match="--profile-values=25M is not allowed: give positive integers"):
        gpu_bench.main(["--dry-run", "--only=codec_profile", "--profile-values=25M"])


def test_qsgds_one_pass_is_shown_beside_its_two_passes():
    """The rows measured with QSGD's one pass (``qsgd_one_pass``) beside part 8's two-pass rows
    of the same codec and size, '-' where part 8 has none."""
    base = dict(codec_kernel="triton", crc_kernel="words", crc_join="fold", values=9, encode_s=1e-3, decode_s=2e-3,
                fraction_of_add_pass=0.25, commit="two", device="G")
    doc = {"codec_kernels": [{**base, "codec": "qsgd(bits=8)"}],
           "qsgd_one_pass": [{**base, "codec": "qsgd(bits=8)", "commit": "one", "encode_s": 3e-3},
                             {**base, "codec": "qsgd(bits=4)", "commit": "one"}]}
    lines = run._qsgd_one_pass_lines(doc)
    assert "| qsgd(bits=8) | 9 | 3.00 | 2.00 | 0.250 | one, G | 1.00 | 2.00 | 0.250 | two, G |" in lines, lines
    assert "| qsgd(bits=4) | 9 | 1.00 | 2.00 | 0.250 | one, G | - | - | - | not measured |" in lines, lines
    assert run._qsgd_one_pass_lines({}) == []


def test_rows_measured_on_several_gpus_name_theirs():
    """Part 8's rows from runs at several commits name their commit, and their GPU where
    runs on several GPUs measured them (a row without one has the part's earlier stamp's)."""
    doc = {"measured": {"codec_kernels": {"commit": "new", "device": "B"}},
           "earlier_stamp": {"codec_kernels": {"commit": "old", "device": "A"}},
           "codec_kernels": [{"codec": "x"}, {"codec": "y", "commit": "new", "device": "B"}]}
    at = run._row_commits(doc, "codec_kernels")
    assert [at(r) for r in doc["codec_kernels"]] == [", at old on A", ", at new on B"]
    doc["codec_kernels"][1]["device"] = "A"
    at = run._row_commits(doc, "codec_kernels")
    assert [at(r) for r in doc["codec_kernels"]] == [", at old", ", at new"]
    doc["codec_kernels"][1]["commit"] = "old"
    assert run._row_commits(doc, "codec_kernels")(doc["codec_kernels"][0]) == ""


def test_a_part_cut_short_keeps_the_rows_it_measured(monkeypatch):
    """A part of ``ROW_KEYS`` saves each row as it is measured (``gpu_bench.checkpoint``), so a
    run that fails (or is stopped) within the part keeps those rows beside the earlier ones,
    the part marked partial; once the part ends the mark goes."""
    monkeypatch.setattr(gpu_bench, "DEVICE", "cpu")
    key = gpu_bench.ROW_KEYS["graphed"]
    earlier = {"crc_kernel": "words", "codec": "fp32", "values": 9, "called_s": 1.0}
    saved = []

    def cut_short(sizes=None):
        gpu_bench.checkpoint([{**earlier, "codec": "fp16", "called_s": 2.0}])
        raise RuntimeError("stopped")
    monkeypatch.setattr(gpu_bench, "graphed", cut_short)
    doc = gpu_bench.run(lambda d: saved.append(json.loads(json.dumps(d))), {"graphed": [earlier]}, ["graphed"])
    assert [r["codec"] for r in saved[0]["graphed"]] == ["fp32", "fp16"] and "graphed" in saved[0]["partial"]
    assert [r["codec"] for r in doc["graphed"]] == ["fp32", "fp16"] and "graphed" in doc["failed"]
    assert all(set(r) >= set(key) for r in doc["graphed"]) and gpu_bench.CHECKPOINT is None
    monkeypatch.setattr(gpu_bench, "graphed", lambda sizes=None: [{**earlier, "called_s": 0.5}])
    doc = gpu_bench.run(lambda d: None, doc, ["graphed"])
    assert [r["called_s"] for r in doc["graphed"]] == [2.0, 0.5] and "partial" not in doc and not doc["failed"]


def test_the_crc_variants_bit_planes_are_the_crcs_of_single_bits():
    """Plane k, row i, column c: bit c of the raw CRC of seg zero bytes but byte i = 1 << k
    (the raw CRC: zero initial register, no final xor, as crc32c of the bytes undoes)."""
    import crc32c
    import numpy as np
    import crc_variants
    for seg in (16, 64):
        planes = crc_variants.bit_planes(seg)
        assert planes.shape == (8, seg, 32) and set(np.unique(planes)) <= {0, 1}
        for k, i in ((0, 0), (7, seg - 1), (3, seg // 2)):
            data = bytearray(seg)
            data[i] = 1 << k
            raw = crc32c.crc32c(bytes(data)) ^ crc32c.crc32c(bytes(seg))  # the all-ones terms cancel
            assert sum(int(b) << c for c, b in enumerate(planes[k, i])) == raw, (seg, k, i)


def test_the_kept_gpu_results_name_where_each_part_was_measured():
    """Every part is kept, with its stamp."""
    doc = json.loads(run.GPU_RESULTS.read_text())
    assert set(gpu_bench.PARTS) - set(doc) == set(gpu_bench.NOT_YET_RUN)  # emptied once a GPU runs them
    for part in set(gpu_bench.PARTS) & set(doc):
        assert {"date", "commit", "device"} <= set(doc["measured"][part]), part


def test_the_kept_device_audit_covers_every_gpu_codec_on_every_path():
    """``benchmarks/device_audit.json`` (counts, the same on any machine): every codec the GPU
    benchmark times, at every size, on every path, each count whole; folding the CRC's join
    into its block kernel leaves the same reads and at most the launches of the tree."""
    doc = json.loads(run.AUDIT_RESULTS.read_text())
    assert set(doc["sizes"]) == {"small", "large", "larger"} and set(doc["paths"]) == {"torch", "triton", "folded"}
    for row in doc["rows"]:
        for part in ("encode", "decode"):
            tree, folded = row["triton"][part], row["folded"][part]
            assert folded["reads"] == tree["reads"] and folded["ops"] == tree["ops"], (row["codec"], part)
            assert folded["triton"] == tree["triton"] - tree["triton_names"].get("_join", 0), (row["codec"], part)
        # inside wire.deferred_checks: no more waits, one at most at the block's end, none for the dense
        # codecs and min-max quantization
        folded = row["folded"]
        outside = folded["encode"]["reads"] + folded["decode"]["reads"]
        inside = folded["encode_deferred"]["reads"] + folded["decode_deferred"]["reads"]
        assert inside + folded["block_end"]["reads"] <= outside and folded["block_end"]["reads"] <= 1, row["codec"]
        assert inside == 0 or row["codec"] not in ("fp32", "fp16", "bf16", "quantize(bits=8)", "quantize(bits=4)",
                                                   "quantize(bits=1)", "qsgd(bits=8, bucket=512)", "colquant(bits=8)"), row["codec"]
    for size in doc["sizes"]:
        assert [r["codec"] for r in doc["rows"] if r["size"] == size] == gpu_bench.SPECS
    blocking = [(row["codec"], row["size"], path, where) for row in doc["rows"] for path in doc["paths"]
                for counts in row[path].values() if isinstance(counts, dict) for where in counts.get("where", {})
                if "blocking copy" in where]
    assert not blocking, blocking  # a host tensor goes to the device without a wait (``device.put``)
    for row in doc["rows"]:
        for path in doc["paths"]:
            for part in ("encode", "decode"):
                counts = row[path][part]
                assert counts["ops"] == sum(counts["op_names"].values()) and counts["reads"] == sum(
                    counts["where"].values()) and counts["triton"] >= 1, (row["codec"], path, part)
                assert counts["bytes"] == sum(counts["bytes_by_launch"].values()) > 0, (row["codec"], path, part)
    # fp32 moves at least its copy in and out, and checks each: 4 + 4 bytes per value each way
    rows = {(r["codec"], r["size"]): r for r in doc["rows"]}
    for part in ("encode", "decode"):
        per = (rows[("fp32", "larger")]["triton"][part]["bytes"] - rows[("fp32", "large")]["triton"][part]["bytes"]) / (
            rows[("fp32", "larger")]["values"] - rows[("fp32", "large")]["values"])
        assert 8 <= per < 8.5, (part, per)
