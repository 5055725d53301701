import pytest
import torch
from torch import nn

from thinwire.models import MLP, Replicas, build_model


def _reference(model, params, x, y):
    """Per-replica losses and gradients with plain autograd, one replica at a time."""
    losses, grads = [], {n: [] for n in params}
    for k in range(x.shape[0]):
        copy = build_model(f"mlp(hidden={model_hidden}, layer_norm={model_ln})", (1, 4, 4), 3, seed=0)
        with torch.no_grad():
            for name, p in copy.named_parameters():
                p.copy_(params[name][k])
        loss = nn.functional.cross_entropy(copy(x[k]), y[k])
        loss.backward()
        losses.append(loss.item())
        for name, p in copy.named_parameters():
            grads[name].append(p.grad.clone())
    return losses, {n: torch.stack(g) for n, g in grads.items()}


@pytest.mark.parametrize("layer_norm", [False, True])
def test_batched_replicas_match_plain_autograd(layer_norm):
    global model_hidden, model_ln
    model_hidden, model_ln = (8, 6), layer_norm
    model = build_model(f"mlp(hidden={model_hidden}, layer_norm={layer_norm})", (1, 4, 4), 3, seed=0)
    replicas = Replicas(model, 3)
    assert replicas.batched is not None
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():  # make the replicas differ
        for p in replicas.params.values():
            p.add_(0.1 * torch.randn(p.shape, generator=g))
    x = torch.randn(3, 5, 1, 4, 4, generator=g)
    y = torch.randint(0, 3, (3, 5), generator=g)
    params = {n: p.clone() for n, p in replicas.params.items()}
    losses, correct, grads = replicas.loss_and_grads(x, y)
    ref_losses, ref_grads = _reference(model, params, x, y)
    torch.testing.assert_close(losses, torch.tensor(ref_losses), rtol=1e-5, atol=1e-6)
    for name in grads:
        assert grads[name].shape == params[name].shape
        torch.testing.assert_close(grads[name], ref_grads[name], rtol=1e-4, atol=1e-6)
    assert correct.shape == (3,)


def test_generic_models_use_vmap():
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 3))
    replicas = Replicas(model, 2)
    assert replicas.batched is None
    losses, correct, grads = replicas.loss_and_grads(torch.randn(2, 4, 1, 4, 4), torch.randint(0, 3, (2, 4)))
    assert losses.shape == (2,) and grads["1.weight"].shape == (2, 3, 16)


@pytest.mark.parametrize("layer_norm", [False, True])
def test_sgd_step_equals_gradients_then_update(layer_norm):
    model = build_model(f"mlp(hidden=(8, 6), layer_norm={layer_norm})", (1, 4, 4), 3, seed=0)
    fused, plain = Replicas(model, 3), Replicas(model, 3)
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for name, p in fused.params.items():
            p.add_(0.1 * torch.randn(p.shape, generator=g))
            plain.params[name].copy_(p)
    for _ in range(3):  # several steps: the in-place updates must feed the next forward
        x = torch.randn(3, 5, 1, 4, 4, generator=g)
        y = torch.randint(0, 3, (3, 5), generator=g)
        losses, correct = fused.sgd_step(x, y, lr=0.1)
        ref_losses, ref_correct, grads = plain.loss_and_grads(x, y)
        for name, p in plain.params.items():
            p.sub_(grads[name], alpha=0.1)
        torch.testing.assert_close(losses, ref_losses)
        assert torch.equal(correct, ref_correct)
        for name, p in fused.params.items():
            torch.testing.assert_close(p, plain.params[name], rtol=1e-5, atol=1e-6)
            assert not p.requires_grad


def test_sgd_step_on_generic_models():
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 3))
    replicas = Replicas(model, 2)
    before = replicas.params["1.weight"].clone()
    losses, _ = replicas.sgd_step(torch.randn(2, 4, 1, 4, 4), torch.randint(0, 3, (2, 4)), lr=0.5)
    assert losses.shape == (2,) and not torch.equal(before, replicas.params["1.weight"])


@pytest.mark.parametrize("spec", ["normal(std=0.01)", "uniform(a=0.02)"])
def test_init_specs_draw_small_zero_mean_weights_from_the_seed(spec):
    a = build_model("mlp(hidden=(392, 50))", (1, 28, 28), 10, seed=3, init=spec)
    b = build_model("mlp(hidden=(392, 50))", (1, 28, 28), 10, seed=3, init=spec)
    c = build_model("mlp(hidden=(392, 50))", (1, 28, 28), 10, seed=4, init=spec)
    default = build_model("mlp(hidden=(392, 50))", (1, 28, 28), 10, seed=3)
    w = a.net[1].weight.detach()
    assert torch.equal(w, b.net[1].weight) and not torch.equal(w, c.net[1].weight)
    assert abs(float(w.mean())) < 1e-3 and float(a.net[1].bias.detach().abs().max()) == 0
    if spec.startswith("normal"):
        assert float(w.std()) == pytest.approx(0.01, rel=0.02)
    else:
        assert float(w.abs().max()) <= 0.02 and float(w.std()) == pytest.approx(0.02 / 3 ** 0.5, rel=0.02)
    assert float(default.net[1].weight.detach().abs().max()) > 0.03  # torch's U(+-1/sqrt(784))


def test_init_is_validated_and_key_neutral_at_its_default():
    from thinwire.experiment import RunConfig
    config = RunConfig(algorithm="weight_averaging", model="mlp(hidden=(8,))")
    assert config.init == "default"
    assert config.replace(init="normal(std=1e-2)").init == "normal(std=0.01)"
    assert config.replace(init="normal(std=0.01)").key() != config.key()
    doc = config.to_dict()
    doc.pop("init")
    assert RunConfig.from_dict(doc).key() == config.key()  # configs written before ``init`` keep their key
    for bad, match in [("normal", "takes exactly"), ("normal(std=0)", "std must be"), ("gauss(std=1)", "unknown init"),
                       ("uniform(std=1)", "takes exactly"), ("normal(std=float('nan'))", "literals")]:
        with pytest.raises(ValueError, match=match):
            config.replace(init=bad)
