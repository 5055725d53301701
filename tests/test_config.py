import pytest

from thinwire.experiment import RunConfig


@pytest.mark.parametrize("field,value,allowed", [
    ("workers", 0, r"int in \[1, 1024\]"), ("workers", 2.5, "int"), ("steps", -1, "int"),
    ("lr", 0.0, r"number in \(0"), ("momentum", 1.0, r"\[0.0, 0.999\]"), ("dataset", "imagenet", "one of"),
    ("optimizer", "adam", "one of"), ("network", "5g", "one of"), ("push_codec", "topk(ratio=3)", "ratio"),
    ("pull_mode", "diff", "one of"), ("hidden", (0,), "positive ints"), ("activation", "gelu", "one of"),
    ("eval_samples", 20000, r"\[1, 10000\]"), ("train_samples", 10, "at least workers"),
])
def test_bad_values_name_parameter_value_and_range(field, value, allowed):
    with pytest.raises(ValueError) as info:
        RunConfig(**{field: value})
    text = str(info.value)
    assert text.startswith(f"{field}={value!r}")
    assert pytest.importorskip("re").search(allowed, text), text


def test_unknown_fields_are_rejected():
    with pytest.raises(ValueError, match="unknown RunConfig parameter"):
        RunConfig.from_dict({"wokers": 3})


def test_key_is_stable_and_sensitive():
    a, b = RunConfig(), RunConfig()
    assert a.key() == b.key() and len(a.key()) == 16
    assert RunConfig(seed=1).key() != a.key()
    assert RunConfig.from_dict(a.to_dict()) == a
