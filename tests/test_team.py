"""The compiled kernels' team (``engine/kernels/team.py``): its size by the setting and by
the machine's load, the load as /proc tells it, and messages that do not depend on it."""

import json
import os
import subprocess
import sys
import time

import numba
import pytest

from thinwire.engine.kernels import team

SPECS = ["fp32", "fp16", "bf16", "quantize(bits=1)", "quantize(bits=3)", "quantize(bits=8)", "quantize(bits=12)",
         "quantize(bits=16)", "qsgd(bits=8)", "qsgd(bits=4, bucket=512)", "binquant(bits=5)",
         "binquant(bits=5, coder='huffman')", "binquant(bits=5, coder='ans')", "topk(ratio=0.01)",
         "graddrop(ratio=0.99)", "graddrop(ratio=0.99, bits=1)", "graddrop(ratio=0.99, bits=2)", "colquant(bits=4)",
         "ef(topk(ratio=0.01))", "chain(topk(ratio=0.01), quantize(bits=8))"]

PROBE = """
import hashlib, json, os, sys
import torch
from thinwire.codecs import CodecState, make_codec
specs = json.loads(sys.argv[1])
x = torch.randn(600, 500, generator=torch.Generator().manual_seed(3))  # 300,000 values: several chunks each
got = {}
for threads in ("1", "2", "4"):
    os.environ["THINWIRE_KERNEL_THREADS"] = threads
    for spec in specs:
        codec, sender, receiver = make_codec(spec), CodecState(1), CodecState(1)
        digest = hashlib.sha256()
        for step in range(2):  # the second message carries the first's state (residuals, draws)
            message = codec.encode(x * (step + 1), sender, "w")
            digest.update(bytes(message))
            digest.update(codec.decode(message, receiver, "w").numpy().tobytes())
        got.setdefault(spec, {})[threads] = digest.hexdigest()
print(json.dumps({"codecs": got, "torch_threads": torch.get_num_threads()}))
"""


def test_every_message_and_decode_is_the_same_on_one_two_or_four_threads():
    """Chunks are fixed by the data, never by the team: a fresh process with a pool of four
    encodes and decodes every codec's messages on teams of 1, 2 and 4, and compares them.
    torch keeps its one thread (numba's OpenMP pool, starting, set the process's to four)."""
    env = {**os.environ, "NUMBA_NUM_THREADS": "4", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(SPECS)], capture_output=True, text=True,
                          env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    got = out["codecs"]
    assert out["torch_threads"] == 1
    assert set(got) == set(SPECS)
    differ = {spec: by for spec, by in got.items() if len(set(by.values())) != 1}
    assert not differ, differ


def test_the_setting_fixes_the_team_within_the_pool(monkeypatch):
    monkeypatch.setattr(team, "others_running", lambda: pytest.fail("the machine's load read for a fixed team"))
    for raw in ("1", "2", "3", "64"):
        monkeypatch.setenv(team.SETTING, raw)
        assert team.size() == min(int(raw), numba.config.NUMBA_NUM_THREADS)


def test_auto_is_the_cores_while_idle_and_twice_them_while_busy(monkeypatch):
    monkeypatch.setenv(team.SETTING, "auto")
    for others, want in ((0, team.CORES), (team.CORES - 1, team.CORES), (team.CORES, 2 * team.CORES),
                         (5 * team.CORES, 2 * team.CORES)):
        monkeypatch.setattr(team, "others_running", lambda: others)
        monkeypatch.setitem(team._seen, "at", -1e9)  # the last reading is stale
        assert team.size() == min(want, numba.config.NUMBA_NUM_THREADS), others


def test_the_load_is_read_at_most_once_per_recheck(monkeypatch):
    readings = []
    monkeypatch.setattr(team, "others_running", lambda: readings.append(1) or 0)
    monkeypatch.setitem(team._seen, "at", -1e9)
    for _ in range(50):
        team.busy()
    assert len(readings) == 1
    monkeypatch.setitem(team._seen, "at", time.monotonic() - team.RECHECK)
    team.busy()
    assert len(readings) == 2


@pytest.mark.parametrize("raw", ["0", "-1", "two", "1.5", "", "auto "])
def test_a_bad_setting_names_itself_and_what_is_allowed(monkeypatch, raw):
    monkeypatch.setenv(team.SETTING, raw)
    with pytest.raises(ValueError, match=rf"THINWIRE_KERNEL_THREADS={raw!r} is not allowed: it must be 'auto'"):
        team.size()


def test_other_processes_that_spin_are_counted_and_this_ones_threads_are_not():
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(team.CORES + 1)]
    try:
        seen = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (not seen or seen[-1] < team.CORES):
            time.sleep(0.05)
            seen.append(team.others_running())
        assert seen[-1] >= team.CORES, seen
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    assert team._own_running() >= 1  # the thread asking is running


def test_gradient_droppings_gather_and_sampled_read_run_alone_below_the_step_limit(monkeypatch):
    """On 2M values, 10% kept from a 1% sample: the survivors' gather (2.4 MB) and the
    sampled read (20,000 positions, 1.3 MB of cache lines), above ``SMALL`` and below
    ``STEP``, on the calling thread; half kept from a 10% sample (a 12 MB gather, 200,000
    positions): on the team."""
    import torch
    from thinwire.codecs import CodecState, make_codec
    from thinwire.engine.kernels import drop
    seen = {}

    def spy(name):
        kernel = getattr(drop, name)

        def run(*args):
            seen[name] = numba.get_num_threads()
            return kernel(*args)
        monkeypatch.setattr(drop, name, run)
    spy("gather"), spy("sampled_magnitudes")
    team.fit()
    teamed = numba.get_num_threads()
    x = torch.randn(2_000_000, generator=torch.Generator().manual_seed(0))
    for spec, threads in (("graddrop(ratio=0.9, sample=0.01)", 1), ("graddrop(ratio=0.5, sample=0.1)", teamed)):
        seen.clear()
        make_codec(spec).encode(x, CodecState(0), "w")
        assert seen == {"gather": threads, "sampled_magnitudes": threads}, spec
