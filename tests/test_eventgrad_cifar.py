"""EventGraD's CIFAR-10 setting without the data: the code's ResNet, batch-norm statistics
kept per peer and never sent, seeded crop-and-flip, and the paper profile's configs."""

import pytest
import torch

from thinwire.datasets import BatchStream
from thinwire.experiment import RunConfig, run
from thinwire.experiment.launch import launch
from thinwire.models import Replicas, build_model, make_model
from thinwire.papers import eventgrad as eg

from same_run import assert_same_run

SMALL_RESNET = "resnet(blocks=(1, 1), width=4)"
BN_RING = dict(algorithm="eventgrad", model=SMALL_RESNET, workers=4, batch_size=16, steps=12, train_samples=1024,
               eval_every=6, eval_samples=300, lr=0.05, momentum=0.9, augment="crop_flip",
               push_policy="event(horizon=1.0, forced=3)")


def _shape(model):
    params = list(model.named_parameters())
    return len(params), sum(p.numel() for _, p in params)


def test_resnets_have_the_codes_and_the_standard_tensor_counts():
    """The code's make_layer builds one block and then `blocks` more: 3 per stage."""
    code = build_model("eventgrad_resnet18", (3, 32, 32), 10, seed=0)
    standard = build_model("resnet(blocks=(2, 2, 2, 2))", (3, 32, 32), 10, seed=0)
    assert _shape(code) == (86, 17_444_682)
    assert _shape(standard) == (62, 11_173_962)
    names = [n for n, _ in code.named_parameters()]
    assert names[:6] == ["conv.weight", "bn.weight", "bn.bias", "stages.0.0.conv1.weight", "stages.0.0.bn1.weight",
                         "stages.0.0.bn1.bias"]
    assert all(m.bias is None for m in code.modules() if isinstance(m, torch.nn.Conv2d))
    assert code(torch.zeros(2, 3, 32, 32)).shape == (2, 10)
    with pytest.raises(ValueError, match=r"blocks=\(2, 2, 2, 2, 2\) is not allowed"):
        make_model("resnet(blocks=(2, 2, 2, 2, 2))")


def test_replicas_keep_each_replicas_batch_norm_statistics():
    model = build_model(SMALL_RESNET, (1, 28, 28), 10, seed=0)
    with pytest.raises(ValueError, match="without buffers"):
        Replicas(model, 3)
    x, y = torch.randn(3, 8, 1, 28, 28), torch.randint(0, 10, (3, 8))
    together = Replicas(model, 3, per_replica=True, buffers=True)
    _, _, grads = together.loss_and_grads(x, y)
    for k in range(3):
        alone = Replicas(model, 1, buffers=True)
        _, _, own = alone.loss_and_grads(x[k:k + 1], y[k:k + 1])
        for name, b in alone.buffers.items():
            torch.testing.assert_close(together.buffers[name][k], b[0], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(grads["conv.weight"][k], own["conv.weight"][0], rtol=1e-4, atol=1e-6)
    means = together.buffers["bn.running_mean"]
    assert not torch.equal(means[0], means[1]) and together.buffers["bn.num_batches_tracked"].tolist() == [1, 1, 1]
    state = together.state_dict()
    together.loss_and_grads(x, y)
    together.load_state_dict(state)
    assert torch.equal(together.buffers["bn.running_mean"], means)


def test_crop_flip_is_seeded_per_stream_resumes_and_pads_with_the_fill():
    images = torch.arange(2 * 1 * 6 * 6, dtype=torch.float32).view(2, 1, 6, 6)
    fill = torch.tensor([-7.0])
    a = BatchStream(torch.arange(10), 2, seed=0, augment="crop_flip", augment_seed=1, fill=fill)
    b = BatchStream(torch.arange(10), 2, seed=0, augment="crop_flip", augment_seed=1, fill=fill)
    first = a.augmented(images)
    assert torch.equal(first, b.augmented(images))
    saved = a.state_dict()
    draws = [a.augmented(images) for _ in range(20)]
    a.load_state_dict(saved)
    assert all(torch.equal(d, a.augmented(images)) for d in draws)
    # 6x6 images padded by 4: every crop keeps some pixels and most show the fill
    assert any((d == -7.0).any() for d in draws) and all(d.shape == images.shape for d in draws)
    values = set(images.flatten().tolist()) | {-7.0}
    assert all(set(d.flatten().tolist()) <= values for d in draws)
    assert torch.equal(BatchStream(torch.arange(10), 2, seed=0).augmented(images), images)
    with pytest.raises(ValueError, match="augment='cutout' is not allowed"):
        RunConfig(algorithm="eventgrad", augment="cutout")


def _bn_ring_alone(root):
    """One thread, as each gloo rank has: a convolution's backward pass sums in another
    order on two threads, and the batch-norm network's events then drift apart by step 10."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return run(RunConfig(**BN_RING), root=root)
    finally:
        torch.set_num_threads(threads)


def test_a_ring_with_batch_norm_sends_parameters_only(tmp_path):
    local = _bn_ring_alone(tmp_path)
    model = build_model(SMALL_RESNET, (1, 28, 28), 10, seed=0)
    params = {n for n, _ in model.named_parameters()}
    assert {row[4] for row in local.ledger.rows()} == params  # running statistics are never sent
    assert 0.0 < local.summary["final_accuracy"] <= 1.0


# Four gloo ranks starting (about 10 s): make test-long; make test's transport matrix runs the
# ring on gloo
@pytest.mark.long
def test_a_ring_with_batch_norm_matches_gloo(tmp_path):
    local = _bn_ring_alone(tmp_path)
    assert_same_run(local, launch(RunConfig(**BN_RING), nprocs=4, backend="gloo", root=tmp_path))


def test_cifar10_runs_follow_the_papers_setting():
    runs = eg.eventgrad_runs(profile="paper", dataset="cifar10")
    assert runs.peers == (4, 8, 16, 32) and runs.epochs == 20
    for peers in runs.peers:
        c = runs.headline[("EventGraD", peers, 0)]
        assert c.batch_size * peers == 256 and c.steps == 50000 // 256 * 20
        assert (c.model, c.lr, c.momentum, c.sampling, c.augment) == ("eventgrad_resnet18", 0.01, 0.9, "shuffled",
                                                                      "crop_flip")
    standard = eg.eventgrad_runs(profile="paper", dataset="cifar10", model="resnet(blocks=(2, 2, 2, 2))")
    assert standard.headline[("D-PSGD", 4, 0)].model == "resnet"  # the defaults: the standard ResNet-18
    mnist = eg.eventgrad_runs(profile="smoke").headline[("D-PSGD", 4, 0)]
    assert (mnist.lr, mnist.momentum, mnist.augment) == (0.05, 0.0, "none")
    with pytest.raises(ValueError, match="dataset='svhn' is not allowed"):
        eg.eventgrad_runs(profile="smoke", dataset="svhn")
    with pytest.raises(ValueError, match="lr=-1 is not allowed"):
        eg.eventgrad_runs(profile="smoke", lr=-1)
