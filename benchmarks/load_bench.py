"""Every codec's encode + decode of 25M float32 values, alone and with a competing CPU
load (``competing_load.py``: two torch processes multiplying matrices, each with its own
thread pool), and the slowdown between the two. Target: no codec slows down more than
``TARGET`` times.

What to expect: with two loads of two threads each on two cores, the scheduler gives a
thread about a third of a core, so even perfectly parallel work runs about 3x slower and
a single thread about 2.5x. A hot path made of many short multi-threaded operations does
far worse (each one ends at a barrier where a descheduled thread costs a time slice);
one that is a few large operations or one compiled kernel stays near the fair share.
Each message carries a fresh gradient (two alternate) and the sender's state carries
over, as in training; senders encode into the message they sent before, and receivers
decode with their own state into a reused buffer.

Two ways: ``run`` pauses the loads between measurements, so each codec's pair (alone, with
load) sees the same machine; ``run_continuous`` measures every codec alone first, then
starts the loads and leaves them running through every measurement with load, as on a
shared machine, where the loads' caches, frequencies and thread pools are never at rest.
Either way a pair is one sample of a scheduler that hands out slices of a few ms: over 8
rounds of pairs, quantize(8)'s slowdown ranged from 2.35x to 3.11x (median 2.84x). So
each way measures ``ROUNDS`` rounds, each over every codec, and a codec's slowdown is the
median of its rounds' (all of them are kept, as ``slowdowns``). Three rounds were too few:
at f5fb806 one ``make bench`` put three codecs above 3x with the loads left running (fp16
3.24, quantize(8) 3.11, chain(topk, quantize(8)) 3.19) where the previous run, minutes
before, had none; nine rounds of those codecs and fp32 right after gave medians of 2.10 to
2.67 each way, with single rounds from 1.60 to 3.22.

The OpenMP wait policy decides the loaded numbers. numba's compiled kernels run on the
OpenMP runtime torch loads at import (torch opens ``libtorch_global_deps``, which needs its
libgomp, with ``RTLD_GLOBAL``, so numba's ``omppool`` binds ``GOMP_parallel`` to torch's
libgomp and not to the system's it loads itself: ``LD_DEBUG=bindings`` shows it), and that
runtime reads ``OMP_WAIT_POLICY`` once, when torch is imported. Left unset, libgomp's
threads spin 300,000 times before they sleep after every parallel region (its
``GOMP_SPINCOUNT`` default); under contention the spinning threads spend the process's
share of the cores waiting instead of working. ``make bench`` runs with ``PASSIVE``
(``run.py`` sets it before importing torch, unless the environment chose a policy) and
measures the loads-left-running case again in a fresh process under torch's default
(``wait_policy.measure("default", ...)``), so the README shows both. ``wait_policy.py`` is
the ablation behind this: the policy set for the whole process, for torch's runtime only,
and for the second libgomp numba loads but does not run on (its results:
``wait_policy.json``, summarized in the README).
"""

from __future__ import annotations

import statistics

import torch

from competing_load import CompetingLoad, Timing, slowdown, timing
from thinwire.codecs import CODECS, CodecState, make_codec
from thinwire.policies import CoreExplorer

N = 25_000_000
TARGET = 3.0
ROUNDS = 7  # pairs per codec, spread over the run; the slowdown is their median
SPECS = ["fp32", "fp16", "bf16", "quantize(bits=1)", "quantize(bits=8)", "quantize(bits=12)", "topk(ratio=0.01)",
         "graddrop(ratio=0.99)", "graddrop(ratio=0.99, bits=1)", "binquant(bits=5)",
         "binquant(bits=5, coder='huffman')", "binquant(bits=5, coder='ans')", "qsgd(bits=8)", "keycache",
         "ef(topk(ratio=0.01))", "chain(topk(ratio=0.01), quantize(bits=8))", "sized(binquant(bits=5), min_numel=1000)",
         "colquant(bits=4)"]


def covered() -> set[str]:
    """The registered codec names ``SPECS`` exercises (the outermost name of each spec)."""
    return {make_codec(spec).name for spec in SPECS}


def round_trip(spec: str, grads: list[torch.Tensor], out: torch.Tensor):
    """One encode + decode per call. The sender encodes into the message it sent before
    (``encode(..., out=)``), as a training round does (``algorithms/round.py``) and as the
    codec table's encodes do. ``keycache`` sends what a policy chose: Slim-DP's (0.3, 0.15)
    core and explorer, the core refreshed every 10 messages (its selection and the explorer
    draw are timed with it)."""
    codec, sender, receiver = make_codec(spec), CodecState(0), CodecState(0)
    policy = CoreExplorer(alpha=0.3, epsilon=0.15, refresh=10) if codec.name == "keycache" else None
    step, sent = [0], [None]

    def once():
        g = grads[step[0] % 2]
        decision = policy.decide(step[0], "x", g) if policy is not None else None
        message = sent[0] = codec.encode(g, sender, "x", decision, out=sent[0])
        codec.decode(message, receiver, "x", out=out)
        step[0] += 1
    return once


def _row(spec: str, n: int, alone: list[Timing], loaded: list[Timing]) -> dict:
    """One codec's result over the rounds: median times, and the median of the rounds'
    slowdowns (each round's pair, alone and with load, is one sample of the machine). The
    slowdown is the ratio of the cores the calls kept busy, alone and with load, times the
    growth of their CPU time per call under load; the medians of both are kept."""
    ratios = [b.seconds / a.seconds for a, b in zip(alone, loaded)]
    mid = statistics.median(ratios)
    return {"codec": spec, "values": n, "alone_s": statistics.median(t.seconds for t in alone),
            "loaded_s": statistics.median(t.seconds for t in loaded), "slowdown": mid, "slowdowns": ratios,
            "rounds": len(ratios), "target": TARGET, "met": mid <= TARGET,
            "cores_alone": statistics.median(t.cores for t in alone),
            "cores_loaded": statistics.median(t.cores for t in loaded),
            "cpu_growth": statistics.median(b.cpu_seconds / a.cpu_seconds for a, b in zip(alone, loaded))}


def _rounds(n: int, rounds: int, one_round) -> list[dict]:
    """``rounds`` calls of ``one_round(load, trip, alone, loaded)``, which measures every
    codec (``trip(spec)``: its round trip) and appends its timings to ``alone[spec]`` and
    ``loaded[spec]``; then each codec's row."""
    gen = torch.Generator().manual_seed(0)
    grads, out = [torch.randn(n, generator=gen) for _ in range(2)], torch.empty(n)
    alone: dict[str, list[Timing]] = {spec: [] for spec in SPECS}
    loaded: dict[str, list[Timing]] = {spec: [] for spec in SPECS}
    with CompetingLoad(processes=2) as load:
        for _ in range(rounds):
            one_round(load, lambda spec: round_trip(spec, grads, out), alone, loaded)
    return [_row(spec, n, alone[spec], loaded[spec]) for spec in SPECS]


def run(n: int = N, repeats: int = 7, rounds: int = ROUNDS) -> list[dict]:
    """Each round measures every codec's pair, alone then with the loads resumed."""
    missing = {name for name, cls in CODECS.items() if cls.__module__.startswith("thinwire.")} - covered()
    if missing:
        raise RuntimeError(f"load_bench.SPECS covers no spec of codec(s) {sorted(missing)}")

    def paired(load, trip, alone, loaded):
        for spec in SPECS:
            a, b = slowdown(trip(spec), load, repeats)
            alone[spec].append(a)
            loaded[spec].append(b)
    return _rounds(n, rounds, paired)


def run_continuous(n: int = N, repeats: int = 7, rounds: int = ROUNDS) -> list[dict]:
    """Each round measures every codec alone, then every codec with the loads running the
    whole time."""
    def phases(load, trip, alone, loaded):
        for spec in SPECS:
            alone[spec].append(timing(trip(spec), repeats))
        with load.running():
            for spec in SPECS:
                loaded[spec].append(timing(trip(spec), repeats))
    return _rounds(n, rounds, phases)
