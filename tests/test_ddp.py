"""thinwire codecs as DDP communication hooks (``thinwire.ddp``), on 2 and 4 gloo processes."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ddp_ranks import STEPS, run_on_gloo
from thinwire.codecs import make_codec
from thinwire.ddp import CodecHook
from thinwire.experiment.launch import free_port
from thinwire.models import build_model

ROOT = Path(__file__).resolve().parents[1]
CASES = [(None, {}), ("fp32", {}), ("ef(topk(ratio=0.25))", {}), ("quantize(bits=4)", {}),
         ("qsgd(bits=4, bucket=8)", {}), ("fp32", {"granularity": "bucket", "bucket_cap_mb": 0.0003}),
         ("ef(topk(ratio=0.25))", {"granularity": "bucket", "bucket_cap_mb": 0.0003}),
         ("fp16", {"collective": "allreduce"}),
         *[(c, {"messages": "tensors"}) for c in ("fp32", "ef(topk(ratio=0.25))", "quantize(bits=4)",
                                                  "qsgd(bits=4, bucket=8)", "graddrop(ratio=0.75)")],
         ("graddrop(ratio=0.75)", {})]
REFUSED = [("fp32", {"by_rank": {1: {"granularity": "bucket"}}}), ("fp32", {"wrapped_on": (1,)}),
           ("ef(topk(ratio=0.25))", {"flip_at": 1})]


# 4 ranks (sums in another order than one process's) in make test-long; 2 ranks in make test
@pytest.fixture(scope="module", params=[2, pytest.param(4, marks=pytest.mark.long)])
def ranks(request):
    return request.param, run_on_gloo(request.param, free_port(), CASES + REFUSED)


def _case(ranks, codec, **options):
    world, results = ranks
    return world, [r[(CASES + REFUSED).index((codec, options))] for r in results]


def test_fp32_through_the_hook_is_ddp_without_one(ranks):
    world, plain = _case(ranks, None)
    for options in ({}, {"granularity": "bucket", "bucket_cap_mb": 0.0003}, {"messages": "tensors"}):
        _, hooked = _case(ranks, "fp32", **options)
        for rank in range(world):
            for step in range(STEPS):
                for name, g in plain[rank]["grads"][step].items():
                    # the same sum in another order: equal for 2 ranks (halving is exact), for 4
                    # within a few float32 roundings of the summands (|g| < 1 here)
                    torch.testing.assert_close(hooked[rank]["grads"][step][name], g, rtol=1e-6 if world > 2 else 0,
                                               atol=1e-7 if world > 2 else 0)


@pytest.mark.parametrize("codec", ["ef(topk(ratio=0.25))", "quantize(bits=4)", "qsgd(bits=4, bucket=8)"])
@pytest.mark.parametrize("messages", ["bytes", "tensors"])
def test_the_averaged_gradient_is_the_mean_of_the_decoded_messages(ranks, codec, messages):
    world, results = _case(ranks, codec, **({"messages": "tensors"} if messages == "tensors" else {}))
    decoder = make_codec(codec)
    for rank in range(world):
        sent = {(s, t, step): m for step, s, _, t, m in results[rank]["exchanges"]}
        for step in range(STEPS):
            for name, g in results[rank]["grads"][step].items():
                total = torch.zeros(g.numel())
                for sender in range(world):
                    total += decoder.decode(bytearray(sent[(sender, name, step)])).reshape(-1)
                assert torch.equal(g.reshape(-1), total / world), (rank, step, name)
                assert torch.equal(g, results[0]["grads"][step][name])  # every rank applies the same


@pytest.mark.parametrize("codec,options", [(c, o) for c, o in CASES if c and o.get("collective") != "allreduce"])
def test_the_ledger_holds_the_lengths_of_the_messages_sent(ranks, codec, options):
    world, results = _case(ranks, codec, **options)
    for rank in range(world):
        sent = [(step, s, r, t, m) for step, s, r, t, m in results[rank]["exchanges"] if s == rank]
        assert len(sent) == len(results[rank]["ledger"]) > 0
        assert sorted((step, "allgather", s, r, t, len(m), results[rank]["payloads"][m])
                      for step, s, r, t, m in sent) == results[rank]["ledger"]
        assert {r for _, _, r, _, _ in sent} == set(range(world)) - {rank}  # every peer gets every message
        assert all(seconds["encode"] > 0 and seconds["decode"] > 0 for seconds in results[rank]["seconds"])
    if options.get("granularity") == "bucket":  # the small cap makes several buckets, one message each
        assert len({t for *_, t, _ in results[0]["exchanges"]}) > 1


@pytest.mark.parametrize("codec", ["fp32", "ef(topk(ratio=0.25))", "quantize(bits=4)", "qsgd(bits=4, bucket=8)",
                                   "graddrop(ratio=0.75)"])
def test_messages_kept_in_tensors_are_the_same_bytes_and_give_the_same_gradients(ranks, codec):
    """``messages="tensors"`` (framed and sent as tensors, decoded from them) against host
    messages: every exchange the same bytes, every rank the same gradients."""
    world, as_bytes = _case(ranks, codec)
    _, as_tensors = _case(ranks, codec, messages="tensors")
    for rank in range(world):
        assert sorted(as_tensors[rank]["exchanges"]) == sorted(as_bytes[rank]["exchanges"])
        assert as_tensors[rank]["ledger"] == as_bytes[rank]["ledger"]
        for step in range(STEPS):
            for name, g in as_bytes[rank]["grads"][step].items():
                assert torch.equal(as_tensors[rank]["grads"][step][name], g), (rank, step, name)


def test_fp16_all_reduce_sums_half_precision_gradients(ranks):
    world, plain = _case(ranks, None)
    _, hooked = _case(ranks, "fp16", collective="allreduce")
    numel = sum(g.numel() for g in plain[0]["grads"][0].values())
    for rank in range(world):
        for step in range(STEPS):
            for name, g in plain[rank]["grads"][step].items():
                torch.testing.assert_close(hooked[rank]["grads"][step][name], g, rtol=2e-3, atol=1e-4)
        rows = hooked[rank]["ledger"]
        assert {(r[1], r[2], r[3]) for r in rows} == {("allreduce", rank, -1)}
        assert sum(r[5] for r in rows) == sum(r[6] for r in rows) == 2 * numel * STEPS


def test_ranks_that_disagree_or_a_damaged_message_are_named(ranks):
    """Ranks that build the hook otherwise, or hold other parameters, are refused when it is
    registered; a damaged message names its sender, its tensor and the rank that decoded it."""
    world, granularity = _case(ranks, REFUSED[0][0], **REFUSED[0][1])
    for r, result in enumerate(granularity):
        assert result["error"] == ("CodecHook: rank(s) [1] set granularity='bucket', rank 0 granularity='tensor'; "
                                   "every rank must build the hook alike"), (r, result)
    _, names = _case(ranks, REFUSED[1][0], **REFUSED[1][1])
    assert all(r["error"].startswith("CodecHook: rank(s) [1] hold other parameters than rank 0 (differing: "
                                     "[('0.0.bias', (8,))") for r in names)
    _, flipped = _case(ranks, REFUSED[2][0], **REFUSED[2][1])
    for rank, result in enumerate(flipped):
        sender = (rank + 1) % world
        assert re.match(rf"CodecHook on rank {rank}, step 1: the message from rank {sender} for '[0-9.a-z]+': ",
                        result["error"]), result


def test_a_codec_that_needs_a_policy_is_refused_when_the_hook_is_made():
    for codec, named, needs in (("keycache", "keycache", "keys a policy chose"),
                                ("binquant(bits=0)", "binquant(bits=0, coder='raw')", "bit width from a policy")):
        with pytest.raises(ValueError, match=rf"codec={re.escape(named)} .*is not allowed: .*{needs}"):
            CodecHook(codec)


def test_bad_settings_name_the_parameter():
    with pytest.raises(ValueError, match="granularity='layer' is not allowed"):
        CodecHook("fp32", granularity="layer")
    with pytest.raises(ValueError, match="collective='allreduce' is not allowed with codec 'topk"):
        CodecHook("topk(ratio=0.01)", collective="allreduce")
    with pytest.raises(ValueError, match="collective='broadcast' is not allowed"):
        CodecHook("fp32", collective="broadcast")
    with pytest.raises(ValueError, match="seed=-1 is not allowed"):
        CodecHook("fp32", seed=-1)
    with pytest.raises(ValueError, match="messages='gpu' is not allowed"):
        CodecHook("fp32", messages="gpu")
    with pytest.raises(ValueError, match="model=Linear is not allowed"):
        CodecHook("fp32").register(torch.nn.Linear(2, 2))


@pytest.mark.long  # the example end to end (150 steps twice) in make test-long; the hook's tests in make test
def test_the_example_trains_like_plump_dp_in_one_process(tmp_path):
    """examples/ddp_mnist.py on 2 gloo processes against Plump-DP with 2 workers and the same
    push codec (the quickstart's recipe, 150 steps): the same test accuracy within 0.3
    points, and the same bytes."""
    from thinwire.experiment import runner
    from thinwire.papers.quickstart import quickstart_configs

    codec, steps = "ef(topk(ratio=0.01))", 150
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib"), "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr",
                          "127.0.0.1", "--master-port", str(free_port()), str(ROOT / "examples" / "ddp_mnist.py"),
                          codec, str(steps)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    found = re.findall(r"rank (\d): test accuracy ([\d.]+)%, sent ([\d,]+) bytes", run.stdout)
    assert len(found) == 2
    ddp_accuracy = float(found[0][1])
    ddp_bytes = sum(int(b.replace(",", "")) for _, _, b in found)
    saved = json.loads((tmp_path / "ddp_ledger_0.json").read_text())
    assert saved["steps"] == steps and sum(r[5] for r in saved["rows"]) == int(found[0][2].replace(",", ""))
    ((fp32, ratio, ledger),) = re.findall(r"rank 0: fp32 would send ([\d,]+) payload bytes: \S+ sends ([\d.]+)x fewer; "
                                          r"ledger in (\S+)", run.stdout)
    payload = sum(r[6] for r in saved["rows"])
    params = sum(p.numel() for p in build_model("mlp", (1, 28, 28), 10, 0).parameters())
    assert int(fp32.replace(",", "")) == 4 * params * (2 - 1) * steps  # every gradient as float32 to the other rank
    assert float(ratio) == pytest.approx(int(fp32.replace(",", "")) / payload, abs=0.05)
    assert ledger == str(tmp_path / "ddp_ledger_0.json")

    config = quickstart_configs(profile="default", workers=2, device="cpu", steps=steps)["top-k 1% + error feedback"]
    result = runner.run(config, root=tmp_path / "results", progress=False)
    plump_accuracy = 100 * [a for a in result.metrics["test_accuracy"] if a is not None][-1]
    assert abs(ddp_accuracy - plump_accuracy) <= 0.3, (ddp_accuracy, plump_accuracy)
    assert ddp_bytes == sum(result.metrics["push_bytes"])
