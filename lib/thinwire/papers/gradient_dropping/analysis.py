"""The numbers the gradient-dropping notebook reports, computed from results (tested)."""

from __future__ import annotations

import numpy as np

from ...comm import network_preset


def total_payload(result) -> int:
    """Payload bytes over the whole run, pushes and pulls (self-addressed excluded): what
    the paper counts; the framing (headers, checksums) is ``summary["framing_bytes"]``."""
    return result.summary["push_payload"] + result.summary["pull_payload"]


def data_reduction(dense, sparse) -> float:
    """How many times fewer payload bytes ``sparse`` sent than ``dense`` over the same steps."""
    return total_payload(dense) / total_payload(sparse)


def modelled_images_per_second(result, network: str) -> float:
    """Measured compute + communication modelled on ``network`` (from the run's ledger)."""
    config = result.config
    comm = network_preset(network).seconds_per_step(result.ledger, config.steps).sum()
    images = config.workers * config.batch_size * config.steps
    return images / (result.summary["compute_seconds"] + comm)


def density_error(result, ratio: float) -> float:
    """|mean achieved push density - target| / target, over the run's pushes."""
    target = 1 - ratio
    return abs(result.summary["push_density"] - target) / target


def communication_share(result, network: str) -> float:
    """Modelled communication time / (compute + communication) on ``network``."""
    comm = network_preset(network).seconds_per_step(result.ledger, result.config.steps).sum()
    return float(comm / (result.summary["compute_seconds"] + comm))


def final_accuracy_window(result, evaluations: int = 3) -> float:
    """Mean test accuracy over the last ``evaluations`` evaluations (less noisy than the last one)."""
    values = [v for v in result.metrics["test_accuracy"] if v is not None]
    return float(np.mean(values[-evaluations:]))
