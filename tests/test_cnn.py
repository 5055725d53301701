"""CNN replicas: batched vmap with per-agent dropout masks, eval mode, local SGD with
momentum and weight decay, and in-process vs gloo agreement with dropout on."""

import pytest
import torch
from torch import nn
from torch.func import functional_call

from thinwire.experiment import RunConfig, run
from thinwire.experiment.launch import launch
from thinwire.models import CNN, Replicas, build_model, evaluate

SHAPE = (1, 12, 12)


def _model(dropout=0.5, lrn=True):
    return build_model(f"cnn(hidden=(16,), channels=(3, 5), kernel=3, dropout={dropout}, lrn={lrn})", SHAPE, 4, seed=0)


def test_replicas_match_plain_autograd_with_the_same_masks():
    model = _model()
    replicas = Replicas(model, 3, seeds=[10, 11, 12])
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(3, 5, *SHAPE, generator=g), torch.randint(0, 4, (3, 5), generator=g)
    masks = replicas._masks(x)
    for gen, seed in zip(replicas.generators, (10, 11, 12)):  # replay: the same masks again
        gen.manual_seed(seed)
    losses, _, grads = replicas.loss_and_grads(x, y)
    for k in range(3):
        params = {n: p[k].clone().requires_grad_(True) for n, p in replicas.params.items()}
        logits = functional_call(model, params, (x[k],), {"masks": {n: m[k] for n, m in masks.items()}})
        loss = nn.functional.cross_entropy(logits, y[k])
        ref = torch.autograd.grad(loss, list(params.values()))
        torch.testing.assert_close(losses[k], loss.detach(), rtol=1e-5, atol=1e-6)
        for (name, _), r in zip(params.items(), ref):
            torch.testing.assert_close(grads[name][k], r, rtol=1e-4, atol=1e-6)


def test_masks_follow_each_agents_generator_not_the_batch():
    x = torch.randn(2, 4, *SHAPE, generator=torch.Generator().manual_seed(3))
    both = Replicas(_model(), 2, seeds=[5, 6])._masks(x)
    alone = Replicas(_model(), 1, seeds=[6])._masks(x[1:])
    for name in both:
        assert torch.equal(both[name][1], alone[name][0])  # agent 6 drops the same units either way
        assert not torch.equal(both[name][0], both[name][1])
    with pytest.raises(ValueError, match="seeds"):
        Replicas(_model(), 2)


def test_evaluation_runs_in_eval_mode():
    model = _model(dropout=0.9)
    params = dict(model.named_parameters())
    x, y = torch.randn(8, *SHAPE), torch.randint(0, 4, (8,))
    a, b = evaluate(model, params, x, y), evaluate(model, params, x, y)
    assert a == b  # no dropout, no mask needed


def test_sgd_with_momentum_and_weight_decay_matches_torch():
    model = _model(dropout=0.0)
    replicas = Replicas(model, 2)
    reference = [build_model("cnn(hidden=(16,), channels=(3, 5), kernel=3, lrn=True)", SHAPE, 4, seed=0)
                 for _ in range(2)]
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, weight_decay=0.01) for m in reference]
    g = torch.Generator().manual_seed(4)
    for _ in range(3):
        x, y = torch.randn(2, 6, *SHAPE, generator=g), torch.randint(0, 4, (2, 6), generator=g)
        replicas.sgd_step(x, y, 0.05, momentum=0.9, weight_decay=0.01)
        for k, (m, opt) in enumerate(zip(reference, optimizers)):
            opt.zero_grad()
            nn.functional.cross_entropy(m(x[k]), y[k]).backward()
            opt.step()
    for k, m in enumerate(reference):
        for name, p in m.named_parameters():
            torch.testing.assert_close(replicas.params[name][k], p.detach(), rtol=1e-4, atol=1e-6)


def test_cnn_options_are_validated():
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['dropout'\]; mlp takes keyword options"):
        RunConfig(model="mlp(dropout=0.5)")
    with pytest.raises(ValueError, match="options of the model spec"):
        RunConfig(model="cnn", dropout=0.5)
    with pytest.raises(ValueError, match="channels"):
        CNN(SHAPE, channels=(4, 4, 4, 4, 4))


# Three gloo ranks starting (about 10 s): make test-long; make test's transport matrix runs the
# workbench's paths on gloo
@pytest.mark.long
def test_dropout_cnn_agrees_in_process_and_on_gloo(tmp_path):
    config = RunConfig(model="cnn(hidden=(32,), channels=(4, 8), dropout=0.5, lrn=True)", steps=6, train_samples=512,
                       eval_every=3, eval_samples=200, batch_size=8, workers=2, push_codec="ef(topk(ratio=0.2))")
    local = run(config, root=tmp_path)
    distributed = launch(config, nprocs=3, backend="gloo", root=tmp_path)
    assert local.ledger.rows() == distributed.ledger.rows()
    torch.testing.assert_close(torch.tensor(local.metrics["loss"]), torch.tensor(distributed.metrics["loss"]),
                               rtol=1e-5, atol=1e-5)


def test_a_convolutional_replica_has_the_same_bits_and_layouts_alone_as_among_many():
    """Over several steps: a replica trained alone (a rank that holds one peer) keeps its
    parameters in the layout and with the bits it has among K (one process holding every
    peer). A whole-tensor pass for K = 1 returned the linear weights' gradients transposed,
    the weights were then stored transposed, and the next product rounded otherwise."""
    model = build_model("eventgrad_mnist_cnn", (1, 28, 28), 10, 0)
    g = torch.Generator().manual_seed(0)
    many = Replicas(model, 4, seeds=[10, 11, 12, 13], buffers=True)
    alone = [Replicas(model, 1, seeds=[10 + k], buffers=True) for k in range(4)]
    for _ in range(3):
        x, y = torch.randn(4, 16, 1, 28, 28, generator=g), torch.randint(0, 10, (4, 16), generator=g)
        many.sgd_step(x, y, 0.05)
        for k, one in enumerate(alone):
            one.sgd_step(x[k:k + 1], y[k:k + 1], 0.05)
            for n, p in one.params.items():
                assert p.stride()[1:] == many.params[n].stride()[1:], n
                assert torch.equal(p[0], many.params[n][k]), n
