"""``thinwire codecs|policies|algorithms|models|recipes``, ``run --recipe`` and ``--version``."""

from __future__ import annotations

import dataclasses
import inspect
import json

import pytest

from thinwire.algorithms import ALGORITHMS
from thinwire.cli import main
from thinwire.codecs import CODECS
from thinwire.models import MODELS
from thinwire.papers import PAPERS, paper
from thinwire.policies import POLICIES

TINY = ["--set", "model=mlp(hidden=(16,))", "--set", "steps=2", "--set", "train_samples=256", "--set",
        "eval_samples=100", "--set", "eval_every=2", "--set", "batch_size=16"]


def _listed(capsys, what: str) -> dict[str, str]:
    """{name: its line, with its arguments} of ``thinwire <what>``."""
    assert main([what]) == 0
    rows, name = {}, None
    for line in capsys.readouterr().out.splitlines():
        if line.startswith("    "):
            rows[name] += "\n" + line.strip()
        else:
            name = line if what == "recipes" else line.split("(", 1)[0]  # a recipe's label may hold "("
            rows[name] = line
    return rows


def _arguments(function, skip=("self", "seed")):
    return [p.name for p in inspect.signature(function).parameters.values() if p.name not in skip]


@pytest.mark.parametrize("what, registry, arguments", [
    ("codecs", CODECS, _arguments),
    ("policies", POLICIES, _arguments),
    ("algorithms", ALGORITHMS, lambda cls: [f.name for f in dataclasses.fields(cls.Section)]),
    ("models", MODELS, lambda cls: [f.name for f in dataclasses.fields(cls) if f.init and f.name != "name"]),
])
def test_every_registered_name_is_listed_with_its_arguments_and_a_line(capsys, what, registry, arguments):
    rows = _listed(capsys, what)
    assert set(rows) == set(registry)
    for name, cls in registry.items():
        head, _, line = rows[name].partition("\n")
        assert all(f"{a}=" in head or f"*{a}" in head or f"({a}" in head or f" {a}," in head or f" {a})" in head
                   for a in arguments(cls)), (name, head)
        assert line, f"{name} has no line of documentation"


def test_codec_defaults_are_shown(capsys):
    assert "qsgd(bits=8, bucket=512, norm='l2', coding='fixed')" in _listed(capsys, "codecs")["qsgd"]


def test_every_papers_recipes_are_listed_and_one_per_paper_makes_its_config(capsys):
    rows = _listed(capsys, "recipes")
    for name in PAPERS:
        recipes = paper(name).recipes
        assert {f"{name}:{label}" for label in recipes} <= set(rows)
        label, recipe = next(iter(recipes.items()))
        assert main(["config", "--recipe", f"{name}:{label}", *TINY]) == 0
        config = json.loads(capsys.readouterr().out)
        common = dict(model="mlp(hidden=(16,))", steps=2, train_samples=256, eval_samples=100, eval_every=2,
                      batch_size=16)
        assert config == json.loads(json.dumps(recipe.apply(common).to_dict()))
        assert config["algorithm"] == recipe.algorithm and config["steps"] == 2


def test_a_recipe_runs(tmp_path, capsys):
    assert main(["run", "--recipe", "gradient_dropping:99% dropping", *TINY, "--results", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["final_accuracy"] > 0 and "thinwire: trained" in err


@pytest.mark.long  # make test-long: a short run of each paper's first recipe (the one above is in make test)
@pytest.mark.parametrize("name", PAPERS)
def test_one_recipe_per_paper_runs_from_the_command_line(tmp_path, capsys, name):
    label = next(iter(paper(name).recipes))
    assert main(["run", "--recipe", f"{name}:{label}", *TINY, "--results", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["key"] and err.startswith(f"thinwire: trained {paper(name).recipes[label].algorithm}, ")
    assert " 2 steps (inprocess)" in err.splitlines()[0]


@pytest.mark.parametrize("recipe, said", [
    ("slim_dp:Slim-DP (0.2,0.1)", "slim_dp has no recipe 'Slim-DP (0.2,0.1)' (did you mean 'Slim-DP (0.2, 0.1)'"),
    ("slimdp:Plump-DP", "paper one of ['quickstart', 'slim_dp',"),
])
def test_a_wrong_recipe_names_the_closest(capsys, recipe, said):
    assert main(["config", "--recipe", recipe]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.startswith("thinwire ")


def test_presets_are_an_aligned_table(capsys):
    from thinwire.comm import PRESETS
    assert main(["presets"]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split()[:2] == ["key", "name"] and [r.split()[0] for r in rows] == list(PRESETS)
    assert len({len(line) for line in [header, *rows]}) == 1  # every column lined up, the last one right-aligned
    assert "1.25 GB/s" in rows[list(PRESETS).index("ethernet_10g")]
