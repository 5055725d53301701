"""Does scale change which method saves more communication time? Slim-DP's and QSGD's
codec work per round measured alone, on vectors of the paper's sizes, and priced against
the round's transfer on the same network model as the runs.

The runs measure codec time on a 269k-parameter MLP; the paper's models have 13M
(GoogLeNet) and 140M (VGG-16) parameters, its MNIST-sized MLP 1.86M, on GPUs. Whether the
ratio of codec work to transfer changes with N is a question this module measures on this
machine's CPU (it says nothing about a GPU):
1. per message: Slim-DP's index generation (``core_explorer``: the core's top-k every q
   rounds, the explorer every round) and the rest (``keycache``: extraction into the
   message, then the receiver's merge), one refresh cycle of q rounds averaged; QSGD's
   encode and decode (8 bits, bucket 512, Quant-DP's); float32's encode and decode
   (Plump-DP's);
2. per round at K local agents, as the runs count it (``experiment/runner.py``): a local
   agent's push encode and pull merge, and the center's K push decodes and one pull
   encode; Slim-DP selects twice (the local agent on its update, the center on the model);
3. transfer: the K pushes arrive at the center and the broadcast leaves it, each phase at
   link speed plus latency (``comm/network.py``);
4. saved time = 1 - (transfer + codec) / Plump-DP's (transfer + codec), with index
   generation counted (``ours``) or left out (``paper``, Sec. 3.4.2).
Times are medians over repeats after a warm-up: per refresh cycle for Slim-DP (its mean per
round), per message otherwise. The inputs are Gaussian vectors, two of them alternating,
so a message never repeats the last one.
"""

from __future__ import annotations

import itertools
import time
from typing import TYPE_CHECKING

import numpy as np
import torch

from ...codecs import CodecState, make_codec
from ...comm import network_preset
from ...policies import CoreExplorer
from .analysis import ACCOUNTINGS
from .runs import PLUMP, QUANT, slim_label

if TYPE_CHECKING:
    import pandas as pd

PAPER_SIZES = {1_863_690: "1.86M, MLP 784-1024-1024-10 (the paper profile)", 13_000_000: "13M, GoogLeNet's",
               140_000_000: "140M, VGG-16's"}


def size_label(n: int, run_n: int | None = None) -> str:
    """How the scale table names a vector of ``n`` values."""
    if n == run_n:
        return f"{n / 1e6:.2f}M, the runs' model"
    return PAPER_SIZES.get(n, f"{n:,}")
QSGD_SPEC = "qsgd(bits=8, bucket=512)"


def _median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def dense_work(spec: str, inputs: list[torch.Tensor], repeats: int) -> dict:
    """Encode and decode seconds (medians) and message bytes of a codec without a policy."""
    codec, state, out = make_codec(spec), CodecState(0), torch.empty_like(inputs[0])
    codec.warm_up()
    messages = [codec.encode(x, state, "w") for x in inputs]  # warm-up, and messages to decode
    turn = itertools.cycle(inputs)
    encode = _median_seconds(lambda: codec.encode(next(turn), state, "w"), repeats)
    decode = _median_seconds(lambda: codec.decode(messages[0], None, "w", out=out), repeats)
    return {"select": 0.0, "encode": encode, "decode": decode, "bytes": float(len(messages[0]))}


def slim_work(alpha: float, epsilon: float, refresh: int, inputs: list[torch.Tensor], cycles: int,
              seed: int = 0) -> dict:
    """Per-message seconds of Slim-DP's index generation (``select``), extraction
    (``encode``) and merge (``decode``), and its bytes, each the mean over a refresh cycle
    of ``refresh`` rounds; the median over ``cycles`` cycles after one warm-up cycle."""
    policy = CoreExplorer(alpha, epsilon, refresh, "exact", seed=seed)
    codec = make_codec("keycache")
    sender, receiver = CodecState(seed), CodecState(seed + 1)
    into = inputs[0].clone()
    means, step = [], 0
    for cycle in range(cycles + 1):
        spent = {"select": 0.0, "encode": 0.0, "decode": 0.0, "bytes": 0.0}
        for _ in range(refresh):
            x = inputs[step % 2]
            t0 = time.perf_counter()
            decision = policy.decide(step, "w", x)
            t1 = time.perf_counter()
            message = codec.encode(x, sender, "w", decision)
            t2 = time.perf_counter()
            codec.merge(message, into, receiver, "w")
            t3 = time.perf_counter()
            for part, seconds in (("select", t1 - t0), ("encode", t2 - t1), ("decode", t3 - t2)):
                spent[part] += seconds / refresh
            spent["bytes"] += len(message) / refresh
            step += 1
        if cycle:  # the first cycle warms up
            means.append(spent)
    return {part: float(np.median([m[part] for m in means])) for part in means[0]}


def codec_work(n: int, settings, refresh: int = 10, cycles: int = 3, repeats: int = 5, seed: int = 0) -> dict:
    """``{method: per-message work}`` at ``n`` values: Plump-DP, Quant-DP and Slim-DP at
    each (alpha, epsilon) of ``settings``."""
    generator = torch.Generator().manual_seed(seed)
    inputs = [torch.randn(n, generator=generator) for _ in range(2)]
    work = {PLUMP: dense_work("fp32", inputs, repeats), QUANT: dense_work(QSGD_SPEC, inputs, repeats)}
    for alpha, epsilon in settings:
        work[slim_label(alpha, epsilon)] = slim_work(alpha, epsilon, refresh, inputs, cycles, seed)
    return work


def round_seconds(work: dict, k: int, network: str, accounting: str = "ours") -> dict:
    """(transfer, codec) seconds of one round at ``k`` local agents (module docstring, 2-3)."""
    if accounting not in ACCOUNTINGS:
        raise ValueError(f"accounting={accounting!r} is not allowed: accounting must be one of {list(ACCOUNTINGS)}")
    pushes = [(agent, k, work["bytes"]) for agent in range(k)]  # K local agents -> the center (id K)
    phase = network_preset(network).phase_seconds(pushes)               # the broadcast back costs the same
    select = 2 * work["select"] if accounting == "ours" else 0.0
    return {"transfer": 2 * phase, "codec": select + 2 * work["encode"] + (k + 1) * work["decode"]}


def saved_time(work: dict, plump: dict, k: int, network: str, accounting: str = "ours") -> float:
    mine, base = round_seconds(work, k, network, accounting), round_seconds(plump, k, network, accounting)
    return 1.0 - (mine["transfer"] + mine["codec"]) / (base["transfer"] + base["codec"])


def scale_table(works: dict, workers, networks) -> pd.DataFrame:
    """One row per (N, method): the measured work per message, and per (K, network,
    accounting) the saved time against Plump-DP at the same N. ``works``: ``{(label, n):
    codec_work(n, ...)}``."""
    import pandas as pd
    rows = {}
    for (label, n), work in works.items():
        plump = work[PLUMP]
        for method, w in work.items():
            if method == PLUMP:
                continue
            row = {"N": n, "index generation ms": 1e3 * w["select"],
                   "extraction + merge ms": 1e3 * (w["encode"] + w["decode"]), "bytes / Plump-DP's": w["bytes"] / plump["bytes"]}
            for k in workers:
                for network in networks:
                    for accounting in ACCOUNTINGS:
                        name = f"saved K={k} {network}" + (", paper's accounting" if accounting == "paper" else "")
                        row[name] = saved_time(w, plump, k, network, accounting)
            rows[(label, method)] = row
    table = pd.DataFrame(rows).T
    table.index.names = ["size", "method"]
    return table


def scale_ordering(table: pd.DataFrame) -> pd.DataFrame:
    """For every size and saved-time column: the method that saves the most, and whether
    it is Quant-DP or a Slim-DP setting."""
    import pandas as pd
    columns = [c for c in table.columns if c.startswith("saved ")]
    rows = {}
    for size in table.index.get_level_values("size").unique():
        part = table.loc[size]
        rows[size] = {c: part[c].astype(float).idxmax() for c in columns}
    return pd.DataFrame(rows).T
