"""The methods compared: every paper's recipes, the baselines a user would pick instead, and
composed methods, as one ordered table of recipes.

A paper's method is its package's recipe, taken by label (``paper(name).recipes``), never
retyped; what this module adds is only what no paper holds:

- the all-reduce baselines (DDP's ring, ``algorithms/allreduce_dp.py``) in fp32, fp16 and
  bf16, and PowerSGD of rank 1, 2 and 4 with error feedback and warm start (Vogels et al.
  2019; torch's ``powerSGD_hook``), at the slim_dp paper's SGD (lr 0.1), the shared baseline
  optimizer of the parameter-server recipes;
- the papers' gradient compressors without a server: top-k with error feedback and QSGD, their
  recipes' codecs on an all-gather among the workers (``exchange="allgather"``,
  ``algorithms/allgather.py``), as a DDP communication hook deploys them; on the papers'
  parameter server the pulls stay fp32 and the server's link carries K of everything;
- composed methods: a paper's recipe with one codec changed: gradient dropping whose kept
  values are quantized to 4 bits and Huffman coded (``chain(graddrop, binquant)``), and top-k
  with error feedback whose kept values travel as 8-bit QSGD (``ef(chain(topk, qsgd))``), the
  nearest composition to Slim-DP + QSGD that the core runs: Slim-DP's key-cache wire
  (``codecs/sparsify/key_cache.py``) takes no second stage. EventGraD's Top-10% recipe is
  itself events + top-k.
"""

from __future__ import annotations

from ..recipe import Recipe, recipes

FP16_ALLREDUCE = "all-reduce fp16"
SGD = dict(lr=0.1)

# label -> (paper, that paper's recipe label); the order is the tables' and the plots'
FROM_PAPERS = {
    "Plump-DP (PS, fp32)": ("slim_dp", "Plump-DP"),
    "top-k 1% + EF, PS": ("quickstart", "top-k 1% + error feedback"),
    "QSGD 8-bit, PS (Quant-DP)": ("slim_dp", "Quant-DP"),
    "gradient dropping 99%": ("gradient_dropping", "99% dropping"),
    "Oland & Raj (c=5, M=4)": ("oland_raj", "c=5, M=4"),
    "Slim-DP (0.2, 0.1)": ("slim_dp", "Slim-DP (0.2, 0.1)"),
    "EventGraD": ("eventgrad", "EventGraD"),
    "EventGraD + top-10%": ("eventgrad", "EventGraD Top-10%"),
    "MQGrad": ("mqgrad", "MQGrad"),
}

# label -> the method whose push codec goes on an all-gather among the workers
ALLGATHER = {
    "top-k 1% + EF, all-gather": "top-k 1% + EF, PS",
    "QSGD 8-bit, all-gather": "QSGD 8-bit, PS (Quant-DP)",
}

# label -> (paper recipe it changes, the settings it changes)
COMPOSED = {
    "dropping 99% + 4-bit Huffman": ("gradient dropping 99%", dict(
        push_codec="chain(graddrop(ratio=0.99, sampling='random', scope='global', encoding='offset_value'), "
                   "binquant(bits=4, coder='huffman'))")),
    "top-k 1% + QSGD + EF, PS": ("top-k 1% + EF, PS", dict(push_codec="ef(chain(topk(ratio=0.01), qsgd(bits=8, bucket=512)))")),
}


def baseline_recipes() -> dict[str, Recipe]:
    """The all-reduce baselines: plain ring in three formats, PowerSGD at ranks 1, 2, 4."""
    return recipes("compare", {
        "all-reduce fp32": ("allreduce", dict(SGD, push_codec="fp32")),
        FP16_ALLREDUCE: ("allreduce", dict(SGD, push_codec="fp16")),
        "all-reduce bf16": ("allreduce", dict(SGD, push_codec="bf16")),
        **{f"PowerSGD rank {r}": ("allreduce", dict(SGD, powersgd_rank=r)) for r in (1, 2, 4)}})


def compare_recipes(include: tuple[str, ...] = ()) -> dict[str, Recipe]:
    """Every method as a recipe, baselines first; ``include`` keeps only those labels (in
    the table's order), ``ValueError`` naming an unknown one."""
    from .. import paper
    table = dict(baseline_recipes())
    for label, (name, theirs) in FROM_PAPERS.items():
        recipe = paper(name).recipes[theirs]
        table[label] = Recipe(label, recipe.algorithm, dict(recipe.settings), recipe.paper)
    for label, base in ALLGATHER.items():
        settings = table[base].settings
        table[label] = Recipe(label, "allreduce", dict(lr=settings["lr"], exchange="allgather",
                                                       push_codec=settings["push_codec"]), "compare")
    for label, (base, change) in COMPOSED.items():
        recipe = table[base]
        table[label] = Recipe(label, recipe.algorithm, {**recipe.settings, **change}, "compare")
    if include:
        unknown = [label for label in include if label not in table]
        if unknown:
            raise ValueError(f"methods={list(include)!r} is not allowed: {unknown} are not methods; "
                             f"they must be among {list(table)}")
        table = {label: recipe for label, recipe in table.items() if label in include}
    return table
