"""The device setting: resolution, a clear error for a missing GPU, and the same path on CPU."""

import pytest
import torch

from thinwire.experiment import RunConfig, run
from thinwire.experiment import runner
from thinwire.experiment.device import resolve_device

TINY = dict(model="mlp(hidden=(16,))", steps=4, train_samples=512, eval_every=2, eval_samples=200, batch_size=8)


def test_auto_and_cpu_resolve_to_the_cpu_without_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    assert resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match="device='cuda' is not allowed on this machine"):
        resolve_device("cuda")


def test_bad_device_names_the_parameter():
    with pytest.raises(ValueError, match="device='tpu' is not allowed"):
        RunConfig(device="tpu")


def test_cuda_without_a_gpu_fails_before_any_data_loads(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)

    def no_data(*args, **kwargs):
        raise AssertionError("data loaded before the device was checked")

    monkeypatch.setattr(runner, "load_dataset", no_data)
    with pytest.raises(ValueError, match="device='cuda'"):
        run(RunConfig(**TINY, device="cuda"), root=tmp_path)


@pytest.mark.parametrize("algorithm,codec", [("plump_dp", "ef(topk(ratio=0.1))"), ("sharded_ps", "graddrop(ratio=0.9)")])
def test_explicit_cpu_is_the_auto_path_here(tmp_path, algorithm, codec):
    if torch.cuda.is_available():
        pytest.skip("auto picks the GPU on this machine")
    kwargs = dict(TINY, algorithm=algorithm, push_codec=codec)
    if algorithm == "sharded_ps":
        kwargs.update(optimizer="adagrad", lr=0.01, pull_mode="delta")
    auto = run(RunConfig(**kwargs), root=tmp_path / "a")
    cpu = run(RunConfig(**kwargs, device="cpu"), root=tmp_path / "b")
    assert auto.metrics["loss"] == cpu.metrics["loss"] and auto.ledger.rows() == cpu.ledger.rows()


@pytest.mark.parametrize("algorithm,codec", [("plump_dp", "ef(topk(ratio=0.1))"), ("plump_dp", "quantize(bits=4)"),
                                            ("sharded_ps", "graddrop(ratio=0.9)"), ("slim_dp", "keycache"),
                                            ("eventgrad", "fp32"), ("allreduce", "fp16"),
                                            ("mqgrad", None)])
def test_messages_kept_in_tensors_give_the_same_run_as_host_messages(tmp_path, monkeypatch, algorithm, codec):
    """What a GPU run does (``Round.send``: a GPU tensor's message is a uint8 tensor on its
    device), on CPU tensors sent down the device path: the same ledger and losses as the
    same path with host messages."""
    from thinwire.engine.kernels import device
    from thinwire.comm import InProcessTransport
    kwargs = dict(TINY, algorithm=algorithm, **({} if codec is None else {"push_codec": codec}))
    if algorithm == "sharded_ps":
        kwargs.update(optimizer="adagrad", lr=0.01, pull_mode="delta")
    results = []
    for tensors in (True, False):
        monkeypatch.setattr(InProcessTransport, "tensor_messages", tensors)
        with device.forced():
            results.append(run(RunConfig(**kwargs), root=tmp_path / str(tensors)))
    as_tensors, as_bytes = results
    assert as_tensors.metrics["loss"] == as_bytes.metrics["loss"]
    assert as_tensors.ledger.rows() == as_bytes.ledger.rows() and len(as_bytes.ledger) > 0
