"""The papers' named networks (models/architectures.py), the generalized CNN's options and
per-parameter-group weight decay."""

import pytest
import torch

from thinwire.algorithms import make_optimizer
from thinwire.experiment import RunConfig, run
from thinwire.models import Replicas, build_model
from thinwire.models.architectures import MQGRAD_DECAYED
from thinwire.models.dropout import SeededDropout


def test_eventgrads_mnist_network_has_27480_parameters_in_8_tensors():
    model = build_model("eventgrad_mnist_cnn", (1, 28, 28), 10, 0)
    shapes = [tuple(p.shape) for p in model.parameters()]
    assert shapes == [(10, 1, 3, 3), (10,), (20, 10, 3, 3), (20,), (50, 500), (50,), (10, 50), (10,)]
    assert sum(p.numel() for p in model.parameters()) == 27_480
    assert model.eval()(torch.zeros(2, 1, 28, 28)).shape == (2, 10)
    drops = [m for m in model.modules() if isinstance(m, SeededDropout) and m.p]
    assert [(m.p, m.channels) for m in drops] == [(0.5, True), (0.5, False)]  # after conv 2 (channels), after fc 1


def test_mqgrads_network_on_28x28_inputs():
    model = build_model("mqgrad_cnn", (3, 28, 28), 10, 0)
    shapes = [tuple(p.shape) for p in model.parameters()]
    assert shapes == [(64, 3, 5, 5), (64,), (64, 64, 5, 5), (64,), (2304, 3136), (2304,), (3840, 2304), (3840,),
                      (10, 3840), (10,)]
    assert sum(p.numel() for p in model.parameters()) == 16_224_586  # the paper's 16.2 M
    named = dict(model.named_parameters())
    assert [tuple(named[n].shape) for n in MQGRAD_DECAYED] == [(2304, 3136), (3840, 2304)]
    lrn = [m for m in model.modules() if isinstance(m, torch.nn.LocalResponseNorm)]
    assert [(m.size, m.alpha, m.beta, m.k) for m in lrn] == [(9, 0.001, 0.75, 1.0)] * 2
    layers = [type(m).__name__ for m in model.net]
    assert layers[:9] == ["Conv2d", "ReLU", "MaxPool2d", "LocalResponseNorm", "Conv2d", "ReLU", "LocalResponseNorm",
                          "MaxPool2d", "Flatten"]


def test_channel_dropout_drops_whole_feature_maps_from_each_agents_generator():
    model = build_model("eventgrad_mnist_cnn", (1, 28, 28), 10, 0)
    replicas = Replicas(model, 2, seeds=[1, 2])
    masks = replicas._masks(torch.zeros(2, 4, 1, 28, 28))
    conv = next(m for n, m in masks.items() if m.dim() == 5)  # (replicas, batch, C, 1, 1)
    assert conv.shape == (2, 4, 20, 1, 1) and set(conv.unique().tolist()) <= {0.0, 2.0}
    assert not torch.equal(conv[0], conv[1])


def test_a_run_trains_a_named_network_and_refuses_options(tmp_path):
    result = run(RunConfig(algorithm="plump_dp", model="eventgrad_mnist_cnn", steps=4, train_samples=256,
                           eval_every=4, eval_samples=100, batch_size=16, workers=2), root=tmp_path)
    assert result.summary["final_accuracy"] is not None and result.phase("push").messages == 4 * 2 * 8
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['hidden'\]; mqgrad_cnn takes no options"):
        RunConfig(model="mqgrad_cnn(hidden=(64,))")
    with pytest.raises(ValueError, match="padding='full' is not allowed"):
        build_model("cnn(padding='full')", (1, 28, 28), 10, 0)


def test_weight_decay_can_apply_to_named_parameters_only():
    a, b = torch.ones(3), torch.ones(3)
    optimizer = make_optimizer("sgd", {"big": a, "small": b}, lr=0.5, weight_decay=0.1, decay_only=("big",))
    a.grad, b.grad = torch.zeros(3), torch.zeros(3)
    optimizer.step()
    assert torch.allclose(a, torch.full((3,), 0.95)) and torch.equal(b, torch.ones(3))
    with pytest.raises(ValueError, match=r"\['nope'\] are not parameters"):
        make_optimizer("sgd", {"big": a}, lr=0.1, weight_decay=0.1, decay_only=("nope",))
