"""The seams the next papers stand on: shapes reach codecs, per-column quantization, the
``sized`` composite, keyed sends, decisions through ``chain`` and ``ef``, ``Policy.sent``
with the decision, and the controller interface."""

import pytest
import torch
from torch import nn

from thinwire.algorithms import Round
from thinwire.codecs import CodecState, CorruptMessageError, make_codec
from thinwire.engine import wire
from thinwire.comm import InProcessTransport
from thinwire.policies import POLICIES, Controller, Decision, Policy, RelativeChange, make_policy, register


def _matrix(rows=64, columns=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, columns, generator=g) * torch.logspace(-3, 1, columns)  # columns of very different range


def test_per_column_ranges_bound_each_columns_error_and_beat_one_range():
    w = _matrix()
    w[:, 3] = 0.25  # a constant column decodes exactly
    for coder in ("raw", "huffman"):
        codec = make_codec(f"binquant(bits=4, coder='{coder}', per='column')")
        out = codec.decode(codec.encode(w, CodecState(0), "w"), CodecState(0), "w", like=w)
        span = w.amax(0) - w.amin(0)
        assert ((out - w).abs() <= span / 2**5 * (1 + 1e-5) + 1e-6).all()  # half a bin (float rounding aside)
        assert torch.equal(out[:, 3], w[:, 3])
    per_tensor = make_codec("binquant(bits=4)")
    coarse = per_tensor.decode(per_tensor.encode(w, CodecState(0), "w"), CodecState(0), "w")
    assert (out - w)[:, 0].abs().max() < 0.1 * (coarse - w)[:, 0].abs().max()
    bias = torch.randn(16)  # not 2-D: one range, as binquant(bits=4)
    assert torch.equal(codec.decode(codec.encode(bias, CodecState(0), "b"), CodecState(0), "b"),
                       per_tensor.decode(per_tensor.encode(bias, CodecState(0), "b"), CodecState(0), "b"))
    assert make_codec("binquant(bits=4)").spec() == "binquant(bits=4, coder='raw')"  # the default stays out of keys
    rows = make_codec("binquant(bits=4, per='row')")  # MQGrad's: per column of TF's [in, out] = per torch row
    t = w.t().contiguous()
    by_row = rows.decode(rows.encode(t, CodecState(0), "t"), CodecState(0), "t", like=t)
    assert torch.equal(by_row, out.t())
    with pytest.raises(ValueError, match="per='diagonal' is not allowed"):
        make_codec("binquant(per='diagonal')")


def test_a_per_column_message_with_damaged_ranges_is_refused():
    codec = make_codec("binquant(bits=4, per='column')")
    header, payload = wire.unpack(codec.encode(_matrix(), CodecState(0), "w"))
    payload.parts["lo"] = payload.parts["lo"][:5]
    payload.parts["hi"] = payload.parts["hi"][:5]
    forged = wire.pack(header["codec_id"], header["digest"], header["dtype"], header["shape"], payload)
    with pytest.raises(CorruptMessageError, match="column ranges"):
        codec.decode(forged, CodecState(0), "w")


def test_sized_applies_its_codec_to_large_matrices_only():
    codec = make_codec("sized(binquant(bits=2), min_numel=1000, ndim=2)")
    assert make_codec(codec.spec()).spec() == codec.spec()
    big, small, long = _matrix(64, 32), _matrix(4, 4), torch.randn(5000)
    inner = make_codec("binquant(bits=2)")
    assert torch.equal(codec.decode(codec.encode(big, CodecState(0), "w"), CodecState(0), "w"),
                       inner.decode(inner.encode(big, CodecState(0), "w"), CodecState(0), "w"))
    for t in (small, long):  # too small, or not 2-D: sent in full
        assert torch.equal(codec.decode(codec.encode(t, CodecState(0), "x"), CodecState(0), "x"), t)
    assert len(codec.encode(big, CodecState(0), "w")) < len(make_codec("fp32").encode(big, CodecState(0), "w")) / 8
    policy_bits = make_codec("sized(binquant(bits=0), min_numel=100)")  # a decision reaches the inner codec
    state = CodecState(0)
    policy_bits.encode(big, state, "w", Decision(bits=3))
    assert state.last.bits == 3
    with pytest.raises(ValueError, match="min_numel=-1"):
        make_codec("sized(fp32(), min_numel=-1)")


def test_keyed_send_carries_the_chosen_entries_and_merges_them():
    codec = make_codec("topk(ratio=0.01)")
    x = torch.arange(20, dtype=torch.float32)
    state = CodecState(0)
    message = codec.encode(x, state, "x", Decision(keys=torch.tensor([7, 2, 7, 19])))
    assert state.last.kept == 3
    into = torch.full((20,), -1.0)
    assert codec.merge(message, into, CodecState(0), "x") == 3
    assert into[[2, 7, 19]].tolist() == [2.0, 7.0, 19.0] and (into[[0, 1, 3, 18]] == -1).all()
    with pytest.raises(ValueError, match=r"keys must be in \[0, 20\)"):
        codec.encode(x, CodecState(0), "x", Decision(keys=torch.tensor([20])))
    header, payload = wire.unpack(message)
    payload.meta["count"] = 30
    with pytest.raises(CorruptMessageError, match="count 30"):
        codec.decode(wire.pack(header["codec_id"], header["digest"], header["dtype"], header["shape"], payload))


def test_decisions_pass_through_chain_and_error_feedback():
    g = torch.randn(1000, generator=torch.Generator().manual_seed(1))
    state = CodecState(0)
    ef = make_codec("ef(binquant(bits=0))")
    decoded = ef.decode(ef.encode(g, state, "g", Decision(bits=4)), CodecState(0), "g")
    assert state.last.bits == 4
    assert torch.allclose(decoded + ef.residual(state, "g"), g, atol=1e-6)  # nothing lost, only delayed
    chain = make_codec("chain(topk(ratio=0.1), binquant(bits=0))")
    state = CodecState(0)
    out = chain.decode(chain.encode(g, state, "g", Decision(bits=3)), CodecState(0), "g")
    assert state.last.bits == 3 and int((out != 0).sum()) == 100
    keyed = make_codec("ef(topk(ratio=0.5))")
    state = CodecState(0)
    keyed.encode(g, state, "g", Decision(keys=torch.tensor([0, 1, 2])))
    assert state.last.kept == 3 and float(keyed.residual(state, "g")[3:].sub(g[3:]).abs().max()) == 0.0
    with pytest.raises(ValueError, match="takes no per-message decision"):
        make_codec("chain(topk(ratio=0.1), quantize(bits=8))").encode(g, CodecState(0), "g", Decision(bits=3))


class Recording(Policy):
    name = "recording_for_test"

    def decide(self, round, key, tensor):
        return Decision(keys=torch.tensor([1, 3]))

    def sent(self, round, key, tensor, decision=None):
        self.memory[key] = decision.keys.clone()


def test_sent_receives_the_decision_and_a_keyed_send_updates_only_its_keys():
    policy, rnd = Recording(), Round(InProcessTransport(), 0)
    rnd.send("push", 0, [1], "w", torch.arange(5.0), make_codec("topk()"), CodecState(0), policy)
    assert policy.memory["w"].tolist() == [1, 3]
    change = RelativeChange(threshold=0.1)
    change.sent(0, "w", torch.zeros(5))
    change.sent(1, "w", torch.ones(5), Decision(keys=torch.tensor([1, 3])))
    assert change.memory["w"].tolist() == [0.0, 1.0, 0.0, 1.0, 0.0]


class GreedyBits(Controller):
    """A test controller: epsilon-greedy over bit widths, reward = -loss, a linear value net."""

    name = "greedy_bits_for_test"

    def __init__(self, window: int = 3, epsilon: float = 0.3, seed: int = 0):
        super().__init__(window, seed)
        self.epsilon, self.choices, self.chosen = epsilon, (2, 4, 8), []
        self.modules["value"] = nn.Linear(1, 3)
        with torch.no_grad():
            self.modules["value"].weight.zero_()
            self.modules["value"].bias.zero_()

    def params(self):
        return {**super().params(), "epsilon": self.epsilon}

    def choose(self, round):
        values = self.modules["value"](torch.ones(1))
        if float(torch.rand((), generator=self.generator)) < self.epsilon:
            action = int(torch.randint(3, (), generator=self.generator))
        else:
            action = int(values.argmax())
        self.chosen.append(round)
        self.memory["action"] = torch.tensor(action)
        return Decision(bits=self.choices[action])

    def observe(self, round, signals):
        with torch.no_grad():
            self.modules["value"].bias[int(self.memory["action"])] += -signals["loss"]


@pytest.fixture
def greedy_bits():
    """GreedyBits registered for one test (a registered test module would be forwarded to
    the torchrun ranks of other tests, which cannot import it)."""
    register(GreedyBits)
    yield
    POLICIES.pop(GreedyBits.name)


def test_a_controller_decides_once_per_window_and_resumes_exactly(greedy_bits):
    a = make_policy("greedy_bits_for_test(window=3)", seed=5)
    a.warm_up()
    bits = []
    for round in range(12):
        bits.append([a.decide(round, k, torch.zeros(2)).bits for k in ("w1", "w2")])
        if round % 3 == 2:
            a.observe(round, {"loss": 1.0 / (1 + bits[-1][0]), "seconds": 0.1})
        if round == 5:
            saved = a.state_dict()
    assert a.chosen == [0, 3, 6, 9] and all(x == y for x, y in bits)
    assert all(bits[r] == bits[r - r % 3] for r in range(12))
    b2 = make_policy("greedy_bits_for_test(window=3)", seed=99)
    b2.load_state_dict(saved)
    replay = []
    for round in range(6, 12):
        replay.append(b2.decide(round, "w1", torch.zeros(2)).bits)
        if round % 3 == 2:
            b2.observe(round, {"loss": 1.0 / (1 + replay[-1]), "seconds": 0.1})
    assert replay == [b[0] for b in bits[6:]]
    assert torch.equal(b2.modules["value"].bias, a.modules["value"].bias)
    with pytest.raises(ValueError, match="window=0"):
        make_policy("greedy_bits_for_test(window=0)")
