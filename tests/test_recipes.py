"""One paper registry and the papers' methods as recipes on a shared set of common fields."""

import inspect
import os
import subprocess
import sys

import pytest

from thinwire.experiment import RunConfig
from thinwire.papers import PAPERS, REGISTRY, Recipe, paper
from thinwire.papers import gradient_dropping as gd
from thinwire.papers import mqgrad as mq
from thinwire.papers import oland_raj as orr
from thinwire.papers import quickstart as qs
from thinwire.papers import slim_dp as sd


def test_the_registry_finds_every_paper_package_in_order():
    assert PAPERS == ("quickstart", "slim_dp", "eventgrad", "oland_raj", "mqgrad", "gradient_dropping", "compare")
    assert [paper(p).order for p in PAPERS] == sorted(paper(p).order for p in PAPERS)
    assert all(paper(p).notebook == f"notebooks/{p}.ipynb" for p in PAPERS)
    with pytest.raises(ValueError, match=r"paper='terngrad' is not allowed: paper must be one of \['quickstart'"):
        paper("terngrad")


def test_every_recipe_applies_to_one_shared_common():
    common = RunConfig(model="mlp(hidden=(32,))", workers=3, steps=7, train_samples=960, seed=4, batch_size=16)
    configs = {(p, label): r.apply(common) for p in PAPERS for label, r in REGISTRY[p].recipes.items()}
    assert len(configs) == sum(len(REGISTRY[p].recipes) for p in PAPERS) >= 14
    for (p, label), config in configs.items():
        recipe = REGISTRY[p].recipes[label]
        assert recipe.paper == p and config.algorithm == recipe.algorithm
        assert (config.model, config.workers, config.steps, config.seed) == ("mlp(hidden=(32,))", 3, 7, 4)
        assert config.section == RunConfig(recipe.algorithm, **recipe.settings).section
    quant = configs[("slim_dp", sd.QUANT)]
    assert quant.push_codec == quant.pull_codec == "qsgd(bits=8, bucket=512, norm='l2')" and quant.pull_mode == "delta"
    drop = configs[("gradient_dropping", "99% dropping")]
    assert drop.algorithm == "sharded_ps" and drop.schedule == "async" and drop.warmup_steps == 100
    assert configs[("oland_raj", "c=6, M=4")].push_policy.startswith("entropy_bits(c=6, m=4")


def test_the_builders_use_the_recipes_and_take_keywords_only():
    runs = sd.slim_dp_runs(profile="smoke", seed=2)
    recipe = sd.PAPER.recipes[sd.slim_label(*sd.HEADLINE)]
    built = runs.headline[(4, sd.slim_label(*sd.HEADLINE), 2)]
    assert recipe.apply(built) == built
    quick = qs.quickstart_configs(profile="smoke")
    assert all(qs.PAPER.recipes[label].apply(c) == c for label, c in quick.items())
    head = orr.oland_raj_runs(profile="smoke").headline[("c=5, M=4", 0)]
    assert orr.PAPER.recipes["c=5, M=4"].apply(head) == head
    mq_runs = mq.mqgrad_runs(profile="smoke")
    # the recipe carries the paper's lr 0.2; the profiles below the paper's step at 0.1
    assert {c.lr for c in mq_runs.methods.values()} == {0.1} and mq.PAPER.recipes["MQGrad"].apply(RunConfig()).lr == 0.2
    assert all(mq.PAPER.recipes[label].apply(c, lr=0.1) == c for (label, _), c in mq_runs.methods.items())
    for builder in (sd.slim_dp_runs, qs.quickstart_configs, orr.oland_raj_runs, gd.gradient_dropping_runs,
                    sd.slim_dp_recipes, gd.gradient_dropping_recipes, orr.oland_raj_recipes, mq.mqgrad_runs,
                    mq.mqgrad_recipes):
        assert all(p.kind == p.KEYWORD_ONLY for p in inspect.signature(builder).parameters.values()), builder
    with pytest.raises(TypeError):
        sd.slim_dp_runs("smoke")


def test_a_recipe_holds_only_its_algorithms_own_settings():
    with pytest.raises(ValueError, match=r"settings \['workers'\] are common fields"):
        Recipe("x", "plump_dp", {"workers": 4})
    with pytest.raises(ValueError, match="alpha=2.0 is not allowed"):
        Recipe("x", "slim_dp", {"alpha": 2.0})
    with pytest.raises(ValueError, match="unknown parameter"):
        Recipe("x", "plump_dp", {"alpha": 0.3})


def test_a_recipes_codec_policy_pair_is_tried_when_a_config_is_made_from_it():
    recipe = Recipe("x", "weight_averaging", {"push_policy": "entropy_bits(c=5, m=4)", "push_codec": "fp32"})
    with pytest.raises(ValueError, match="^push_codec='fp32' with push_policy='entropy_bits.*takes no per-message decision"):
        recipe.apply(RunConfig())


IMPORT_COMPILES = """
import sys
from numba.core import event
compiled = []
class Listener(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Listener())
import thinwire.papers
print(len(thinwire.papers.PAPERS), sorted(set(compiled)))
"""


def test_importing_the_papers_compiles_no_kernel(tmp_path):
    """Every recipe is made at import; from an empty kernel cache that compiled every
    recipe's codecs (about 50 s here) in each process importing the papers."""
    env = {**os.environ, "THINWIRE_CACHE": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", IMPORT_COMPILES], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == [str(len(PAPERS)), "[]"], out.stdout[-2000:]
