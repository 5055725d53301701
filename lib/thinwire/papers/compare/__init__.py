"""When does compression pay? Every paper's methods and the baselines users pick instead
(DDP's all-reduce in fp32/fp16/bf16, PowerSGD) on one model, from the same seeds, with
accuracy against bytes, and time to a target accuracy against bandwidth priced on the
network model corrected and checked on a shaped network (``netcheck``)."""

from ..record import Headline, Paper
from .analysis import (COMPUTES, GRID, MARKS, accuracy_bytes, codec_against_saving, crossovers, default_target,
                       fastest_at, map_fastest, mean_seconds, near_best_target, nearest, pareto, paying_intervals,
                       spread, ties, time_map, time_to_target, which_when)
from .checked import FIXED_COSTS, NETCHECK_RUN, quoted_netcheck, report_scrap
from .methods import ALLGATHER, COMPOSED, FP16_ALLREDUCE, FROM_PAPERS, baseline_recipes, compare_recipes
from .pricing import SCHEDULES, FixedCosts, StepTimes, cited, crossover, ranks_of
from .profiles import COMPARE
from .protocol import PAPERS_OWN, TUNING_SEED, at_edge, best_lrs, optimizer_of, shared
from .runs import ComparePlan, compare_configs, compare_plan

PAPER = Paper(name="compare", title="Which method pays, when: every paper's methods against DDP's all-reduce and "
              "PowerSGD, priced on a network model checked on a shaped network", order=6,
              recipes=baseline_recipes(),
              reproduces="Which method pays, when: every method above beside DDP's fp16 all-reduce and PowerSGD, "
                         "one optimizer protocol",
              headline=Headline("fastest_at_10MB_s", "fastest to the target at 10 MB/s: {ours}"))

__all__ = ["FIXED_COSTS", "NETCHECK_RUN", "quoted_netcheck", "report_scrap", "COMPUTES", "map_fastest", "near_best_target", "spread", "ties", "time_map", "ALLGATHER", "COMPARE", "ComparePlan", "PAPERS_OWN", "TUNING_SEED", "at_edge", "best_lrs", "compare_plan",
           "optimizer_of", "shared", "fastest_at", "paying_intervals", "cited", "COMPOSED", "FP16_ALLREDUCE", "FROM_PAPERS", "GRID", "MARKS", "PAPER", "SCHEDULES", "FixedCosts",
           "StepTimes", "accuracy_bytes", "baseline_recipes", "codec_against_saving", "compare_configs",
           "compare_recipes", "crossover", "crossovers", "default_target", "mean_seconds", "nearest", "pareto",
           "ranks_of", "time_to_target", "which_when"]
