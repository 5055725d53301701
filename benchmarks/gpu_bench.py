"""The GPU part of ``make bench`` (skipped without a GPU): codecs on a GPU tensor, the
paper profiles' speed on one GPU, and the DDP hook under NCCL.

1. **Codecs** (issue 26, item 2): encode + decode of 25M and 250M float32 values on the
   device, as a fraction of the device's own add pass over them (reads 2n, writes n),
   both timed here. Here a message is host bytes (``bytearray``), so every codec's
   encode ends in a device-to-host copy of its message and every decode starts with the
   host-to-device copy of what it reads; ``host_copy_s`` times those two copies of a
   buffer of the message's length alone, so each row shows how much of its time is the
   message's trip through host memory. ``same_bytes`` encodes 1M values on the GPU and on
   the CPU (host kernels) with the same seed and compares the messages byte for byte.
2. **Paper profiles on one GPU** (item 3): the gradient-dropping paper profile's speed
   runs (3 x 4096, 4 nodes, batch 40, dropping from the first step) and the quickstart's
   paper profile (784-1024-1024-10, 4 workers), models, replicas, batches and codecs on
   the GPU, capped at ``steps``: modelled images/s (measured compute + communication
   priced on the network), compute and codec seconds per step (medians after a warm-up)
   and the codec share of the compute.
3. **DDP hook under NCCL** (item 4): ``examples/ddp_mnist.py`` under torchrun with the
   NCCL backend, one process per GPU.
4. **Device CRC-32C** (``kernels/triton_crc.py``): the checksum of a buffer the size of
   the fp32 message of 25M and 250M values, computed on the GPU, as a fraction of the add
   pass (the first figure a message kept in device memory would depend on), and compared
   with the host's value for the same bytes.
5. **Messages kept on the device** (``wire/tensor_message.py``): the codecs of part 1
   encoding into a uint8 tensor on the GPU and decoding from it, as a fraction of the add
   pass, with no host copy of the message; each message is also compared byte for byte
   with the host message of the same tensor and state.
7. **Message overhead**: encode and decode of small message tensors (4,096 and 1M values),
   seconds per call and the CUDA runtime calls and kernels each makes.
9. **Step profile**: the quickstart paper profile's steps (each method) under
   ``torch.profiler``: the operators that take the host's and the device's time per step,
   and the CUDA runtime's synchronizations and copies per step.
11. **Codec profile** (``codec_profile``): ``KERNEL_SPECS`` at 25M values (other sizes with
   ``--profile-values=``) under ``torch.profiler``: the kernels that take an encode's and a
   decode's device time, the wall time beside it, the CUDA runtime's calls and the Python
   functions that take the host's time.
12. **Host profile** (``host_profile``): encode and decode of a 4,096-value message kept on
   the device, fp32's and ``KERNEL_SPECS``', where the call's time is the host's:
   ``cProfile``'s functions by own time and with their callees.
13. **Graphed round trips** (``graphed``): the round trips of part 5 of ``GRAPH_SPECS``
   with the decode in a ``wire.deferred_checks`` block, called and captured in a CUDA
   graph and replayed, as fractions of the add pass.

The numbers skip what earlier versions measured and no longer run (variants of the device
CRC, the codec kernels against torch's operations, one-pass writers, program shapes, sparse
writes, sample draws): their kept rows are summarised in the engine's README's record of
variants (``benchmarks/run.py``'s ``variants_record``).

``python benchmarks/gpu_bench.py [FILE] [--only=PART,...] [--kernel-specs=SPEC;...]
[--profile-values=N,...]``
updates ``FILE``
(``gpu-runs/bench_gpu.json``) with the parts it runs; ``THINWIRE_COMMIT`` names the code
measured in each part's stamp.

Every time is the best of several runs after a warm-up, each ended by
``torch.cuda.synchronize()`` (the CPU benchmarks report the median: ``roofline``): ``REPEATS``
runs for the add pass and for each codec of 25M values, half as many of 250M; parts 1
and 5 keep the median beside the best.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from contextlib import contextmanager, nullcontext
from pathlib import Path

import torch

ROOT = Path(__file__).parents[1]
SIZES = (25_000_000, 250_000_000)
SPECS = ["fp32", "fp16", "bf16", "quantize(bits=8)", "quantize(bits=4)", "quantize(bits=1)", "topk(ratio=0.01)",
         "qsgd(bits=8, bucket=512)", "graddrop(ratio=0.99)", "graddrop(ratio=0.99, bits=1)", "binquant(bits=8)",
         "colquant(bits=8)"]
# compared byte for byte too: codes made on the GPU, entropy-coded on the host; error feedback
SAME_BYTES_ALSO = ["binquant(bits=5, coder='huffman')", "binquant(bits=12, coder='ans')", "ef(topk(ratio=0.01))"]
TARGET = 0.5
REPEATS = 20  # timed calls per figure (best of them) after a warm-up: the add pass's, and a codec's of 25M values
HOOK_CODECS = ("fp32", "ef(topk(ratio=0.01))", "quantize(bits=8)")
KERNEL_SPECS = ["quantize(bits=8)", "quantize(bits=4)", "quantize(bits=1)", "qsgd(bits=8, bucket=512)",
                "qsgd(bits=4, bucket=512)", "topk(ratio=0.01)", "graddrop(ratio=0.99)", "graddrop(ratio=0.99, bits=1)",
                "binquant(bits=8)", "colquant(bits=8)"]
PROFILE_VALUES = (25_000_000,)  # part 11's sizes (``--profile-values=N,...``)
OVERHEAD_CODECS = ("fp32", "quantize(bits=8)", "topk(ratio=0.01)", "graddrop(ratio=0.99)")
DEVICE = "cuda"  # ``--dry-run``: "cpu", the device paths forced (kernels/device.py), tiny sizes


def _sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def available() -> bool:
    return torch.cuda.is_available()


def device_seconds(fn, repeats: int = 5, warmup: int = 2, samples: list | None = None) -> float:
    """Best of ``repeats`` timed calls after ``warmup``, each ended by a device synchronize;
    every call's time is appended to ``samples`` when given."""
    for _ in range(warmup):
        fn()
    _sync()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        _sync()
        took = time.perf_counter() - t
        best = min(best, took)
        if samples is not None:
            samples.append(took)
    return best


def host_seconds(fn, repeats: int = 5) -> float:
    """Best of ``repeats`` calls' time until ``fn`` returns to the host, each begun on an
    idle device (a synchronize before, none after): where it is close to ``device_seconds``
    the host sets the call's time, where it is much less the device does."""
    best = float("inf")
    for _ in range(repeats):
        _sync()
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    _sync()
    return best


class Held:
    """A codec's message as a sender holds it: each ``encode()`` writes into the message it
    returned last (``encode(..., out=)``) and keeps what the codec returns, a new tensor
    where the last one's storage was too small (a message whose size varies, as gradient
    dropping's does); ``decode()`` reads the latest into ``out``."""

    def __init__(self, codec, state, x: torch.Tensor, out: torch.Tensor, first=None):
        self.codec, self.state, self.x, self.out = codec, state, x, out
        self.message = codec.encode(x, state, "x", out=first)

    def encode(self):
        self.message = self.codec.encode(self.x, self.state, "x", out=self.message)
        return self.message

    def decode(self) -> torch.Tensor:
        return self.codec.decode(self.message, self.state, "x", out=self.out)


def add_pass(like: torch.Tensor) -> float:
    """The roofline: the best time of one ``torch.add`` over two tensors like ``like`` into a
    third (reads 2n values, writes n)."""
    a, b, sum_out = torch.randn_like(like), torch.randn_like(like), torch.empty_like(like)
    return device_seconds(lambda: torch.add(a, b, out=sum_out), repeats=_repeats(0))


def _repeats(n: int) -> int:
    """Timed calls for a codec of ``n`` values (0: the add pass): ``REPEATS``, half as many
    above 50M values; 2 in a dry run, whose interpreted kernels take most of a test's time."""
    if DEVICE != "cuda":
        return 2
    return REPEATS if n <= 50_000_000 else REPEATS // 2


def same_bytes(spec: str, n: int = 1_000_000) -> bool:
    """A GPU tensor's message equals the CPU tensor's (host kernels), same seed, two steps."""
    from thinwire.codecs import CodecState, make_codec
    from thinwire.engine.kernels import device
    x = torch.randn(n, generator=torch.Generator().manual_seed(1))
    messages = []
    for where in (DEVICE, "cpu"):
        codec, state = make_codec(spec), CodecState(7)
        t = x.to(where)
        with device.forced() if where == DEVICE else nullcontext():
            messages.append([bytes(codec.encode(t * s, state, "x")) for s in (1.0, 0.5)])  # a residual carries over
    return messages[0] == messages[1]


def codecs(sizes=SIZES, specs=SPECS, kept_on_device: bool = False, done=None) -> list[dict]:
    """Part 1 (host messages), or part 5 with ``kept_on_device`` (message tensors on the device)."""
    from thinwire.codecs import CodecState, make_codec
    from thinwire.engine import wire
    from thinwire.engine.kernels import device
    rows = []
    for n in sizes:
        x = torch.randn(n, device=DEVICE, generator=torch.Generator(DEVICE).manual_seed(0))
        roof = add_pass(x)
        out = torch.empty_like(x)
        repeats = _repeats(n)
        for spec in specs:
            codec, state = make_codec(spec), CodecState(0)
            codec.warm_up()
            with device.forced() if DEVICE == "cpu" else nullcontext():
                held = Held(codec, state, x, out, torch.empty(0, dtype=torch.uint8, device=DEVICE) if kept_on_device else None)
                encodes, decodes = [], []
                encode = device_seconds(held.encode, repeats, 1, encodes)
                decode = device_seconds(held.decode, repeats, 1, decodes)
            message = held.message
            payload = wire.measure(message)[0]
            row = {"codec": spec, "values": n, "bytes": len(message), "payload": payload, "encode_s": encode,
                   "decode_s": decode, "add_pass_s": roof, "fraction_of_add_pass": roof / (encode + decode),
                   "target": TARGET, "repeats": repeats, "encode_median_s": statistics.median(encodes),
                   "decode_median_s": statistics.median(decodes)}
            if kept_on_device:  # the same bytes as the host message of the same tensor and state
                again, host_state = make_codec(spec), CodecState(0)
                with device.forced() if DEVICE == "cpu" else nullcontext():
                    moved = codec.encode(x, CodecState(0), "x", out=message)
                    row["equal_to_host"] = bytes(moved.cpu().numpy()) == bytes(again.encode(x, host_state, "x"))
            else:
                staged = torch.empty(len(message), dtype=torch.uint8, device=DEVICE)  # overwrites the message
                host = torch.frombuffer(message, dtype=torch.uint8)
                row["host_copy_s"] = device_seconds(lambda: (host.copy_(staged), staged.copy_(host)), repeats, 1)
                del staged, host
            rows.append(row)
            if done is not None:  # the rows so far, kept should the run stop here
                done(rows)
            where = " (message on the device)" if kept_on_device else ""
            print(f"gpu codec {spec} n={n:,}{where}: encode "
                  f"{encode * 1e3:.2f} ms, decode {decode * 1e3:.2f} ms, add pass {roof * 1e3:.3f} ms", flush=True)
            del message, held
        del x, out
        if DEVICE == "cuda":
            torch.cuda.empty_cache()
    return rows


def device_crc(sizes=SIZES) -> list[dict]:
    """Part 4: the device CRC of each size's fp32 bytes against the add pass."""
    import crc32c

    from thinwire.engine.kernels import triton_crc
    if not triton_crc.AVAILABLE:
        print("gpu_bench: no triton here, the device CRC is not measured", flush=True)
        return []
    rows = []
    for n in sizes:
        a = torch.randn(n, device=DEVICE, generator=torch.Generator(DEVICE).manual_seed(0))
        roof = add_pass(a)
        buffer = a.view(torch.uint8)
        want = crc32c.crc32c(buffer.cpu().numpy().tobytes())
        crc = device_seconds(lambda: triton_crc.crc32c(buffer), 5, 2)
        equal = triton_crc.crc32c(buffer) == want
        rows.append({"bytes": buffer.numel(), "crc_s": crc, "add_pass_s": roof, "gb_per_s": buffer.numel() / crc / 1e9,
                     "fraction_of_add_pass": roof / crc, "equal_to_host": equal})
        print(f"device crc32c of {buffer.numel():,} bytes: {crc * 1e3:.3f} ms ({rows[-1]['gb_per_s']:.0f} GB/s), "
              f"add pass {roof * 1e3:.3f} ms, equal to the host's: {equal}", flush=True)
        del a, buffer
    return rows


def device_messages(sizes=SIZES) -> list[dict]:
    """Part 5: part 1's codecs with their messages kept on the device."""
    return codecs(sizes, kept_on_device=True)


def _speed(result, networks: tuple[str, ...]) -> dict:
    from thinwire.experiment import measures
    compute = measures.measured_seconds(result, "compute_seconds") / result.steps
    codec = measures.codec_seconds(result) / result.steps
    return {"steps": result.steps, "compute_s_per_step": compute, "codec_s_per_step": codec,
            "codec_share_of_compute": codec / compute,
            "images_per_s": {net: measures.images_per_second(result, net) for net in networks},
            "final_accuracy": result.summary.get("final_accuracy")}


def paper_profiles(steps: int, root: Path, profile: str = "paper") -> dict:
    """Speed of the gradient-dropping and quickstart paper profiles, ``steps`` steps each."""
    from thinwire.experiment.runner import run
    from thinwire.papers.gradient_dropping.published import PUBLISHED
    from thinwire.papers.gradient_dropping.runs import gradient_dropping_runs
    from thinwire.papers.quickstart.runs import quickstart_configs
    out = {"gradient_dropping": {}, "quickstart": {}, "steps": steps, "profile": profile}
    runs = gradient_dropping_runs(profile=profile, device=DEVICE, steps=steps)
    networks = ("pcie3_x16", "ethernet_10g", "net_10mbs")
    for ratio, config in runs.speed.items():
        t = time.perf_counter()
        row = _speed(run(config, root=root, reuse=False, progress=False), networks)
        row["paper_images_per_s"] = PUBLISHED["images_per_second"][ratio]
        out["gradient_dropping"][f"{ratio:.1%}"] = row
        print(f"gradient dropping {ratio:.1%}: {row['images_per_s']} ({time.perf_counter() - t:.0f} s)", flush=True)
    for label, config in quickstart_configs(profile=profile, device=DEVICE, steps=steps).items():
        row = _speed(run(config, root=root, reuse=False, progress=False), ("ethernet_10g",))
        out["quickstart"][label] = row
        print(f"quickstart {label}: {row['images_per_s']}", flush=True)
    return out


def hook_nccl(steps: int, codecs=HOOK_CODECS) -> list[dict]:
    """``examples/ddp_mnist.py`` under torchrun with NCCL, one process per GPU, per codec."""
    rows = []
    nproc = torch.cuda.device_count() if DEVICE == "cuda" else 2
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "lib"), os.environ.get("PYTHONPATH", "")]))
    for codec in codecs:
        with tempfile.TemporaryDirectory() as folder:
            t = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc),
                                   str(ROOT / "examples" / "ddp_mnist.py"), codec, str(steps)],
                                  cwd=folder, env=env, capture_output=True, text=True, timeout=300)
            wall = time.perf_counter() - t
            text = done.stdout + done.stderr
            found = re.search(r"rank 0: test accuracy ([\d.]+)%, sent ([\d,]+) bytes \(([\d,]+) payload\)", text)
            ledger = Path(folder, "ddp_ledger_0.json")
            doc = json.loads(ledger.read_text()) if ledger.exists() else {}
            seconds = doc.get("seconds", [[]])[0][steps // 10:]  # after a warm-up
            per = {part: sorted(s[part] for s in seconds)[len(seconds) // 2] if seconds else None
                   for part in ("encode", "exchange", "decode")}
            rows.append({"codec": codec, "processes": nproc, "backend": "nccl" if DEVICE == "cuda" else "gloo", "returncode": done.returncode,
                         "steps": steps, "test_accuracy": float(found.group(1)) / 100 if found else None,
                         "sent_bytes": int(found.group(2).replace(",", "")) if found else None,
                         "ledger_rows": len(doc.get("rows", [])), "median_step_seconds": per, "wall_s": wall,
                         "tail": text[-600:] if done.returncode else ""})
            print(f"ddp hook nccl {codec}: rc {done.returncode}, {rows[-1]['test_accuracy']}, {per}", flush=True)
    return rows


def message_overhead(sizes=(4_096, 1_000_000), specs=OVERHEAD_CODECS, calls: int = 50) -> list[dict]:
    """What one message costs where it is small: encode and decode of message tensors on the
    device, ``calls`` in a row with one synchronize at the end (seconds per call), and the
    CUDA runtime calls and kernels per call (``torch.profiler`` over 10 calls)."""
    from torch.profiler import ProfilerActivity, profile

    from thinwire.codecs import CodecState, make_codec
    from thinwire.engine.kernels import device
    rows = []
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if DEVICE == "cuda" else [])
    for n in sizes:
        x = torch.randn(n, device=DEVICE, generator=torch.Generator(DEVICE).manual_seed(0))
        out = torch.empty_like(x)
        for spec in specs:
            codec, state = make_codec(spec), CodecState(0)
            with device.forced() if DEVICE == "cpu" else nullcontext():
                held = Held(codec, state, x, out, torch.empty(0, dtype=torch.uint8, device=DEVICE))
                steps = {"encode": held.encode, "decode": held.decode}
                row = {"codec": spec, "values": n, "bytes": held.message.numel()}
                for name, fn in steps.items():
                    row[f"{name}_s_per_call"] = device_seconds(lambda: [fn() for _ in range(calls)], 3, 1) / calls
                    with profile(activities=activities) as prof:
                        for _ in range(10):
                            fn()
                        _sync()
                    events = sorted(prof.key_averages(), key=lambda e: -e.cpu_time_total)
                    row[f"{name}_calls"] = {e.key: round(e.count / 10, 1) for e in events
                                            if e.key.startswith(("cuda", "cu")) and e.count}
                    row[f"{name}_ops"] = {e.key: [round(e.count / 10, 1), round(e.cpu_time_total / 10, 1)]
                                          for e in events[:25]}  # calls and CPU microseconds per message
                    row[f"{name}_kernels"] = sum(e.count for e in prof.key_averages()
                                                 if getattr(e, "device_type", None) is not None
                                                 and str(e.device_type).endswith("CUDA")) / 10
            rows.append(row)
            print(f"overhead {spec} n={n:,}: encode {row['encode_s_per_call'] * 1e6:.0f} us, decode "
                  f"{row['decode_s_per_call'] * 1e6:.0f} us; encode {row['encode_calls']}; decode {row['decode_calls']}",
                  flush=True)
    return rows


PROFILED_TRAIN, PROFILED_EVAL = 8_192, 1_000  # samples a profiled run loads and evaluates: the steps are unchanged


def step_profile(steps: int = 10, profile: str = "paper", top: int = 12) -> dict:
    """Part 9: where a quickstart step's time goes on the device (``paper_profiles`` times the
    steps; this says what is in them): each method's run of ``steps`` steps under
    ``torch.profiler``, its ``top`` operators by host time (self, microseconds per step) and
    by device time, and the CUDA runtime's synchronizations, copies and launches per step.
    Each run loads and evaluates fewer samples (``PROFILED_TRAIN``, ``PROFILED_EVAL``), so
    that what is profiled around the steps is small: GPU runs with the whole profile's
    samples did not finish within a command's time."""
    from torch.profiler import ProfilerActivity, profile as profiled

    from thinwire.experiment.runner import run as run_config
    from thinwire.papers.quickstart.runs import quickstart_configs
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if DEVICE == "cuda" else [])
    out = {"steps": steps, "profile": profile, "methods": {}, "train_samples": PROFILED_TRAIN,
           "eval_samples": PROFILED_EVAL}
    for label, config in quickstart_configs(profile=profile, device=DEVICE, steps=steps).items():
        # the steps are as the profile has them; fewer samples loaded and evaluated around them
        config = config.replace(train_samples=min(config.train_samples or PROFILED_TRAIN, PROFILED_TRAIN),
                                eval_samples=min(config.eval_samples, PROFILED_EVAL))
        with tempfile.TemporaryDirectory() as root:
            with profiled(activities=activities) as prof:
                run_config(config, root=Path(root), reuse=False, progress=False)
                _sync()
        events = list(prof.key_averages())

        def per_step(value: float) -> float:
            return round(value / steps, 1)

        def device_us(e) -> float:
            return getattr(e, "self_device_time_total", getattr(e, "self_cuda_time_total", 0.0))

        runtime = {e.key: per_step(e.count) for e in events if e.key.startswith(("cuda", "cu")) and e.count}
        out["methods"][label] = {
            "host_us_per_step": {e.key: per_step(e.self_cpu_time_total)
                                 for e in sorted(events, key=lambda e: -e.self_cpu_time_total)[:top]},
            "device_us_per_step": {e.key: per_step(device_us(e))
                                   for e in sorted(events, key=lambda e: -device_us(e))[:top] if device_us(e)},
            "runtime_calls_per_step": runtime}
        print(f"step profile {label}: {list(out['methods'][label]['host_us_per_step'].items())[:5]}", flush=True)
    return out


def python_profile(fn, calls: int, top: int) -> dict:
    """``cProfile`` over ``calls`` calls of ``fn`` (then a synchronize): the ``top`` Python
    functions by their own time (``"own"``) and by their time with what they call
    (``"with_callees"``), microseconds per call, each named file:line:function."""
    import cProfile
    import pstats
    python = cProfile.Profile()
    python.enable()
    for _ in range(calls):
        fn()
    _sync()
    python.disable()
    stats = pstats.Stats(python).stats  # (file, line, function) -> (calls, primitive calls, own, with callees, ...)
    return {label: {f"{Path(f).name}:{line}:{name}": round(v[column] / calls * 1e6, 1)
                    for (f, line, name), v in sorted(stats.items(), key=lambda kv: -kv[1][column])[:top]}
            for label, column in (("own", 2), ("with_callees", 3))}


def held_messages(x: torch.Tensor, out: torch.Tensor, specs):
    """(spec, ``Held``) for each of ``specs``, its messages kept on the device: in a dry run
    the forced device path stays chosen while the caller works on each."""
    from thinwire.codecs import CodecState, make_codec
    from thinwire.engine.kernels import device
    for spec in specs:
        with device.forced() if DEVICE == "cpu" else nullcontext():
            yield spec, Held(make_codec(spec), CodecState(0), x, out, torch.empty(0, dtype=torch.uint8, device=DEVICE))


def host_profile(n: int = 4_096, specs=None, calls: int = 200, top: int = 25) -> list[dict]:
    """Part 12: where the host's time goes in one encode and one decode of a small message
    kept on the device (``n`` values: the device's work is negligible, so the call's time is
    the host's): the wall time per call (best of ``calls``) and ``python_profile`` over
    ``calls`` calls."""
    specs = specs or ("fp32", *KERNEL_SPECS)
    x = torch.randn(n, device=DEVICE, generator=torch.Generator(DEVICE).manual_seed(0))
    out = torch.empty_like(x)
    rows = []
    for spec, held in held_messages(x, out, specs):
        row = {"codec": spec, "values": n, "calls": calls}
        for name, fn in (("encode", held.encode), ("decode", held.decode)):
            row[f"{name}_wall_us"] = round(device_seconds(fn, calls, 5) * 1e6, 1)
            row[f"{name}_python_us"] = python_profile(fn, calls, top)
        rows.append(row)
        print(f"host {spec}: encode {row['encode_wall_us']} us, "
              f"{list(row['encode_python_us']['own'].items())[:6]}; decode {row['decode_wall_us']} us, "
              f"{list(row['decode_python_us']['own'].items())[:6]}", flush=True)
    return rows


def codec_profile(n: int = 25_000_000, specs=None, calls: int = 10, top: int = 8) -> list[dict]:
    """Part 11: where one encode and one decode of ``n`` values spend their time, per codec
    of ``KERNEL_SPECS``, messages kept on the device. For each, after a warm-up:

    - ``torch.profiler`` over ``calls`` calls: the ``top`` events by device time
      (microseconds per call), the device's time per call (``kernel_us``: the kernels' and
      copies' own events; ``device_us``, kept from earlier runs, also counts again each
      torch operation's kernels under the operation), the host's, and the CUDA runtime's
      calls per call (launches, synchronizations, copies);
    - the wall time per call (best of ``calls``, each ended by a synchronize), beside which
      the device total tells whether the device or the host sets the time, and the time
      until the call returns to the host (``host_seconds``);
    - ``cProfile`` over ``calls`` calls: the ``top`` Python functions by their own time
      (microseconds per call), where a host-bound call spends it."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    specs = specs or KERNEL_SPECS
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if DEVICE == "cuda" else [])
    x = torch.randn(n, device=DEVICE, generator=torch.Generator(DEVICE).manual_seed(0))
    out = torch.empty_like(x)

    def device_us(e) -> float:
        return getattr(e, "self_device_time_total", getattr(e, "self_cuda_time_total", 0.0))

    rows = []
    for spec, held in held_messages(x, out, specs):
        row = {"codec": spec, "values": n}
        for name, fn in (("encode", held.encode), ("decode", held.decode)):
            row[f"{name}_wall_us"] = round(device_seconds(fn, calls, 1) * 1e6, 1)
            row[f"{name}_host_return_us"] = round(host_seconds(fn, calls) * 1e6, 1)
            with profile(activities=activities) as prof:
                for _ in range(calls):
                    fn()
                _sync()
            found = prof.key_averages()
            events = [e for e in found if device_us(e)]
            row[f"{name}_device_us"] = round(sum(device_us(e) for e in events) / calls, 1)
            # the kernels' and copies' own events alone: a torch operation's event also
            # carries the device time of the kernels it launched, so the sum above counts
            # those twice
            row[f"{name}_kernel_us"] = round(sum(device_us(e) for e in events
                                                 if e.device_type != DeviceType.CPU) / calls, 1)
            row[f"{name}_host_us"] = round(sum(e.self_cpu_time_total for e in found) / calls, 1)
            row[f"{name}_kernels"] = {e.key[:80]: [round(device_us(e) / calls, 1), round(e.count / calls, 1)]
                                      for e in sorted(events, key=lambda e: -device_us(e))[:top]}
            row[f"{name}_runtime_calls"] = {e.key: round(e.count / calls, 1) for e in found
                                            if e.key.startswith(("cuda", "cu")) and e.count}
            row[f"{name}_python_us"] = python_profile(fn, calls, top)["own"]
        rows.append(row)
        print(f"profile {spec}: encode wall {row['encode_wall_us']} us, device {row['encode_device_us']} "
              f"us, {list(row['encode_kernels'].items())[:3]}; runtime {row['encode_runtime_calls']}; python "
              f"{list(row['encode_python_us'].items())[:4]}; decode wall {row['decode_wall_us']} us, device "
              f"{row['decode_device_us']} us, runtime {row['decode_runtime_calls']}", flush=True)
    return rows


# the codecs whose messages a CUDA graph can hold (``Codec.steady_parts``: a header fixed by the
# tensor, a quantizer's range or norms written on the device); QSGD's replays repeat the noise
# key drawn at the capture (``graphed``)
GRAPH_SPECS = ("fp32", "fp16", "bf16", "quantize(bits=8)", "quantize(bits=4)", "binquant(bits=8)", "colquant(bits=8)",
               "qsgd(bits=8, bucket=512)")


def graphed(sizes=SIZES, specs=GRAPH_SPECS) -> list[dict]:
    """Part 13: the round trip of part 5 (encode into the message tensor sent last, decode
    into ``out``) of the codecs whose header is fixed by the tensor, in a
    ``wire.deferred_checks`` block: called (each round trip ended by the block's one read),
    and captured in a CUDA graph and replayed (the host's work done once, at the capture;
    the checks judged after the timed replays). Each graph's last replay is checked, its
    message compared with the host's for the same tensor, and its values with the host's
    decode of that message. In a dry run the graph is not captured (``graph_s`` None).

    QSGD's noise key is drawn on the host at each encode (``state.generator``): a graph keeps
    the key drawn at its capture, so every replay sends the same rounding noise. That does
    not change the work timed, but such a graph is for timing, not training; its message is
    compared with the host's made with the same key (the generator as it was before the
    last call, which is the capture)."""
    from thinwire.codecs import CodecState, make_codec
    from thinwire.engine.kernels import device
    from thinwire.engine.wire import deferred
    rows = []
    for n in sizes:
        x = torch.randn(n, device=DEVICE, generator=torch.Generator(DEVICE).manual_seed(0))
        roof = add_pass(x)
        out, repeats = torch.empty_like(x), _repeats(n)
        for spec in specs:
            codec = make_codec(spec)
            codec.warm_up()
            with device.forced() if DEVICE == "cpu" else nullcontext(), _device_messages():
                held = Held(codec, CodecState(0), x, out, torch.empty(0, dtype=torch.uint8, device=DEVICE))

                def round_trip(into=None):
                    held.keys = held.state.generator.get_state()  # before the last call's draw
                    with deferred.deferred_checks(into):
                        held.encode()
                        held.decode()
                called = device_seconds(round_trip, repeats, 1)
                row = {"codec": spec, "values": n, "bytes": held.message.numel(),
                       "add_pass_s": roof, "called_s": called, "fraction_called": roof / called, "graph_s": None,
                       "target": TARGET}
                if DEVICE == "cuda":
                    row.update(_replayed(round_trip, repeats, roof))
                same_keys = CodecState(0)
                same_keys.generator.set_state(held.keys)
                host = codec.encode(x.cpu(), same_keys, "x")
                row["same_bytes"] = bytes(held.message.cpu().numpy()) == bytes(host)
                row["equal"] = bool(torch.equal(out.cpu(), codec.decode(host, CodecState(0), "x")))
            rows.append(row)
            checkpoint(rows)
            graph = "-" if row["graph_s"] is None else f"{row['graph_s'] * 1e3:.3f}"
            print(f"gpu graphed {spec} n={n:,}: called {called * 1e3:.3f} ms, graph {graph} ms, add pass "
                  f"{roof * 1e3:.3f} ms {row.get('graph_failure', '')}", flush=True)
            del held
        del x, out
        if DEVICE == "cuda":
            torch.cuda.empty_cache()
    return rows


@contextmanager
def _device_messages():
    """In a dry run whose kernels Triton interprets, message tensors on the CPU taken as
    device ones, so that their CRCs are the device kernels', as ``device_audit.path`` takes
    them (elsewhere on the CPU they are the host's)."""
    from thinwire.engine.kernels import triton_crc
    from thinwire.engine.wire import tensor_message
    if DEVICE == "cuda" or not triton_crc.interpreted():
        yield
        return
    before = tensor_message._on_device
    tensor_message._on_device = lambda t: True
    try:
        yield
    finally:
        tensor_message._on_device = before


def _replayed(round_trip, repeats: int, roof: float) -> dict:
    """``round_trip(into)`` captured once in a CUDA graph (after two warm-up calls on the
    capture stream, which make the kernels' tables and the header kept on the device), its
    replays timed, then its checks compared: (graph seconds, fraction of the add pass), or
    the failure."""
    from thinwire.engine.wire import deferred
    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):
                round_trip()
        torch.cuda.current_stream().wait_stream(stream)
        graph, checks = torch.cuda.CUDAGraph(), deferred.DeferredChecks()
        with torch.cuda.graph(graph, stream=stream):
            round_trip(checks)
        seconds = device_seconds(graph.replay, repeats, 1)
        checks.verify_all()
        return {"graph_s": seconds, "fraction_graph": roof / seconds}
    except Exception as exc:  # recorded in the row: the called round trip is still measured
        return {"graph_failure": f"{type(exc).__name__}: {exc}"[:500]}


PARTS = ("same_bytes", "hook_nccl", "codecs", "paper", "device_crc", "device_messages", "message_overhead",
         "step_profile", "codec_profile", "host_profile", "graphed")


CHECKPOINT = None  # set by ``run`` for a part of ``ROW_KEYS``: keeps the rows measured so far


def checkpoint(rows: list[dict]) -> None:
    """The rows a part of ``ROW_KEYS`` has measured so far, saved with the part's earlier rows
    (``run`` sets ``CHECKPOINT``), so that a run stopped or failing within the part keeps
    them; the part is marked ``partial`` until it ends."""
    if CHECKPOINT is not None:
        CHECKPOINT(rows)


ROW_KEYS = {"codec_profile": ("kernels", "codec", "values"),  # what tells a part's rows apart
            "graphed": ("crc_kernel", "codec", "values")}
ROW_DEFAULTS = {"kernels": "library", "crc_kernel": "shifted"}  # what rows measured now have (earlier runs named them)


def merged_rows(before: list[dict], measured: list[dict], stamp: dict, key: tuple[str, ...]) -> list[dict]:
    """The rows of part 11 or 13 after a run that may have measured only some of them
    (``--kernel-specs``): the rows measured now, each
    with its commit, date and GPU, replacing the earlier rows they match on ``key``; the other
    earlier rows kept: an earlier row without a commit keeps the part's earlier stamp
    (``earlier_stamp``)."""
    def at(r: dict) -> tuple:
        return tuple(r.get(k, ROW_DEFAULTS.get(k)) for k in key)
    now = {at(r): {**r, "commit": stamp["commit"], "date": stamp["date"], "device": stamp["device"]} for r in measured}
    kept = [r for r in before if at(r) not in now]
    return kept + list(now.values())


def run(save, doc: dict, parts=PARTS, steps: int = 30, hook_steps: int = 600, sizes=SIZES,
        profile: str = "paper") -> dict:
    """Each of ``parts`` in turn, into ``doc`` (the parts not run keep what it holds, each
    with its own ``measured`` stamp); ``save(doc)`` after each, so a run cut short keeps
    what it measured. A part of ``ROW_KEYS`` also saves each row as it measures it
    (``checkpoint``), marked ``partial`` until the part ends. A part that raises is recorded
    under ``failed`` with its traceback and keeps its earlier figures (and the rows it
    measured before it failed)."""
    global CHECKPOINT
    if DEVICE == "cuda":
        props = torch.cuda.get_device_properties(0)
        name, memory, count = props.name, props.total_memory / 2 ** 30, torch.cuda.device_count()
    else:
        name, memory, count = "cpu (dry run)", 0.0, 0
    doc["device"] = {"name": name, "memory_gib": memory, "count": count, "torch": torch.__version__,
                     "cuda": torch.version.cuda}
    stamp = {"date": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "commit": os.environ.get("THINWIRE_COMMIT", ""),
             "device": name, "torch": torch.__version__}
    jobs = {"same_bytes": lambda: {spec: same_bytes(spec) for spec in [*SPECS, *SAME_BYTES_ALSO]},
            "hook_nccl": lambda: hook_nccl(hook_steps), "codecs": lambda: codecs(sizes),
            "device_crc": lambda: device_crc(sizes), "device_messages": lambda: device_messages(sizes),
            "message_overhead": lambda: message_overhead((4_096, min(1_000_000, sizes[0]))),
            "step_profile": lambda: step_profile(min(steps, 10), profile),
            "codec_profile": lambda: [r for n in (PROFILE_VALUES if DEVICE == "cuda" else sizes[:1])
                                      for r in codec_profile(n)],
            "host_profile": lambda: host_profile(calls=200 if DEVICE == "cuda" else 5),
            "graphed": lambda: graphed(sizes),}
    # the parts that run torch.profiler go last: no other part is timed in a process that has run it
    parts = sorted(parts, key=lambda part: part in ("message_overhead", "step_profile", "codec_profile", "host_profile"))
    for part in parts:
        try:
            if part == "paper":
                with tempfile.TemporaryDirectory() as root:
                    doc[part] = paper_profiles(steps, Path(root), profile)
            elif part in ROW_KEYS:
                before = doc.get(part, [])

                def keep(rows, part=part, before=before):
                    doc[part] = merged_rows(before, rows, stamp, ROW_KEYS[part])
                    doc.setdefault("partial", {})[part] = stamp
                    save(doc)
                CHECKPOINT = keep
                try:
                    doc[part] = merged_rows(before, jobs[part](), stamp, ROW_KEYS[part])
                finally:
                    CHECKPOINT = None
                if doc.get("partial", {}).pop(part, None) and not doc["partial"]:
                    del doc["partial"]
            else:
                doc[part] = jobs[part]()
        except Exception:  # a part that fails is reported and the next part still runs
            failure = traceback.format_exc()
            print(f"gpu_bench part {part} failed:\n{failure}", flush=True)
            doc.setdefault("failed", {})[part] = {**stamp, "traceback": failure[-4000:]}
            save(doc)
            continue
        doc.get("failed", {}).pop(part, None)
        if part in ROW_KEYS and part in doc.get("measured", {}):
            doc.setdefault("earlier_stamp", {}).setdefault(part, doc["measured"][part])
        doc.setdefault("measured", {})[part] = stamp
        if part == "same_bytes":
            print("GPU and CPU messages equal:", doc["same_bytes"], flush=True)
        save(doc)
    return doc


@contextmanager
def settings(device: str | None = None, kernel_specs: list[str] | None = None,
             profile_values: tuple[int, ...] | None = None):
    """Within the block, the parts run on ``device`` (``"cpu"``: a dry run, the device paths
    forced on CPU tensors, tiny sizes), part 11 and 12 with ``kernel_specs`` and part 11 at
    ``profile_values``; this module's defaults come back after (``main``'s options)."""
    global DEVICE, KERNEL_SPECS, PROFILE_VALUES
    before = DEVICE, KERNEL_SPECS, PROFILE_VALUES
    DEVICE = device or DEVICE
    KERNEL_SPECS = kernel_specs or KERNEL_SPECS
    PROFILE_VALUES = profile_values or PROFILE_VALUES
    try:
        yield
    finally:
        DEVICE, KERNEL_SPECS, PROFILE_VALUES = before


def main(argv: list[str]) -> int:
    dry = "--dry-run" in argv
    argv = [a for a in argv if a != "--dry-run"]
    if dry:
        os.environ.setdefault("TRITON_INTERPRET", "1")  # the device CRC's kernels on the CPU
    elif not available():
        print("gpu_bench: no GPU here, nothing measured")
        return 0
    only = next((a.split("=", 1)[1].split(",") for a in argv if a.startswith("--only=")), list(PARTS))
    if any(part not in PARTS for part in only):
        raise SystemExit(f"--only={','.join(only)} is not allowed: parts are {','.join(PARTS)}")
    argv = [a for a in argv if not a.startswith("--only=")]
    values = next((a.split("=", 1)[1] for a in argv if a.startswith("--profile-values=")), None)
    if values is not None and not all(v.isdigit() and int(v) > 0 for v in values.split(",")):
        raise SystemExit(f"--profile-values={values} is not allowed: give positive integers, comma-separated")
    chosen = next((a.split("=", 1)[1].split(";") for a in argv if a.startswith("--kernel-specs=")), None)
    if chosen is not None and (not chosen or any(c not in KERNEL_SPECS for c in chosen)):
        raise SystemExit(f"--kernel-specs={';'.join(chosen)} is not allowed: choose among {';'.join(KERNEL_SPECS)}")
    argv = [a for a in argv if not a.startswith(("--kernel-specs=", "--profile-values="))]
    target = Path(argv[0]) if argv else ROOT / "gpu-runs" / "bench_gpu.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    doc = json.loads(target.read_text()) if target.exists() else {}

    def save(doc: dict) -> None:  # whole or not at all: a run stopped while writing keeps the last file
        partial = target.with_name(target.name + ".partial")
        partial.write_text(json.dumps(doc, indent=1))
        os.replace(partial, target)
    with settings("cpu" if dry else None, chosen, tuple(int(v) for v in values.split(",")) if values else None):
        if dry:
            run(save, doc, only, steps=3, hook_steps=20, sizes=(100_000,), profile="smoke")
        else:
            run(save, doc, only)
    print(f"written {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
