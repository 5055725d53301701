import pytest

from thinwire.experiment import RunConfig


@pytest.mark.parametrize("field,value,allowed", [
    ("workers", 0, r"int in \[1, 1024\]"), ("workers", 2.5, "int"), ("steps", -1, "int"),
    ("lr", 0.0, r"number in \(0"), ("momentum", 1.0, r"\[0.0, 0.999\]"), ("dataset", "imagenet", "one of"),
    ("optimizer", "adam", "one of"), ("network", "5g", "one of"), ("push_codec", "topk(ratio=3)", "ratio"),
    ("pull_mode", "diff", "one of"), ("model", "mlp(hidden=(0,))", "positive ints"),
    ("model", "mlp(activation='gelu')", "one of"), ("model", "cnn(pool=(3,))", r"\(size, stride\)"),
    ("eval_samples", 20000, r"\[1, 10000\]"), ("train_samples", 10, "at least workers"),
])
def test_bad_values_name_parameter_value_and_range(field, value, allowed):
    with pytest.raises(ValueError) as info:
        RunConfig(**{field: value})
    text = str(info.value)
    assert text.startswith(f"{field}={value!r}")
    assert pytest.importorskip("re").search(allowed, text), text


def test_unknown_fields_are_rejected():
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['wokers'\]"):
        RunConfig.from_dict({"wokers": 3})
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['lr_decay'\] for algorithm='plump_dp'"):
        RunConfig(lr_decay=0.9)


def test_sections_route_fields_and_nest_in_the_dict_form():
    config = RunConfig(algorithm="sharded_ps", workers=3, optimizer="adagrad", lr=0.005)
    assert config.workers == 3 and config.lr == 0.005 and config.section.optimizer == "adagrad"
    d = config.to_dict()
    assert d["sharded_ps"]["lr"] == 0.005 and "lr" not in d and d["workers"] == 3
    assert RunConfig.from_dict(d) == config
    moved = config.replace(lr=0.01, steps=7)
    assert (moved.lr, moved.steps, moved.optimizer) == (0.01, 7, "adagrad") and config.lr == 0.005
    averaging = config.replace(algorithm="weight_averaging", l1=1e-5)
    assert averaging.l1 == 1e-5 and averaging.workers == 3
    with pytest.raises(AttributeError):
        config.lr = 1.0


def test_equal_codec_specs_key_alike():
    assert RunConfig(push_codec="fp32").key() == RunConfig(push_codec="fp32()").key()
    assert RunConfig(push_codec="topk(ratio=0.01)").key() == RunConfig(push_codec="topk(ratio=1e-2)").key()


def test_key_is_stable_and_sensitive():
    a, b = RunConfig(), RunConfig()
    assert a.key() == b.key() and len(a.key()) == 16
    assert RunConfig(seed=1).key() != a.key()
    assert RunConfig.from_dict(a.to_dict()) == a


def test_a_codec_revision_changes_the_results_key_of_runs_that_use_it(monkeypatch):
    from thinwire.codecs import CODECS
    plain = RunConfig(push_codec="ef(topk(ratio=0.01))")
    dropping = RunConfig(push_codec="chain(graddrop(ratio=0.99), fp16)")
    keys = plain.key(), dropping.key()
    assert dropping.codec_revisions() == {"graddrop": CODECS["graddrop"].revision}
    monkeypatch.setattr(CODECS["graddrop"], "revision", CODECS["graddrop"].revision + 1)
    assert plain.key() == keys[0] and dropping.key() != keys[1]


def test_a_spec_is_parsed_once_into_its_canonical_text_names_and_digest(monkeypatch):
    from thinwire import specs
    from thinwire.codecs import make_codec
    spec = specs.parse_codec("chain( graddrop(ratio=0.99),fp16 )")
    assert spec.text == make_codec("chain(graddrop(ratio=0.99), fp16)").spec()
    assert spec.names == ("chain", "fp16", "graddrop")
    assert spec == specs.parse_codec(spec.text) and spec.digest == specs.parse_codec(spec.text).digest
    assert spec.digest != specs.parse_codec("chain(graddrop(ratio=0.9), fp16)").digest
    assert specs.parse_codec("sized(quantize(bits=8), min_numel=100, otherwise='fp16')").names == ("quantize", "sized")
    assert specs.parse_policy("event( horizon=1.0 )").names == ("event",)
    with pytest.raises(ValueError, match="unknown codec 'nope'"):
        specs.parse_codec("ef(nope)")
    built = []
    monkeypatch.setattr(specs, "make_codec", lambda text: built.append(text) or make_codec(text))
    assert specs.parse_codec("chain( graddrop(ratio=0.99),fp16 )") is spec and specs.parse_codec(spec.text) is spec
    assert built == []


def test_replace_checks_only_what_changed(monkeypatch):
    """A section change keeps the common part (no model build); a common change keeps the
    section; the specs a changed section holds are the cached ``Spec``s."""
    from thinwire import specs
    base = RunConfig(algorithm="eventgrad", model="eventgrad_mnist_cnn", push_codec="topk",
                     push_policy="event(horizon=1.0, forced=5, topk=0.1)")
    from thinwire.codecs import make_codec
    from thinwire.policies import make_policy
    built = []
    monkeypatch.setattr(specs, "make_codec", lambda *a: built.append(a) or make_codec(*a))
    monkeypatch.setattr(specs, "make_policy", lambda *a: built.append(a) or make_policy(*a))
    by_lr, by_seed = base.replace(lr=0.01), base.replace(seed=3)
    assert by_lr.common is base.common and by_lr.lr == 0.01 and by_lr.section is not base.section
    assert by_seed.section is base.section and by_seed.seed == 3
    assert built == []  # no spec parsed or tried again
    assert by_lr == RunConfig(algorithm="eventgrad", model="eventgrad_mnist_cnn", push_codec="topk", lr=0.01,
                              push_policy="event(horizon=1.0, forced=5, topk=0.1)")
    assert by_lr.key() == RunConfig.from_dict(by_lr.to_dict()).key()
    with pytest.raises(ValueError, match="^push_codec='fp32' with push_policy="):
        base.replace(push_codec="fp32")
    with pytest.raises(ValueError, match="at least workers"):
        base.replace(train_samples=10)
