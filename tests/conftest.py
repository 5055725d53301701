import os

os.environ.setdefault("THINWIRE_PROGRESS", "0")
if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get("THINWIRE_TEST_THREADS") != "default":
    # `make unit` runs two workers on two cores: one thread each (and in the processes the
    # tests start), or torch's and numba's spinning OpenMP threads oversubscribe the cores.
    # `make golden-test` keeps the default counts (THINWIRE_TEST_THREADS=default), as the
    # goldens were made, with passive OpenMP waiting instead.
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ.setdefault(_name, "1")

import pytest  # noqa: E402


@pytest.fixture
def interrupt_at(monkeypatch):
    """``interrupt_at(step)`` makes the runner raise KeyboardInterrupt when it reaches
    ``step`` (after the step's checkpoint decision of the step before); calling the returned
    function lets runs finish again."""
    import thinwire.experiment.runner as runner
    real = runner._combine

    def install(step: int):
        def crash(at, *args):
            if at == step:
                raise KeyboardInterrupt("simulated interruption")
            return real(at, *args)
        monkeypatch.setattr(runner, "_combine", crash)
        return lambda: monkeypatch.setattr(runner, "_combine", real)
    return install
