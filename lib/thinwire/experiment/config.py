"""RunConfig: everything that determines a run's numbers, frozen and validated.

A config is the fields every run has (``Common``: data, model, workers, steps, network,
device, ...) plus one section of the algorithm's own parameters (each algorithm module's ``Section``,
chosen by ``algorithm``). Keyword construction routes each field to where it belongs:

    RunConfig(algorithm="sharded_ps", workers=4, optimizer="adagrad", lr=0.005)

and so does ``config.replace(...)``. Attribute access is flat (``config.lr``). The dict
form nests the section under the algorithm's name:
``{"algorithm": "sharded_ps", "workers": 4, ..., "sharded_ps": {"optimizer": "adagrad", ...}}``.

A bad value raises ``ValueError`` naming the parameter, the value and what is allowed,
before any data is read or any model is built. Codec specs are stored in canonical form,
so equal configs hash alike; the hash keys a run's results.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import asdict, dataclass, fields, replace

from ..algorithms import ALGORITHMS
from ..codecs import CODECS
from ..comm import canonical_network
from ..datasets import AUGMENTS, IMAGE_SHAPES, LOADERS, SAMPLINGS, STANDARDIZE, TRAIN_SIZES, input_shape
from ..models import check_model
from ..models.init import check_init
from ..models.replicas import LOSSES
from ..specs import parse_codec
from ..validation import check, did_you_mean, int_in, normalize_numbers, one_of
from .device import DEVICES

RESULTS_FORMAT = 5  # bump when results computed from the same config would differ (3: wire v2, sections;
#                    4: seeds from a seed tree, codec time by side and part, exchange times)
#                    5: the model as one spec
# Fields added after results format 3 enter the key only when set away from these defaults,
# so the results of configs written before they existed keep their keys.
KEY_NEUTRAL = {"init": "default", "sampling": "shuffled", "augment": "none", "crop": 0, "standardize": "channel"}


@dataclass(frozen=True)
class Common:
    algorithm: str = "plump_dp"        # distributed loop (see thinwire.algorithms)
    dataset: str = "mnist"             # mnist | fashion_mnist | cifar10
    model: str = "mlp"                 # a model spec: mlp(hidden=(64,)), cnn(channels=(10, 20), ...), a paper's named network
    loss: str = "cross_entropy"        # cross_entropy | mse (tanh outputs, +-1 targets)
    workers: int = 4                   # K local agents
    batch_size: int = 32               # per worker
    steps: int = 100                   # synchronous steps
    train_samples: int = 0             # 0 = whole training set, else the first n of a seeded shuffle
    network: str = "ethernet_10g"      # network preset for modelled communication time
    eval_every: int = 20               # evaluate the global model every n steps (and at the end)
    eval_samples: int = 10000          # test samples used for evaluation
    seed: int = 0
    device: str = "auto"               # auto | cpu | cuda: where models, batches and codec tensor work live
    init: str = "default"              # weight initialisation: default | normal(std=s) | uniform(a=r) (models/init.py)
    sampling: str = "shuffled"         # shuffled: seeded shards, reshuffled every epoch | sequential: contiguous shards, same order
    augment: str = "none"              # none | crop_flip: pad 4 with black, random crop, random flip (per worker, seeded)
    crop: int = 0                      # 0 | n: the central n x n pixels of every image, train and test (datasets/transforms.py)
    standardize: str = "channel"       # channel: the data set's mean and std per channel | image: TF's per-image standardisation

    def __post_init__(self):
        normalize_numbers(self)
        one_of("algorithm", self.algorithm, ALGORITHMS)
        one_of("dataset", self.dataset, LOADERS)
        object.__setattr__(self, "model", check_model(self.model))
        side = min(IMAGE_SHAPES[self.dataset][1:])
        int_in("crop", self.crop, 0, side)
        one_of("standardize", self.standardize, STANDARDIZE)
        check_builds(self.model, self.input_shape)
        one_of("loss", self.loss, LOSSES)
        int_in("workers", self.workers, 1, 1024)
        int_in("batch_size", self.batch_size, 1, 1 << 16)
        int_in("steps", self.steps, 1)
        size = TRAIN_SIZES[self.dataset]
        int_in("train_samples", self.train_samples, 0, size)
        check("train_samples", self.train_samples,
              self.train_samples == 0 or self.train_samples >= self.workers * self.batch_size,
              f"0 or at least workers * batch_size = {self.workers * self.batch_size}")
        shard = (self.train_samples or size) // self.workers
        check("batch_size", self.batch_size, self.batch_size <= shard,
              f"at most a worker's shard: {self.train_samples or size} samples / {self.workers} workers = {shard}")
        try:
            object.__setattr__(self, "network", canonical_network(self.network))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"network={self.network!r} is not allowed: {exc}") from None
        int_in("eval_every", self.eval_every, 1)
        int_in("eval_samples", self.eval_samples, 1, 10000)
        int_in("seed", self.seed, 0, 2**31 - 1)
        one_of("device", self.device, DEVICES)
        object.__setattr__(self, "init", check_init(self.init))
        one_of("sampling", self.sampling, SAMPLINGS)
        one_of("augment", self.augment, AUGMENTS)
        check("augment", self.augment, self.augment == "none" or self.standardize == "channel",
              "'none' with standardize='image' (the padding is black on the per-channel scale only)")

    @property
    def input_shape(self) -> tuple[int, int, int]:
        """(C, H, W) of the images the model sees (after ``crop``)."""
        return input_shape(self.dataset, self.crop)


COMMON_FIELDS = tuple(f.name for f in fields(Common))
MODEL_OPTIONS = ("hidden", "activation", "layer_norm", "channels", "kernel", "dropout", "lrn")  # now in the model spec


@functools.lru_cache(maxsize=1024)
def check_builds(model: str, image_shape) -> None:
    """Build ``model`` on the meta device (no memory) for ``image_shape``, so that a network
    that does not fit the data (pooling below 1x1) is refused before any data is read (once
    per model and shape in a process: a ``.replace()`` that keeps both builds nothing)."""
    import torch
    from ..models import build_model
    try:
        with torch.device("meta"):
            build_model(model, image_shape, 10, 0)
    except ValueError as exc:
        raise ValueError(f"model={model!r} is not allowed for {image_shape[1]}x{image_shape[2]} images: {exc}") from None


class RunConfig:
    __slots__ = ("common", "section")

    def __init__(self, algorithm: str = "plump_dp", section=None, **values):
        one_of("algorithm", algorithm, ALGORITHMS)
        section_cls = ALGORITHMS[algorithm].Section
        common = {k: v for k, v in values.items() if k in COMMON_FIELDS}
        rest = {k: v for k, v in values.items() if k not in COMMON_FIELDS}
        known = {f.name for f in fields(section_cls)}
        unknown = sorted(set(rest) - known)
        if moved := [u for u in unknown if u in MODEL_OPTIONS]:
            raise ValueError(f"parameter(s) {moved} are options of the model spec, not of the config: write them "
                             f"into model, e.g. model='mlp(hidden=(64,), activation=\"tanh\")' or "
                             f"model='cnn(channels=(10, 20), kernel=3, dropout=0.5)'")
        if unknown:
            raise ValueError(f"unknown parameter(s) {unknown} for algorithm={algorithm!r}"
                             f"{did_you_mean(unknown, [*COMMON_FIELDS, *known])}; common parameters: "
                             f"{list(COMMON_FIELDS)}; {algorithm} parameters: {sorted(known)}")
        if section is not None and not isinstance(section, section_cls):
            raise ValueError(f"section={section!r} is not allowed: algorithm={algorithm!r} takes a "
                             f"{section_cls.__name__}")
        if section is None:
            section = section_cls(**rest)
        elif rest:
            section = replace(section, **rest)   # a given section is checked again only where it changes
        common = Common(algorithm=algorithm, **common)
        section.check_common(common)
        object.__setattr__(self, "common", common)
        object.__setattr__(self, "section", section)

    @property
    def input_shape(self) -> tuple[int, int, int]:
        return self.common.input_shape

    def __getattr__(self, name: str):
        for part in (object.__getattribute__(self, "common"), object.__getattribute__(self, "section")):
            if name in part.__dataclass_fields__:
                return getattr(part, name)
        raise AttributeError(f"RunConfig has no parameter {name!r}")

    def __setattr__(self, name, value):
        raise AttributeError("RunConfig is frozen: use config.replace(...)")

    @property
    def model_spec(self):
        """The model as a ``ModelSpec`` (``config.model_spec.hidden``)."""
        from ..models import make_model
        return make_model(self.model)

    def replace(self, **changes) -> RunConfig:
        """A copy with ``changes`` applied (common or section fields; a new ``algorithm``
        starts from that algorithm's default section). Only what changed is checked again:
        an unchanged part is kept as it is, and the specs and model builds a changed part
        checks again are the cached ``Spec``s and builds of this process."""
        algorithm = changes.pop("algorithm", self.algorithm)
        if algorithm == self.algorithm and changes and set(changes) <= set(self.section.__dataclass_fields__):
            section = replace(self.section, **changes)       # the common fields are kept as they are
            section.check_common(self.common)
            return self._made(self.common, section)
        values = {k: getattr(self.common, k) for k in COMMON_FIELDS if k != "algorithm"}
        section = self.section if algorithm == self.algorithm else None
        return RunConfig(algorithm, section, **{**values, **changes})

    @classmethod
    def _made(cls, common: Common, section) -> RunConfig:
        config = object.__new__(cls)
        object.__setattr__(config, "common", common)
        object.__setattr__(config, "section", section)
        return config

    def to_dict(self) -> dict:
        d = asdict(self.common)
        d[self.algorithm] = asdict(self.section)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> RunConfig:
        d = dict(d)
        algorithm = d.pop("algorithm", "plump_dp")
        one_of("algorithm", algorithm, ALGORITHMS)
        section = d.pop(algorithm, {})
        if not isinstance(section, dict):
            raise ValueError(f"{algorithm}={section!r} is not allowed: it must be a dict of {algorithm} parameters")
        clash = sorted(set(section) & set(d))
        if clash:
            raise ValueError(f"parameter(s) {clash} given both at the top level and in the {algorithm!r} section")
        return cls(algorithm, **d, **section)

    def codec_revisions(self) -> dict[str, int]:
        """The revision of every codec the config's codec specs name, where it is above 0
        (the names from each spec's ``Spec``, parsed once per process)."""
        specs = [v for k, v in asdict(self.section).items() if k.endswith("_codec") and isinstance(v, str)]
        names = {n for spec in specs for n in parse_codec(spec).names}
        return {n: CODECS[n].revision for n in sorted(names) if CODECS[n].revision}

    def key(self) -> str:
        """Stable 16-hex-digit hash of the config, the results format and the revisions of
        the codecs it uses (the results key); ``KEY_NEUTRAL`` fields at their defaults are left out,
        and so is ``network`` (pricing is analysis: a finished run is priced on any network)
        unless the algorithm's training reads it (``reads_network``)."""
        doc = {k: v for k, v in self.to_dict().items() if not (k in KEY_NEUTRAL and v == KEY_NEUTRAL[k])}
        if not getattr(ALGORITHMS[self.algorithm], "reads_network", False):
            del doc["network"]
        doc["results_format"] = RESULTS_FORMAT
        if revisions := self.codec_revisions():
            doc["codec_revisions"] = revisions
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def __eq__(self, other) -> bool:
        return isinstance(other, RunConfig) and other.to_dict() == self.to_dict()

    def __hash__(self) -> int:
        return hash(self.key())

    def __repr__(self) -> str:
        items = ", ".join(f"{k}={v!r}" for k, v in {**asdict(self.common), **asdict(self.section)}.items())
        return f"RunConfig({items})"

    def __getstate__(self):
        return self.to_dict()

    def __setstate__(self, state):
        other = RunConfig.from_dict(state)
        object.__setattr__(self, "common", other.common)
        object.__setattr__(self, "section", other.section)
