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
    assert load_bench.covered() == {name for name, cls in CODECS.items() if cls.__module__.startswith("thinwire.")}


@pytest.fixture(scope="module")
def small_doc():
    return {"machine": run.machine(), "codecs": codecs_bench.run(n=20_000), "graddrop": graddrop_bench.run(n=200_000),
            "replicas": replicas_bench.run(), "oland_raj": oland_raj_bench.run(n=20_000),
            "load": load_bench.run(n=20_000, repeats=1, rounds=2),
            "load_running": load_bench.run_continuous(n=20_000, repeats=1, rounds=2),
            "load_running_default": wait_policy.measure("default", 20_000, 1)}


@pytest.mark.long  # every benchmark run end to end: minutes; make test-long
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


@pytest.mark.long  # every benchmark run end to end: minutes; make test-long
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


@pytest.fixture
def dry_run():
    """``gpu_bench``'s parts on the CPU, as ``--dry-run`` runs them."""
    with gpu_bench.settings("cpu"):
        yield


@pytest.mark.long  # every benchmark run end to end: minutes; make test-long
def test_the_gpu_benchmark_runs_its_codecs_through_the_device_paths_on_the_cpu(dry_run):
    """``gpu_bench --dry-run``'s codec part: every spec's row, its message compared with the
    host kernels' byte for byte (the device paths forced on CPU tensors)."""
    rows = gpu_bench.codecs(sizes=(20_000,))
    assert [r["codec"] for r in rows] == gpu_bench.SPECS
    assert all(r["encode_s"] > 0 and r["decode_s"] > 0 and 0 < r["payload"] < r["bytes"] for r in rows)
    assert all(gpu_bench.same_bytes(spec, n=5_000) for spec in [*gpu_bench.SPECS, *gpu_bench.SAME_BYTES_ALSO])
    kept = gpu_bench.device_messages(sizes=(20_000,))  # part 5: message tensors on the device
    assert [r["codec"] for r in kept] == gpu_bench.SPECS and all(r["equal_to_host"] for r in kept)
    assert [r["bytes"] for r in kept] == [r["bytes"] for r in rows]
    doc = json.loads(run.GPU_RESULTS.read_text())
    tables = run.gpu_tables({**doc, "device_messages": kept})
    assert "Messages kept on the device" in tables["gpu_codecs"] and "12 of 12 rows:" in tables["gpu_codecs"]
    assert re.search(r"\d+ of 12 rows meet 0\.5", tables["gpu_codecs"])
    profiled = gpu_bench.step_profile(steps=2, profile="smoke")  # part 9: what a quickstart step spends
    assert len(profiled["methods"]) == 3 and all(r["host_us_per_step"] for r in profiled["methods"].values())
    table = run.gpu_tables({**doc, "step_profile": profiled})["gpu_codecs"]
    assert "Where a quickstart step's time goes" in table and all(f"| {m} |" in table for m in profiled["methods"])
    specs = ("quantize(bits=8)", "colquant(bits=8)")  # part 11: each codec as the library runs it
    rows = gpu_bench.codec_profile(2_000, specs=specs, calls=1)
    assert [r["codec"] for r in rows] == list(specs)
    assert all(r["encode_host_us"] > 0 and r["decode_host_us"] > 0 and r["encode_wall_us"] > 0 and r["encode_python_us"]
               for r in rows)
    table = run.gpu_tables({**doc, "codec_profile": rows})["gpu_codecs"]
    assert "spend their time" in table and "| colquant(bits=8) | " in table
    table = run.gpu_tables({**doc, "codec_profile": [*rows, {**rows[0], "values": 4_000}]})["gpu_codecs"]
    assert "| quantize(bits=8), 2,000 | " in table and "| quantize(bits=8), 4,000 | " in table
    rows = gpu_bench.graphed(sizes=(3_000,))  # part 13: called only (no graph on the CPU)
    assert [r["codec"] for r in rows] == list(gpu_bench.GRAPH_SPECS)
    assert all(r["equal"] and r["same_bytes"] and r["called_s"] > 0 and r["graph_s"] is None for r in rows)
    table = run.gpu_tables({**doc, "graphed": rows})["gpu_codecs"]
    assert "replayed from a CUDA graph" in table and "| bf16 | 3,000 | " in table


def test_the_variants_earlier_versions_measured_are_one_record_beside_the_library_s_figures():
    """The kept rows of the deleted variants (device CRC kernels and joins, codec kernels
    against torch's operations, program shapes, selections) are one table, each beside the
    library's figure from the same run; the library's own rows stay out of it."""
    doc = json.loads(run.GPU_RESULTS.read_text())
    record = run.gpu_tables(doc)["gpu_variants"]
    lines = [line for line in record.splitlines() if line.startswith("| ") and not line.startswith("| study")]
    crc = [r for r in doc["device_crc"] if "crc_s" in r]
    assert sum(line.startswith("| device CRC | ") for line in lines) == sum(not run.library(r) for r in crc) > 0
    shifted = next(r for r in crc if run.library(r) and r["bytes"] == 100_000_000)
    slicing = next(r for r in crc if r["kernel"] == "slicing" and r["join"] == "tree" and r["bytes"] == 100_000_000)
    assert (f"| device CRC | slicing block kernel, tree join | fraction of the add pass, 100,000,000 bytes | "
            f"{slicing['fraction_of_add_pass']:.3g} | {shifted['fraction_of_add_pass']:.3g} |") in record
    assert "| j-th smallest | by sort |" in record and "| j-th smallest | by topk |" not in record
    assert not any("shifted block kernel, tree join" in line for line in lines)


def test_a_partial_profile_run_replaces_only_the_rows_it_measured(monkeypatch):
    """``--kernel-specs`` runs of part 11 keep the rows they did not measure; rows kept from
    runs that named their kernels are matched as the library's where they were."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # what a dry run's main sets, undone after
    key = gpu_bench.ROW_KEYS["codec_profile"]
    row = dict(kernels="library", codec="quantize(bits=8)", values=25, encode_wall_us=1.0)
    before = [row, {**row, "codec": "fp32"}, {**row, "kernels": "triton, words"}]
    now = {k: v for k, v in row.items() if k != "kernels"} | {"encode_wall_us": 0.5}
    stamp = {"commit": "abc", "date": "d", "device": "gpu"}  # each row measured now names its commit and GPU
    merged = gpu_bench.merged_rows(before, [now], stamp, key)
    assert merged == [{**row, "codec": "fp32"}, {**row, "kernels": "triton, words"}, {**now, **stamp}]
    with pytest.raises(SystemExit, match="--kernel-specs=qsgd is not allowed"):
        gpu_bench.main(["--dry-run", "--only=codec_profile", "--kernel-specs=qsgd"])
    with pytest.raises(SystemExit, match="--only=codec_kernels is not allowed"):
        gpu_bench.main(["--dry-run", "--only=codec_kernels"])
    with pytest.raises(SystemExit, match="--profile-values=25M is not allowed: give positive integers"):
        gpu_bench.main(["--dry-run", "--only=codec_profile", "--profile-values=25M"])


def test_rows_measured_on_several_gpus_name_theirs():
    """A part's rows from runs at several commits name their commit, and their GPU where
    runs on several GPUs measured them (a row without one has the part's earlier stamp's)."""
    doc = {"measured": {"graphed": {"commit": "new", "device": "B"}},
           "earlier_stamp": {"graphed": {"commit": "old", "device": "A"}},
           "graphed": [{"codec": "x"}, {"codec": "y", "commit": "new", "device": "B"}]}
    at = run._row_commits(doc, "graphed")
    assert [at(r) for r in doc["graphed"]] == [", at old on A", ", at new on B"]
    doc["graphed"][1]["device"] = "A"
    at = run._row_commits(doc, "graphed")
    assert [at(r) for r in doc["graphed"]] == [", at old", ", at new"]
    doc["graphed"][1]["commit"] = "old"
    assert run._row_commits(doc, "graphed")(doc["graphed"][0]) == ""


def test_a_part_cut_short_keeps_the_rows_it_measured(monkeypatch, dry_run):
    """A part of ``ROW_KEYS`` saves each row as it is measured (``gpu_bench.checkpoint``), so a
    run that fails (or is stopped) within the part keeps those rows beside the earlier ones,
    the part marked partial; once the part ends the mark goes."""
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


def test_the_kept_gpu_results_name_where_each_part_was_measured():
    """Every part is kept, with its stamp."""
    doc = json.loads(run.GPU_RESULTS.read_text())
    assert set(gpu_bench.PARTS) <= set(doc)
    for part in set(gpu_bench.PARTS) & set(doc):
        assert {"date", "commit", "device"} <= set(doc["measured"][part]), part


def test_the_kept_device_audit_covers_every_gpu_codec():
    """``benchmarks/device_audit.json`` (counts, the same on any machine): every codec the GPU
    benchmark times, at every size, each count whole; inside ``wire.deferred_checks`` no more
    waits than outside, one at most at the block's end, none for the dense codecs and min-max
    quantization."""
    doc = json.loads(run.AUDIT_RESULTS.read_text())
    name = doc["path"]
    assert set(doc["sizes"]) == {"small", "large", "larger"}
    for row in doc["rows"]:
        found = row[name]
        outside = found["encode"]["reads"] + found["decode"]["reads"]
        inside = found["encode_deferred"]["reads"] + found["decode_deferred"]["reads"]
        assert inside + found["block_end"]["reads"] <= outside and found["block_end"]["reads"] <= 1, row["codec"]
        assert inside == 0 or row["codec"] not in ("fp32", "fp16", "bf16", "quantize(bits=8)", "quantize(bits=4)",
                                                   "quantize(bits=1)", "qsgd(bits=8, bucket=512)", "colquant(bits=8)"), row["codec"]
    for size in doc["sizes"]:
        assert [r["codec"] for r in doc["rows"] if r["size"] == size] == gpu_bench.SPECS
    blocking = [(row["codec"], row["size"], where) for row in doc["rows"] for counts in row[name].values()
                for where in counts.get("where", {}) if "blocking copy" in where]
    assert not blocking, blocking  # a host tensor goes to the device without a wait (``device.put``)
    for row in doc["rows"]:
        for part in ("encode", "decode"):
            counts = row[name][part]
            assert counts["ops"] == sum(counts["op_names"].values()) and counts["reads"] == sum(
                counts["where"].values()) and counts["triton"] >= 1, (row["codec"], part)
            assert counts["bytes"] == sum(counts["bytes_by_launch"].values()) > 0, (row["codec"], part)
    # fp32 moves its copy in and out, and checks each: 4 + 4 bytes per value each way, 4 for the CRC
    rows = {(r["codec"], r["size"]): r for r in doc["rows"]}
    for part in ("encode", "decode"):
        per = (rows[("fp32", "larger")][name][part]["bytes"] - rows[("fp32", "large")][name][part]["bytes"]) / (
            rows[("fp32", "larger")]["values"] - rows[("fp32", "large")]["values"])
        assert 12 <= per < 12.5, (part, per)
