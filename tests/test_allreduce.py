"""Data parallelism by ring all-reduce (fp32, fp16, bf16) and PowerSGD: the ring's sums and
bytes, PowerSGD's error feedback and rank, and the same run in one process and on gloo."""

import pytest
import torch

from thinwire.algorithms import powersgd
from thinwire.algorithms.ring_allreduce import chunk_bounds, ring_allreduce, ring_phases
from thinwire.algorithms.round import Round
from thinwire.codecs import CodecState, make_codec
from thinwire.comm import InProcessTransport
from thinwire.experiment import RunConfig, run
from thinwire.experiment.launch import launch

from same_run import assert_same_run

TINY = dict(algorithm="allreduce", model="mlp(hidden=(32,))", workers=4, batch_size=16, steps=24,
            train_samples=1024, eval_every=12, eval_samples=300, lr=0.1)


def _ring(values: dict[int, torch.Tensor], codec: str):
    transport = InProcessTransport()
    rnd = Round(transport, 0)
    buffers = {k: v.clone() for k, v in values.items()}
    ring_allreduce(rnd, "x", buffers, len(values), make_codec(codec), {k: CodecState(k) for k in values})
    return buffers, transport.ledger


@pytest.mark.parametrize("peers,numel", [(2, 10), (3, 7), (4, 1000), (5, 3)])
def test_the_ring_sums_exactly_in_fp32_and_sends_2_k_minus_1_over_k_of_the_vector(peers, numel):
    g = torch.Generator().manual_seed(peers)
    values = {k: torch.randn(numel, generator=g) for k in range(peers)}
    out, ledger = _ring(values, "fp32")
    exact = torch.stack(list(values.values())).double().sum(0)
    for k in range(peers):
        assert torch.equal(out[k], out[0])
        torch.testing.assert_close(out[k].double(), exact, atol=1e-5, rtol=1e-6)
    assert ledger.phases() == sorted(ring_phases("x", peers))
    rows = ledger.rows()
    assert len(rows) == 2 * (peers - 1) * peers
    assert all(r[3] == (r[2] + 1) % peers for r in rows)  # only to the next peer
    assert sum(r[6] for r in rows) == 2 * (peers - 1) * numel * 4  # each value of each chunk, 2 (K - 1) times
    sizes = [hi - lo for lo, hi in chunk_bounds(numel, peers)]
    assert sum(sizes) == numel and max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("codec,dtype", [("fp16", torch.float16), ("bf16", torch.bfloat16)])
def test_a_16_bit_ring_leaves_every_peer_with_the_same_rounded_sum(codec, dtype):
    g = torch.Generator().manual_seed(0)
    values = {k: torch.randn(999, generator=g) / 4 for k in range(4)}
    out, ledger = _ring(values, codec)
    for k in range(4):
        assert torch.equal(out[k], out[0])
    assert torch.equal(out[0], out[0].to(dtype).float())  # representable: what the owner sent
    exact = torch.stack(list(values.values())).sum(0)
    tol = 4 * 4 * float(torch.finfo(dtype).eps) * float(exact.abs().max())
    assert float((out[0] - exact).abs().max()) < tol  # three roundings at most per hop chain
    assert sum(r[6] for r in ledger.rows()) == 2 * 3 * 999 * 2


def test_plain_allreduce_is_plump_dp_with_fewer_bytes(tmp_path):
    ring = run(RunConfig(**TINY), root=tmp_path)
    server = run(RunConfig(**{**TINY, "algorithm": "plump_dp"}), root=tmp_path)
    torch.testing.assert_close(torch.tensor(ring.metrics["loss"]), torch.tensor(server.metrics["loss"]),
                               atol=1e-5, rtol=1e-5)
    params = 784 * 32 + 32 + 32 * 10 + 10
    payload = sum(r[6] for r in ring.ledger.rows())
    assert payload == TINY["steps"] * TINY["workers"] * 2 * 3 * 4 * params // 4  # 2 (K-1)/K x N floats per worker
    assert ring.summary["bytes"] < server.summary["bytes"]


# PowerSGD and fp16 in make test-long: the transport matrix (test_transport_invariance.py) runs
# PowerSGD on gloo in make test, and the allgather case keeps a gloo run and a resume there
@pytest.mark.parametrize("extra", [pytest.param(dict(push_codec="fp16"), marks=pytest.mark.long),
                                   pytest.param(dict(powersgd_rank=2, powersgd_start=5), marks=pytest.mark.long),
                                   dict(exchange="allgather", push_codec="ef(topk(ratio=0.05))")],
                         ids=["fp16", "powersgd", "allgather-topk-ef"])
def test_in_process_and_gloo_agree_and_resume(tmp_path, interrupt_at, extra):
    config = RunConfig(**TINY, **extra)
    local = run(config, root=tmp_path)
    distributed = launch(config, nprocs=2, backend="gloo", root=tmp_path)
    assert_same_run(local, distributed, tol=1e-5)
    resume = interrupt_at(9)
    with pytest.raises(KeyboardInterrupt):
        run(config, root=tmp_path / "cut", checkpoint_every=4)
    resume()
    again = run(config, root=tmp_path / "cut", checkpoint_every=4)
    assert again.ledger.rows() == local.ledger.rows() and again.metrics["loss"] == local.metrics["loss"]


def test_powersgd_sends_factors_after_its_start_and_whole_tensors_otherwise(tmp_path):
    result = run(RunConfig(**TINY, powersgd_rank=2, powersgd_start=5), root=tmp_path)
    by_phase = {}
    for step, phase, *_ , payload in result.ledger.rows():
        by_phase.setdefault(phase.split(".")[0], set()).add(step)
    assert by_phase["grad"] == set(range(5)) and by_phase["p"] == by_phase["q"] == set(range(5, TINY["steps"]))
    p_values = sum(r[6] for r in result.ledger.rows() if r[1].startswith("p.") and r[0] == 5) // 4
    assert p_values == TINY["workers"] * 2 * 3 // 4 * (32 * 2 + 10 * 2)  # P of (32, 784) and (10, 32) at r = 2
    assert result.summary["final_accuracy"] > 0.5


def _matrix(n=40, m=30, seed=0, dtype=torch.float64):
    """A matrix with singular values 1, 1/2, 1/4, ... (a gradient's fast-decaying spectrum)."""
    g = torch.Generator().manual_seed(seed)
    u, _ = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=dtype))
    v, _ = torch.linalg.qr(torch.randn(m, m, generator=g, dtype=dtype))
    k = min(n, m)
    return (u[:, :k] * 0.5 ** torch.arange(k, dtype=dtype)) @ v[:, :k].T


def _one_worker_step(state, grad, warm=True, seed=0):
    """PowerSGD's step 2 for one worker alone (the all-reduces are identities)."""
    matrices = powersgd.accumulate(state, {"w": grad}, True)
    q = powersgd.start_q(state, warm, torch.Generator().manual_seed(seed), 0.0, dtype=grad.dtype)
    p_hat = {"w": powersgd.orthogonalize(matrices["w"] @ q["w"])}
    q_new = {"w": matrices["w"].T @ p_hat["w"]}
    return matrices["w"], powersgd.finish(state, matrices, p_hat, q_new, True)["w"]


def test_powersgd_error_feedback_identity_holds_in_float64():
    state = powersgd.PowerSGDState({"w": (40, 30)}, rank=2, min_rate=1.0)
    carried = torch.zeros(40, 30, dtype=torch.float64)
    for t in range(5):
        grad = _matrix(seed=t)
        accumulated, sent = _one_worker_step(state, grad, seed=t)
        torch.testing.assert_close(accumulated, grad + carried, atol=1e-15, rtol=0)
        torch.testing.assert_close(sent + state.error["w"], grad + carried, atol=1e-14, rtol=0)
        carried = state.error["w"]
    assert float(carried.abs().max()) > 1e-3  # the error is real, not zero


def test_powersgd_error_falls_with_rank_and_warm_start_nears_the_best_rank_r():
    m = _matrix()
    errors = {}
    for r in (1, 2, 4):
        state = powersgd.PowerSGDState({"w": tuple(m.shape)}, rank=r, min_rate=1.0)
        _, once = _one_worker_step(state, m, seed=1)
        errors[r] = float(torch.linalg.norm(m - once) / torch.linalg.norm(m))
        state.error.clear()  # keep Q (warm start), not the error: iterate the power method on m
        for _ in range(10):
            _, approx = _one_worker_step(state, m, seed=1)
            state.error.clear()
        s = torch.linalg.svdvals(m)
        best = float(torch.sqrt((s[r:] ** 2).sum()) / torch.linalg.norm(m))
        assert float(torch.linalg.norm(m - approx) / torch.linalg.norm(m)) == pytest.approx(best, rel=1e-3)
    assert errors[1] > errors[2] > errors[4]


def test_orthogonalize_gives_orthonormal_columns_spanning_the_same_space():
    a = torch.randn(50, 4, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    q = powersgd.orthogonalize(a.clone())
    torch.testing.assert_close(q.T @ q, torch.eye(4, dtype=torch.float64), atol=1e-12, rtol=0)
    reference, _ = torch.linalg.qr(a)
    torch.testing.assert_close((q * reference).sum(0).abs(), torch.ones(4, dtype=torch.float64), atol=1e-12, rtol=0)
    zero = powersgd.orthogonalize(torch.zeros(5, 2))
    assert torch.equal(zero, torch.zeros(5, 2))  # a zero column stays zero, no NaN


def test_which_tensors_powersgd_compresses():
    assert powersgd.compressible((32, 784), 2, 2.0) and powersgd.compressible((10, 32), 2, 2.0)
    assert not powersgd.compressible((10, 32), 8, 2.0)  # (10 + 32) 8 2 > 320: sent whole
    assert not powersgd.compressible((32,), 1, 2.0) and not powersgd.compressible((4, 4), 0, 2.0)
    assert powersgd.compressible((8, 3, 5, 5), 1, 2.0)  # a conv kernel as (8, 75)


def test_an_allgather_of_fp32_is_the_ring_and_of_topk_sends_k_values_to_every_other_worker(tmp_path):
    ring = run(RunConfig(**TINY), root=tmp_path)
    gathered = run(RunConfig(**TINY, exchange="allgather"), root=tmp_path)
    torch.testing.assert_close(torch.tensor(gathered.metrics["loss"]), torch.tensor(ring.metrics["loss"]),
                               atol=1e-5, rtol=1e-5)
    assert {r[1] for r in gathered.ledger.rows()} == {"grad"}
    sparse = run(RunConfig(**TINY, exchange="allgather", push_codec="ef(topk(ratio=0.05))"), root=tmp_path)
    sizes = {"0.weight": 784 * 32, "0.bias": 32, "2.weight": 32 * 10, "2.bias": 10}
    per_worker = sum(-(-n * 5 // 100) for n in sizes.values())  # ceil(5% of each tensor) (index, value) pairs
    payload = sum(r[6] for r in sparse.ledger.rows() if r[0] == 0)
    k = TINY["workers"]
    assert payload == k * (k - 1) * per_worker * 8
    assert sparse.summary["final_accuracy"] > 0.5


@pytest.mark.parametrize("values,match", [
    (dict(push_codec="topk(ratio=0.1)"), "push_codec"), (dict(exchange="tree"), "exchange"),
    (dict(exchange="allgather", powersgd_rank=2), "exchange='allgather' is not allowed with powersgd_rank=2"), (dict(powersgd_rank=-1), "powersgd_rank"),
    (dict(pull_codec="fp16"), "pull_codec"), (dict(workers=1), "workers=1"), (dict(powersgd_min_rate=-1.0), "min_rate"),
    (dict(powersgd_warm_start=1), "powersgd_warm_start"),
])
def test_bad_settings_name_the_parameter(values, match):
    with pytest.raises(ValueError, match=match):
        RunConfig(**{**TINY, **values})


def test_powersgd_with_nothing_worth_factoring_sends_everything_whole(tmp_path):
    result = run(RunConfig(**TINY, powersgd_rank=1000), root=tmp_path)  # (n + m) r 2 > n m for every matrix
    assert {r[1].split(".")[0] for r in result.ledger.rows()} == {"whole"}
    plain = run(RunConfig(**TINY), root=tmp_path)
    assert sum(r[6] for r in result.ledger.rows()) == sum(r[6] for r in plain.ledger.rows())
