"""run(config) -> Result: build data, model, codecs and agents, train, measure, cache.

Resume: a run saves a checkpoint (beside where its result will go, written atomically)
every ``checkpoint_every`` steps, or every 60 s when that is 0; under torch.distributed
each rank saves its own part at the same step (``checkpoint.py``). A rerun of the same
config continues from it and gives the same numbers as an uninterrupted run (timings
aside). A finished run deletes its checkpoints.

Timing: ``compute_seconds`` of a step is the measured time of the local agents' work
(gradients, encoding, decoding) divided by the number of local agents this process
simulates, plus the center agent's measured time: the step time of a cluster whose
workers run in parallel. ``comm_seconds`` is the network model applied to the step's
ledger rows. Their sum gives the modelled images/s. ``wall_seconds`` is the measured
time of the whole step (the slowest rank's): on torch.distributed the real step time,
in one process the time to simulate every agent one after another.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

from ..algorithms import ALGORITHMS
from ..algorithms.contract import check_algorithm
from ..algorithms.report import CODEC_PARTS, StepReport, Tally
from ..engine import team
from ..comm import InProcessTransport, Ledger, Transport, network_preset
from ..comm.transport import phase_spans
from ..datasets import BatchStream, load_dataset, partition, prepare
from ..models import build_model, evaluate
from ..paths import results_dir
from ..seed_tree import SeedTree
from .checkpoint import Checkpoint, DamagedCheckpoint, common_step, set_aside
from .config import RunConfig
from .device import resolve_device, synchronize
from .memory import check_fits, check_writable
from .result import DamagedResult, Result, remove_stale_temporaries
from .tracking import log_run, tracking_uri
from .timing import is_measured, median_when_busy, provenance, step_medians, untimed, warmup_steps
from .warning import warn


def result_folder(config: RunConfig, backend: str = "inprocess", root=None) -> Path:
    """results/<config hash>-<backend>/, with a ``-cuda`` suffix for runs on a GPU."""
    gpu = resolve_device(config.device).type == "cuda"
    return Path(root or results_dir()) / f"{config.key()}-{backend}{'-cuda' if gpu else ''}"


def cached(config: RunConfig, backend: str = "inprocess", root=None) -> Result | None:
    """The finished result of ``config``, or None. A result that cannot be read (truncated,
    garbage, a missing or damaged ledger) is reported by name and recomputed."""
    folder = result_folder(config, backend, root)
    if not (folder / "result.json").exists():
        return None
    remove_stale_temporaries(folder)  # a cache hit tidies what an interrupted writer left too
    try:
        return priced(Result.load(folder), config)
    except DamagedResult as damaged:
        warn(f"{damaged}; the run will be recomputed")
        return None


def priced(result: Result, config: RunConfig) -> Result:
    """``result`` under ``config`` (the same run but for its network), its communication
    priced on ``config.network``: the network is not part of the results key."""
    if result.config.network == config.network:
        return result
    metrics = {**result.metrics, "comm_seconds": network_preset(config.network).seconds_per_step(
        result.ledger, result.steps).tolist()}
    return Result(config, result.backend, metrics, _summarize(config, metrics), result.ledger, result.provenance)


def run(config: RunConfig, transport: Transport | None = None, backend: str = "inprocess",
        root=None, reuse: bool = True, progress: bool | None = None, checkpoint_every: int = 0,
        retime: bool = False, track: str | None = None) -> Result:
    """Run ``config`` (or load its finished result) and return the Result.

    ``retime``: a cached result gets its times taken again (the run is repeated, its ledger
    and losses checked against the cached ones, and only the times and provenance replaced).
    ``track``: log the result to MLflow ("1": the local mlruns/ store, or a tracking URI; by
    default ``$THINWIRE_MLFLOW``; ``tracking.py``).
    With a distributed ``transport`` every rank must call this; rank 0 writes the result.
    """
    device = resolve_device(config.device)  # a bad device fails here, before any data loads
    team.setting()  # so does a bad THINWIRE_KERNEL_THREADS
    uri = tracking_uri(track)  # and tracking asked for without MLflow installed
    folder = result_folder(config, backend, root)
    if reuse and (hit := cached(config, backend, root)) is not None:
        if retime:
            return _tracked(_retimed(hit, transport, backend, progress, device, root), uri)
        hit.folder, hit.reused = folder, True
        return _tracked(hit, uri)
    transport = transport or InProcessTransport()
    fresh = not folder.exists()
    check_writable(folder)  # found now, not when a long run tries to save its result
    try:
        check_fits(config, device, None if transport.world_size == 1 else max(1, config.workers // transport.world_size))
        if transport.rank == 0:
            remove_stale_temporaries(folder)
        checkpoint = Checkpoint(folder, config.key(), checkpoint_every, rank=transport.rank,
                                world_size=transport.world_size)
        try:
            result = _train(config, transport, backend, progress, checkpoint, device)
        except DamagedCheckpoint as damaged:  # every rank raises it together; start again, fresh
            if damaged.path is not None:
                set_aside(damaged.path, str(damaged.__cause__ or damaged))
            result = _train(config, transport, backend, progress, checkpoint, device)
    except BaseException:
        if fresh:  # a run that ended before it saved anything leaves no folder behind
            _remove_if_empty(folder)
        raise
    if transport.rank == 0:
        result.save(folder)
        result.folder = folder
    transport.barrier()  # the result is saved before any rank drops the checkpoint it came from
    checkpoint.remove()
    return _tracked(result, uri)


def _tracked(result: Result, uri: str | None) -> Result:
    """``result``, logged to MLflow at ``uri`` (by the rank that saved it) when one is given."""
    if uri is not None and result.folder is not None:
        try:
            log_run(result, uri)
        except Exception as exc:  # the result is saved: a tracking server's failure loses nothing
            warn(f"could not log the run to MLflow at {uri} ({type(exc).__name__}: {exc}); the result is in "
                 f"{result.folder}")
    return result


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:  # not empty (a checkpoint to resume from), or already gone
        pass


def _retimed(old: Result, transport: Transport | None, backend: str, progress: bool | None,
              device: torch.device, root) -> Result:
    """``old`` with the times of a fresh repetition of its run (same bytes and losses)."""
    transport = transport or InProcessTransport()
    new = _train(old.config, transport, backend, progress, None, device)
    if new.ledger.rows() != old.ledger.rows() or new.metrics["loss"] != old.metrics["loss"]:
        raise RuntimeError(f"retime of {old.config.key()}: the repeated run sent other bytes or trained to other "
                           "losses than the cached one (the code changed since it ran); rerun it with reuse=False")
    metrics = {**untimed(old.metrics), **{k: v for k, v in new.metrics.items() if is_measured(k)}}
    result = Result(old.config, old.backend, metrics, _summarize(old.config, metrics), old.ledger, new.provenance)
    if transport.rank == 0:
        result.folder = result_folder(old.config, backend, root)
        result.save(result.folder)
    transport.barrier()
    return result


def _resume(checkpoint: Checkpoint, transport: Transport) -> dict | None:
    """The state to continue from: on torch.distributed, the newest step that every rank
    saved (all ranks or none)."""
    if transport.world_size == 1:
        return checkpoint.load()
    while (step := common_step(transport.all_gather_object(checkpoint.steps()))) is not None:
        saved = checkpoint.load(step)  # a damaged file is set aside: the next try skips that step
        if all(transport.all_gather_object(saved is not None)):
            break
    else:
        return None
    if transport.rank == 0:
        print(f"thinwire: resuming {transport.world_size} ranks from the checkpoint at step {step}",
              file=sys.stderr, flush=True)
    return saved


def _apply(saved: dict, algo, streams: dict, transport: Transport, path: Path) -> tuple[list, int]:
    """Load a checkpoint's state into the run; (rows, step) to continue from. A state that
    does not fit raises DamagedCheckpoint on every rank (the agents may be half loaded)."""
    error = None
    try:
        algo.load_state_dict(saved["algorithm"])
        for k, stream in streams.items():
            stream.load_state_dict(saved["streams"][k])
        ledger = Ledger.from_arrays(saved["ledger"])
    except Exception as e:  # a checkpoint with this key whose contents do not fit this run
        error = e
    if not all(transport.all_gather_object(error is None)):
        damaged = DamagedCheckpoint(path if error is not None else None, f"does not fit the run: {error!r}")
        raise damaged from error
    transport.ledger = ledger
    return saved["rows"], saved["step"]


def _prepare_data(config: RunConfig, device: torch.device, seeds: SeedTree):
    data = load_dataset(config.dataset)
    images, labels = data.train_images, data.train_labels
    if config.train_samples:
        keep = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seeds.seed("run", None, "subset")))
        keep = keep[: config.train_samples]
        images, labels = images[keep], labels[keep]
    train_x = prepare(images, data.mean, data.std, config.crop, config.standardize).to(device)
    test_x = prepare(data.test_images[: config.eval_samples], data.mean, data.std, config.crop,
                     config.standardize).to(device)
    return data, train_x, labels.to(device), test_x, data.test_labels[: config.eval_samples].to(device)


def _train(config: RunConfig, transport: Transport, backend: str, progress: bool | None,
           checkpoint: Checkpoint | None, device: torch.device) -> Result:
    taken = provenance()  # before the work: the load average says how busy the machine was
    seeds = SeedTree(config.seed)  # the runner's generators; each algorithm derives its own from config.seed
    torch.manual_seed(seeds.seed("run", None, "global"))  # nothing should draw from it; this only pins stray use
    data, train_x, train_y, test_x, test_y = _prepare_data(config, device, seeds)
    model = build_model(config.model, config.input_shape, data.num_classes, seeds.seed("run", None, "init"),
                        init=config.init).to(device)
    shards = partition(len(train_y), config.workers, seeds.seed("run", None, "partition"), config.sampling)
    algo = ALGORITHMS[config.algorithm].from_config(model, transport, config, len(shards[0]) // config.batch_size)
    check_algorithm(algo)
    black = -torch.tensor(data.mean) / torch.tensor(data.std)  # a black pixel after normalisation: the padding
    streams = {k: BatchStream(shards[k], config.batch_size, seeds.seed("worker", k, "batches"),
                              shuffle=config.sampling == "shuffled", augment=config.augment,
                              augment_seed=seeds.seed("worker", k, "augment"), fill=black)
               for k in algo.local_workers}
    batches_per_epoch = len(shards[0]) // config.batch_size

    rows, start = [], 0
    saved = _resume(checkpoint, transport) if checkpoint is not None else None
    if saved is not None:
        rows, start = _apply(saved, algo, streams, transport, checkpoint.path(saved["step"]))

    show = progress if progress is not None else os.environ.get("THINWIRE_PROGRESS", "1") == "1"
    bar = _progress_bar(config, start) if show and transport.rank == 0 else None

    for step in range(start, config.steps):
        if bar is not None:
            bar.update(1)
        t0 = time.perf_counter()
        idx = [streams[k].next_indices().to(device) for k in algo.local_workers]
        x = (torch.stack([streams[k].augmented(train_x[i]) for k, i in zip(algo.local_workers, idx)]) if idx
             else train_x[:0])
        y = torch.stack([train_y[i] for i in idx]) if idx else train_y[:0]
        local = algo.step(step, x, y)
        synchronize(device)
        local.extra["wall_seconds"] = time.perf_counter() - t0
        # an algorithm that may end early (a time budget) says so on one rank: all must agree
        stop = getattr(algo, "stops_early", False) and any(transport.all_gather_object(local.stop))
        evaluated = (step + 1) % config.eval_every == 0 or step + 1 == config.steps or stop
        params = algo.global_params() if evaluated else None  # may be collective: every rank calls it
        if params is not None:
            local.extra["test_loss"], local.extra["test_accuracy"] = evaluate(model, params, test_x, test_y,
                                                                              loss=config.loss)
        due = checkpoint is not None and step + 1 < config.steps and not stop and checkpoint.due(step + 1)
        gathered = transport.all_gather_object((local, due))  # rank 0's ``due`` decides for all
        rows.append(_combine(step, [part for part, _ in gathered], batches_per_epoch))
        if bar is not None:
            _show(bar, rows)
        if gathered[0][1]:
            checkpoint.save({"step": step + 1, "rows": rows, "algorithm": algo.state_dict(),
                             "streams": {k: s.state_dict() for k, s in streams.items()},
                             "ledger": transport.ledger.to_arrays()})
        if stop:
            break
    if bar is not None:
        bar.refresh()  # the last step and its numbers, however short the run

    steps = len(rows)  # config.steps, or fewer when the algorithm ended the run
    ledger = transport.merged_ledger()
    network = network_preset(config.network)
    comm = network.seconds_per_step(ledger, steps)
    keys = list(dict.fromkeys(k for r in rows for k in r))
    metrics = {k: [r.get(k) for r in rows] for k in keys}
    for name, values in ledger.per_step(steps, algo.phases, algo.roles).items():
        metrics[name] = values.tolist()
    metrics["comm_seconds"] = comm.tolist()
    if transport.world_size > 1:  # measured: the network's time per phase (same-host clocks; see phase_spans)
        spans = phase_spans(transport.all_gather_object(transport.timeline))
        for phase in dict.fromkeys([*algo.phases, *(p for _, p in spans)]):
            metrics[f"{phase}_span_seconds"] = [spans.get((step, phase)) for step in range(steps)]
    return Result(config, backend, metrics, _summarize(config, metrics), ledger, taken)


_BAR = None  # one bar per process, reused by every run: one widget in a notebook, a few lines under papermill


def _progress_bar(config: RunConfig, start: int):
    """The process's progress bar, reset for this run (tqdm.auto: a widget in Jupyter, text
    on a terminal)."""
    global _BAR
    from tqdm.auto import tqdm
    label = f"{config.algorithm} {config.push_codec} K={config.workers}"
    if _BAR is None:
        _BAR = tqdm(total=config.steps, desc=label, leave=True, mininterval=1.0)
    else:
        _BAR.reset(total=config.steps)
        _BAR.set_description(label)
    _BAR.update(start)
    return _BAR


def _show(bar, rows: list[dict]) -> None:
    """The bar's note: the last step's training loss and the last test accuracy."""
    tested = next((r["test_accuracy"] for r in reversed(rows) if r.get("test_accuracy") is not None), None)
    loss = rows[-1].get("loss")
    bar.set_postfix_str(", ".join([*([f"loss {loss:.4g}"] if loss is not None else []),
                                   *([f"accuracy {tested:.4f}"] if tested is not None else [])]), refresh=False)


def _combine(step: int, parts: list[StepReport], batches_per_epoch: int) -> dict:
    samples = sum(p.samples for p in parts)
    compute = (max(p.worker_seconds / max(1, p.local_workers) for p in parts)
               + max(p.server_seconds for p in parts))
    codec = {f"{side}_{part}_seconds": max(getattr(getattr(p, f"{side}_codec"), part)
                                           / (max(1, p.local_workers) if side == "worker" else 1) for p in parts)
             for side in ("worker", "server") for part in CODEC_PARTS}
    sides = {f"{side}_codec_seconds": sum(codec[f"{side}_{part}_seconds"] for part in CODEC_PARTS)
             for side in ("worker", "server")}
    phases = dict.fromkeys(k for p in parts for k in p.exchange_seconds)
    exchange = {f"{phase}_exchange_seconds": max(p.exchange_seconds.get(phase, 0.0) for p in parts)
                for phase in phases}
    test = next((p for p in parts if p.extra.get("test_loss") is not None), None)
    tally = Tally()
    for p in parts:
        tally.merge(p.tally)
    trained = [p for p in parts if p.samples]
    return {
        "step": step,
        "epoch": (step + 1) / batches_per_epoch,
        "loss": sum(p.loss_sum for p in trained) / sum(max(1, p.local_workers) for p in trained) if trained else None,
        "train_accuracy": sum(p.correct for p in parts) / samples if samples else None,
        "test_loss": test.extra["test_loss"] if test else None,
        "test_accuracy": test.extra["test_accuracy"] if test else None,
        "compute_seconds": compute,
        "codec_seconds": sides["worker_codec_seconds"] + sides["server_codec_seconds"],
        "frame_seconds": codec["worker_frame_seconds"] + codec["server_frame_seconds"],  # inside codec_seconds
        **sides,
        **codec,
        **exchange,
        "wall_seconds": max(p.extra["wall_seconds"] for p in parts),
        **tally.metrics(),
        **_merge_extra(parts),
    }


RUNNER_EXTRA = ("test_loss", "test_accuracy", "wall_seconds")


def _merge_extra(parts: list[StepReport]) -> dict:
    """Algorithm-specific measurements (``extra``): each rank's are means over its local
    agents, so the global value is their mean weighted by local agents."""
    sums, weights = {}, {}
    for p in parts:
        w = max(1, p.local_workers)
        for k, v in p.extra.items():
            if k in RUNNER_EXTRA:
                continue
            sums[k] = sums.get(k, 0.0) + w * v
            weights[k] = weights.get(k, 0) + w
    return {k: sums[k] / weights[k] for k in sums}


def _summarize(config: RunConfig, m: dict) -> dict:
    """Run totals. Bytes: ``bytes`` (wire), ``payload_bytes`` (what a paper counts) and
    ``framing_bytes``; per phase ``<phase>_bytes`` / ``<phase>_payload`` /
    ``<phase>_messages``, per sender role ``<role>_sent_...``. Per phase statistics
    (``<phase>_density``, ``_tied``, ``_bits``, ``_sent``) are means over the steps that
    reported them. Times are medians after a warm-up (``timing.py``): ``<name>_per_step``,
    and the run's ``compute_seconds``, ``codec_seconds`` and ``wall_seconds`` are that
    median times the steps (a time spent on some steps only: its median per busy step times
    their share, ``timing.median_after_warmup``), and ``codec_seconds_per_exchange`` the
    median of the steps that encoded or decoded anything; ``frame_seconds``, the part of the
    codec time spent framing and checksumming messages (``engine/wire/clock.py``), alike;
    communication is the network model over the whole ledger."""
    steps = len(m["loss"])  # the steps run: config.steps unless the algorithm ended the run early
    medians = step_medians(m)
    compute = medians["compute_seconds_per_step"] * steps
    comm = float(np.sum(m["comm_seconds"]))
    wall = medians["wall_seconds_per_step"] * steps
    images = config.workers * config.batch_size * steps
    counted = [k for k in m if k.endswith(("_bytes", "_payload", "_messages")) or k in ("bytes", "messages")]
    summary = {k: int(np.sum(m[k])) for k in counted}
    stats = [k for k in m if k.endswith(("_density", "_tied", "_bits", "_entropy", "_sent"))]
    summary.update({k: _mean_or_none(m[k]) for k in stats})
    evaluated = [v for v in m["test_accuracy"] if v is not None]
    losses = [v for v in m["test_loss"] if v is not None]
    train = [v for v in m["loss"][-max(1, config.eval_every):] if v is not None]
    summary.update({
        "final_loss": losses[-1] if losses else None,
        "final_accuracy": evaluated[-1] if evaluated else None,
        "final_train_loss": float(np.mean(train)) if train else None,
        "bytes_per_step": float(np.mean(m["bytes"])),
        "payload_per_step": float(np.mean(m["payload_bytes"])),
        "framing_per_step": float(np.mean(m["framing_bytes"])),
        **medians,
        "timing_warmup_steps": warmup_steps(steps),
        "compute_seconds": compute,
        "codec_seconds": medians["codec_seconds_per_step"] * steps,
        "codec_seconds_per_exchange": median_when_busy(m["codec_seconds"]),
        "frame_seconds": medians.get("frame_seconds_per_step", 0.0) * steps,
        "comm_seconds": comm,
        "images_per_second_modelled": images / (compute + comm) if compute + comm > 0 else None,
        "wall_seconds": wall,
        "images_per_second_measured": images / wall if wall > 0 else None,
    })
    return summary


def _mean_or_none(values: list) -> float | None:
    known = [v for v in values if v is not None]
    return float(np.mean(known)) if known else None
