"""The drop pass's cases, run on a device path against the host kernels: by the Triton
kernels under the interpreter (``test_triton_drop.py``'s script) and by torch's operations
(a process whose kernels are not interpreted takes them)."""

import numpy as np
import torch

from thinwire.engine.kernels import device, triton_drop
from thinwire.engine.kernels import drop_survivors
from thinwire.engine.kernels.drop_pass import drop_pass
from thinwire.engine.kernels.offsets import index_gaps, long_gaps

SIZES = (1, 63, 64, 65, 300)


def segment_cases(n: int) -> list[list[tuple[int, int, float]]]:
    """Thresholds every value passes, most pass (the dense compaction) and few pass (the
    compaction by rounds), ties at the threshold, an empty segment."""
    return [[(0, n, 0.5)], [(0, n, float("-inf"))], [(0, n, 0.0)], [(0, n, 2.0)],
            [(0, n // 2, 1.0), (n // 2, n // 2, 0.2), (n // 2, n, 2.5)]]


def compared(rng, n, segments, keep, inclusive, with_gradient, with_source) -> set[str]:
    """The device path's survivors, values and residual equal the host kernels' (also through
    ``drop_survivors``, with no slack: room for every survivor, then for one); the
    compaction kernels the Triton path would choose for it."""
    x = torch.from_numpy(rng.standard_normal(n).astype(np.float32))
    x[::13] = 0.5  # ties at a threshold
    if n > 40:
        x[37], x[38] = float("nan"), float("inf")  # always survive
    g = torch.from_numpy(rng.standard_normal(n).astype(np.float32)) if with_gradient else None
    s = torch.from_numpy(rng.standard_normal(n).astype(np.float32)) if with_source else None
    results = []
    for forced in (False, True):
        residual = x.clone()
        with device.forced() if forced else torch.no_grad():
            index, values = drop_pass(residual, g, segments, keep, inclusive, source=s)
        results.append((index, values.view(torch.int32), residual.view(torch.int32)))
    case = (n, segments, keep, inclusive, with_gradient, with_source)
    for name, a, b in zip(("index", "values", "residual"), results[1], results[0]):
        assert torch.equal(a, b), (name, *case)
    jobs = sum(-(-(b - a) // triton_drop.BLOCK) for a, b, _ in segments if b > a)
    chosen = {triton_drop.compactor(results[0][0].numel(), jobs)[0].__name__} if jobs else set()
    if n not in (63, 300):
        return chosen
    index, values = results[0][0], results[0][1].view(torch.float32)
    spans = [(a, b) for a, b, _ in segments]
    found = torch.tensor([[t for *_, t in segments], [7.0 + i for i in range(len(segments))]], dtype=torch.float64)
    gap = index_gaps(index)
    for forced, density in ((False, 1.0), (True, 1.0), (True, 1e-9)):
        residual = x.clone()
        with device.forced() if forced else torch.no_grad():
            kept = drop_survivors.survivors(residual, g, spans, found, keep, inclusive, density, s, gaps=True, slack=0)
        where = (forced, density, *case)
        assert torch.equal(kept.index, index) and torch.equal(kept.values.view(torch.int32), results[0][1]), where
        assert torch.equal(residual.view(torch.int32), results[0][2]), where
        assert [kept.thresholds, kept.equal] == found.tolist(), where
        assert kept.finite == bool(torch.isfinite(values).all()), where
        assert kept.counts == [int(((index >= a) & (index < b)).sum()) for a, b in spans], where
        if not forced:
            assert kept.gap is None and kept.longs is None, where
        else:
            assert torch.equal(kept.gap, gap) and kept.longs == tuple(long_gaps(gap).tolist()), where
    return chosen


def every_case(seed: int = 0) -> set[str]:
    """``compared`` over every size, segmentation and setting; the compactions chosen."""
    rng, chosen = np.random.default_rng(seed), set()
    for n in SIZES:
        for segments in segment_cases(n):
            for keep in (True, False):
                for inclusive in (True, False):
                    for with_gradient, with_source in ((False, False), (True, False), (True, True)):
                        if keep or not with_gradient:  # a residual kept read only takes no gradient
                            chosen |= compared(rng, n, segments, keep, inclusive, with_gradient, with_source)
    return chosen
