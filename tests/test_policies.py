"""Merge decodes, receiver states and policies."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from thinwire.codecs import CodecState, StateBook, make_codec
from thinwire.seed_tree import SeedTree
from thinwire.policies.entropy_bits import bit_width
from thinwire.policies import Decision, EntropyBits, RandomBits, RelativeChange, make_policy

SPARSE = ["topk(ratio=0.25)", "ef(topk(ratio=0.1))", "chain(topk(ratio=0.3), fp16)",
          "graddrop(ratio=0.8, threshold='exact', residual=False)",
          "graddrop(ratio=0.5, encoding='index_value', bits=2, levels='column', threshold='exact')"]


@pytest.mark.parametrize("spec", SPARSE)
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_merge_overwrites_only_what_the_message_carries(spec, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(64, generator=g)
    codec = make_codec(spec)
    message = codec.encode(x, CodecState(0), "w")
    _, payload, numel = codec._open(message)
    index, values = codec.sparse_entries(payload, numel, CodecState(0), "w")
    into = torch.full((64,), 7.0)
    assert codec.merge(message, into) == index.numel()
    carried = torch.zeros(64, dtype=torch.bool)
    carried[index] = True
    assert torch.equal(into[~carried], torch.full((int((~carried).sum()),), 7.0))
    assert torch.equal(into[carried], codec.decode(message)[carried])


def test_a_sent_zero_differs_from_an_unsent_entry():
    x = torch.tensor([5.0, 0.0, 0.0, 0.0])  # top-2 by magnitude: 5 and the first zero (a tie)
    codec = make_codec("topk(ratio=0.5)")
    into = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert codec.merge(codec.encode(x), into) == 2
    assert into[0] == 5.0
    # one zero was sent and overwrote its entry; the two zeros not sent kept 2, 3 or 4
    assert sorted(into[1:].tolist()) in ([0.0, 3.0, 4.0], [0.0, 2.0, 4.0], [0.0, 2.0, 3.0])


def test_dense_merge_overwrites_everything_and_shapes_must_match():
    codec = make_codec("quantize(bits=8)")
    x = torch.randn(3, 5)
    into = torch.zeros(3, 5)
    assert codec.merge(codec.encode(x), into) == 15
    assert torch.equal(into, codec.decode(codec.encode(x)))
    with pytest.raises(ValueError, match="shape"):
        codec.merge(codec.encode(x), torch.zeros(15))


def test_state_book_is_per_pair_and_checkpointed():
    book = StateBook(SeedTree(10).pairs("worker", "receive"))
    a, b = book(0, 1), book(1, 0)
    assert a is book(0, 1) and a is not b and a.seed != b.seed
    a.slot("w")["copy"] = torch.ones(3)
    torch.rand(2, generator=a.generator)
    saved = book.state_dict()
    other = StateBook(SeedTree(10).pairs("worker", "receive"))
    other.load_state_dict(saved)
    assert torch.equal(other(0, 1).slot("w")["copy"], torch.ones(3))
    assert torch.equal(torch.rand(4, generator=other(0, 1).generator), torch.rand(4, generator=a.generator))


def test_entropy_policy_gives_binquant_its_bits():
    """Alg. 1 split as the paper's lines: the policy picks N (lines 3-5), binquant(bits=0)
    quantizes to N bits and Huffman-codes (lines 6-10), the same as a fixed N-bit binquant."""
    w = torch.randn(392, 50, generator=torch.Generator().manual_seed(2)) * 0.1
    policy = make_policy("entropy_bits(c=5, m=4, f=0.03, ceiling=10)", seed=7)
    decision = policy.decide(0, "w", w)
    assert decision.bits == bit_width(decision.entropy, 5, 10)[0] and 5 <= decision.bits <= 10
    split, state = make_codec("binquant(bits=0, coder='huffman')"), CodecState(0)
    decoded = split.decode(split.encode(w, state, "w", decision))
    assert state.last.bits == decision.bits and state.last.entropy == decision.entropy
    fixed = make_codec(f"binquant(bits={decision.bits}, coder='huffman')")
    assert torch.equal(decoded, fixed.decode(fixed.encode(w)))
    with pytest.raises(ValueError, match="policy decision"):
        split.encode(w)


def test_policies_are_seeded_and_restorable():
    a, b = RandomBits((2, 4, 8), seed=3), RandomBits((2, 4, 8), seed=3)
    first = [a.decide(i, "k", torch.zeros(())).bits for i in range(20)]
    assert first == [b.decide(i, "k", torch.zeros(())).bits for i in range(20)] and len(set(first)) > 1
    saved = a.state_dict()
    nxt = [a.decide(i, "k", torch.zeros(())).bits for i in range(5)]
    c = RandomBits((2, 4, 8), seed=99)
    c.load_state_dict(saved)
    assert [c.decide(i, "k", torch.zeros(())).bits for i in range(5)] == nxt


def test_event_policy_skips_until_the_tensor_moves():
    policy = RelativeChange(threshold=0.5)
    x = torch.ones(10)
    assert policy.decide(0, "w", x).send
    policy.sent(0, "w", x)
    assert not policy.decide(1, "w", x * 1.2).send
    assert policy.decide(2, "w", x * 2).send
    with pytest.raises(ValueError, match="decision not to send"):
        make_codec("fp32").encode(x, decision=Decision(send=False))


@pytest.mark.parametrize("spec,match", [("nope()", "unknown policy"), ("entropy_bits(c=11)", "c=11"),
                                        ("random_bits(choices=())", "choices"), ("relative_change(threshold=-1)", "threshold"),
                                        ("relative_change(threshold=1, threshold=2)", "once"), ("relative_change(seed=3)", "seed")])
def test_bad_policy_specs_name_the_problem(spec, match):
    with pytest.raises(ValueError, match=match):
        make_policy(spec)


def test_a_codec_that_takes_no_decision_says_so():
    with pytest.raises(ValueError, match="no per-message decision"):
        make_codec("fp32").encode(torch.ones(3), decision=Decision(bits=4))
    assert EntropyBits().spec() == "entropy_bits(c=5, m=4, f=0.03, ceiling=10)"


def test_entropy_rule_readings_fractional_and_nats():
    """``rounding='fractional'``: round(2^(H + c)) bins in ceil(log2) bits; ``unit='nats'``:
    H ln 2 in place of H. Defaults stay out of the spec (old results keys hold)."""
    assert bit_width(2.6, 5, 10) == (8, None)
    assert bit_width(2.6, 5, 10, unit="nats") == (7, None)           # 2.6 ln 2 = 1.80 -> ceil(6.80)
    assert bit_width(2.6, 5, 10, rounding="fractional") == (8, round(2 ** 7.6))
    assert bit_width(6.0, 5, 10, rounding="fractional") == (10, 1024)  # capped at the ceiling
    assert bit_width(0.0, 0, 10, rounding="fractional") == (1, 2)
    assert make_policy("entropy_bits(c=5)").spec() == "entropy_bits(c=5, m=4, f=0.03, ceiling=10)"
    w = torch.randn(392, 50, generator=torch.Generator().manual_seed(2))
    policy = make_policy("entropy_bits(c=5, rounding='fractional')", seed=7)
    decision = policy.decide(0, "w", w)
    plain = make_policy("entropy_bits(c=5)", seed=7).decide(0, "w", w)
    assert decision.entropy == plain.entropy and 1 << (decision.bits - 1) < decision.levels < 1 << decision.bits
    assert decision.levels == round(2 ** (plain.entropy + 5))
    with pytest.raises(ValueError, match="rounding='floor' is not allowed"):
        make_policy("entropy_bits(rounding='floor')")
    with pytest.raises(ValueError, match="unit='bans' is not allowed"):
        make_policy("entropy_bits(unit='bans')")
