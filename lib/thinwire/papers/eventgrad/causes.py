"""EventGraD's gap to D-PSGD, two named causes tested over seeds (4 peers, profile key
``causes``; the default notebook quotes ``quoted.CAUSES_RUN``).

**Pinning.** A peer averages its tensor with its neighbours' copies, and a copy changes only
when its owner sends. Once the copies go stale, the average pulls a tensor back towards them
every iteration, its norm stops moving past the threshold, and the trigger stops firing
(``last_events``: tensors whose last event was long before the run's end). A heartbeat
(``max_gap``: a tensor unsent that long is sent) unpins it. Sending more also buys accuracy
by itself, so each trigger is set against a random trigger at its own share of messages
(``random_send`` at ``share_after_forced``, the same forced iterations): the trigger's choice of moments is worth the
per-seed difference of their accuracies (``pinning_table``). Pinning predicts that the
heartbeat raises that worth: the difference of the two worths is ``heartbeat's effect``.

**Momentum.** SGD with momentum 0.9 (the CIFAR-10 setting's, lr 0.01) narrowed the gap on
one seed, but at horizon 1 it also sent a larger share. ``matched_horizon`` finds, on the
first seed, the horizon at which EventGraD with momentum sends the share EventGraD sends
without it; ``momentum_table`` sets the three (without momentum; with it at horizon 1; with
it at the matched horizon) against their own D-PSGD, seed by seed.
"""

from __future__ import annotations

import numpy as np

from .analysis import accuracy, mean_se, messages_pct, paired_table


def worth(trigger: dict, random: dict) -> tuple[float, float]:
    """(mean, standard error) over the seeds of a trigger's accuracy less that of a random
    trigger at its share: what its choice of moments is worth, in points."""
    return mean_se([accuracy(trigger[s]) - accuracy(random[s]) for s in sorted(trigger)])


def pinning_table(event: dict, event_random: dict, beat: dict, beat_random: dict, dpsgd: dict,
                  max_gap: int) -> "pd.DataFrame":
    """{seed: result} of EventGraD, a random trigger at its share, EventGraD with a heartbeat
    every ``max_gap`` iterations and a random trigger at that share, against ``dpsgd``
    ({seed: D-PSGD}): ``paired_table``'s columns, and on the two trigger rows the worth of
    the choice (``worth``) with its standard error; the last row, ``heartbeat's effect``,
    is the per-seed difference of the two worths."""
    import pandas as pd
    beat_label = f"EventGraD + heartbeat every {max_gap}"
    frame = paired_table({"EventGraD": event, "random trigger at EventGraD's share": event_random,
                          beat_label: beat, "random trigger at its share": beat_random}, dpsgd)
    frame["choice worth"], frame["choice se"] = np.nan, np.nan
    for label, trigger, random in (("EventGraD", event, event_random), (beat_label, beat, beat_random)):
        frame.loc[label, ["choice worth", "choice se"]] = worth(trigger, random)
    seeds = sorted(event)
    effect = [(accuracy(beat[s]) - accuracy(beat_random[s]) - accuracy(event[s]) + accuracy(event_random[s]))
              for s in seeds]
    mean, se = mean_se(effect)
    row = pd.DataFrame({"seeds": [len(seeds)], "choice worth": [mean], "choice se": [se]}, index=["heartbeat's effect"])
    return pd.concat([frame, row])


def matched_horizon(search: dict, dpsgd, target_pct: float) -> float:
    """The horizon at which EventGraD with momentum sends ``target_pct``% of ``dpsgd``'s
    messages: linear in log horizon between the two searched horizons ({horizon: result},
    first seed) whose shares bracket it, the nearest searched one outside them; 3
    significant digits."""
    points = sorted((h, messages_pct(r, dpsgd)) for h, r in search.items())
    if not points:
        raise ValueError("search is empty: no momentum_horizons ran")
    chosen = min(points, key=lambda p: abs(p[1] - target_pct))[0]
    for (h0, s0), (h1, s1) in zip(points, points[1:]):
        if min(s0, s1) <= target_pct <= max(s0, s1) and s0 != s1:
            t = (target_pct - s0) / (s1 - s0)
            chosen = float(np.exp(np.log(h0) + t * (np.log(h1) - np.log(h0))))
            break
    return float(f"{chosen:.3g}")


def momentum_table(plain: dict, plain_dpsgd: dict, at_base: dict, matched: dict, momentum_dpsgd: dict,
                   horizon: float, base: float = 1.0) -> "pd.DataFrame":
    """EventGraD without momentum (against D-PSGD without it), and with momentum at the
    ``base`` horizon and at the matched ``horizon`` (against D-PSGD with it):
    ``paired_table``'s columns, each {seed: result}."""
    import pandas as pd
    return pd.concat([paired_table({f"no momentum, horizon {base:g}": plain}, plain_dpsgd),
                      paired_table({f"momentum 0.9, horizon {base:g}": at_base,
                                    f"momentum 0.9, horizon {horizon:g} (matched share)": matched}, momentum_dpsgd)])
