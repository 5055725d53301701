"""Model specs: the model as one text in the codecs' syntax, validated before any data
loads, canonical so that equal networks share a results key."""

from dataclasses import dataclass
from typing import ClassVar

import pytest
import torch
from torch import nn

from thinwire.experiment import RunConfig, run
from thinwire.models import CNN, MLP, MODELS, CNNSpec, MLPSpec, ModelSpec, build_model, make_model, register_model


@pytest.mark.parametrize("text, canonical", [
    ("mlp", "mlp"), ("mlp()", "mlp"), ("mlp(hidden=[1024, 1024])", "mlp"), ("mlp(hidden=[64])", "mlp(hidden=(64,))"),
    ("mlp(activation='tanh', hidden=(392, 50))", "mlp(hidden=(392, 50), activation='tanh')"),
    ("cnn(lrn=True)", "cnn(lrn=(5, 0.0001, 0.75, 2.0))"), ("cnn(lrn=False)", "cnn"),
    ("cnn(lrn=True, lrn_at=('pool', 'pool'))", "cnn(lrn=(5, 0.0001, 0.75, 2.0))"),
    ("cnn(conv_dropout=(0, 0))", "cnn"), ("cnn(dropout=0)", "cnn"), ("cnn(conv_dropout=(0, 1/2))", None),
    ("eventgrad_mnist_cnn", "eventgrad_mnist_cnn"), ("eventgrad_mnist_cnn()", "eventgrad_mnist_cnn"),
])
def test_specs_print_one_canonical_text_that_parses_to_the_same_spec(text, canonical):
    if canonical is None:  # 1/2 is not a literal
        with pytest.raises(ValueError, match="literals"):
            make_model(text)
        return
    spec = make_model(text)
    assert spec.spec() == canonical and make_model(canonical) == spec
    assert RunConfig(model=text).key() == RunConfig(model=canonical).key()
    assert RunConfig(model=text).model == canonical


def test_default_specs_build_the_classes_defaults():
    mlp = build_model("mlp", (1, 28, 28), 10, 0)
    assert [tuple(p.shape) for p in mlp.parameters()] == [tuple(p.shape) for p in MLP(784, (1024, 1024)).parameters()]
    cnn = build_model("cnn", (1, 28, 28), 10, 0)
    assert [tuple(p.shape) for p in cnn.parameters()] == [tuple(p.shape) for p in CNN((1, 28, 28)).parameters()]
    assert isinstance(make_model("cnn(kernel=3)"), CNNSpec) and isinstance(make_model("mlp"), MLPSpec)


def test_spec_options_reach_the_network():
    net = build_model("cnn(channels=(3, 5), kernel=3, padding='valid', pool=(3, 2), pool_padding=1, "
                      "lrn=(3, 0.01, 0.5, 1.0), lrn_at=('conv', 'none'), conv_dropout=(0.5, 0.0), hidden=(7,), "
                      "dropout=0.25)", (1, 28, 28), 4, 0)
    kinds = [type(m).__name__ for m in net.net]
    assert kinds[:6] == ["Conv2d", "ReLU", "SeededDropout", "LocalResponseNorm", "MaxPool2d", "Conv2d"]
    assert net.net[0].kernel_size == (3, 3) and net.net[0].padding == (0, 0) and net.net[4].kernel_size == 3
    assert net.net[3].size == 3 and net.net[3].alpha == 0.01 and net.net[2].p == 0.5
    assert [m.out_features for m in net.net if isinstance(m, nn.Linear)] == [7, 4]
    mlp = build_model("mlp(hidden=(5, 6), activation='tanh', layer_norm=True)", (1, 4, 4), 3, 0)
    assert [type(m).__name__ for m in mlp.net][1:4] == ["Linear", "LayerNorm", "Tanh"]


def test_the_old_model_fields_are_refused_with_a_pointer_to_the_spec():
    for field, value in (("hidden", (64,)), ("layer_norm", True), ("channels", (4,)), ("lrn", True)):
        with pytest.raises(ValueError, match=rf"\['{field}'\] are options of the model spec"):
            RunConfig(**{field: value})
    with pytest.raises(ValueError, match=r"model='cnn\(channels=\(4, 4, 4, 4, 4\)\)' is not allowed for 28x28"):
        RunConfig(model="cnn(channels=(4, 4, 4, 4, 4))")
    RunConfig(model="cnn(channels=(4, 4, 4, 4))")  # 28 -> 14 -> 7 -> 3 -> 1


def test_model_spec_replace_validates():
    spec = make_model("mlp(hidden=(64,))")
    assert spec.replace(layer_norm=True).spec() == "mlp(hidden=(64,), layer_norm=True)"
    with pytest.raises(ValueError, match="activation='gelu' is not allowed"):
        spec.replace(activation="gelu")


@pytest.fixture
def registered_model():
    @dataclass(frozen=True)
    class Wide(ModelSpec):
        name: ClassVar[str] = "wide_linear"
        width: int = 8

        def check(self):
            if not (isinstance(self.width, int) and self.width >= 1):
                raise ValueError(f"width={self.width!r} is not allowed: width must be an int >= 1")

        def build(self, image_shape, num_classes):
            c, h, w = image_shape
            return nn.Sequential(nn.Flatten(), nn.Linear(c * h * w, self.width), nn.ReLU(),
                                 nn.Linear(self.width, num_classes))

    register_model(Wide)
    yield Wide
    del MODELS["wide_linear"]


def test_a_registered_model_is_a_spec_like_the_built_in_ones(registered_model, tmp_path):
    with pytest.raises(ValueError, match="width=0 is not allowed"):
        RunConfig(model="wide_linear(width=0)")
    config = RunConfig(model="wide_linear(width=16)", steps=2, train_samples=256, eval_every=2, eval_samples=100,
                       batch_size=16, workers=2)
    result = run(config, root=tmp_path)
    assert result.phase("push").messages == 2 * 2 * 4  # 4 tensors per worker per step
    assert sum(p.numel() for p in build_model(config.model, (1, 28, 28), 10, 0).parameters()) == 784 * 16 + 16 + 170
    with pytest.raises(ValueError, match="ModelSpec subclass"):
        register_model(torch.nn.Linear)
