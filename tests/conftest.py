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


# Files whose tests take minutes on two cores, none of it the workbench's everyday paths:
# device kernels run under Triton's interpreter (a GPU's programs, one lane at a time, on
# the CPU), ranks killed or stalled on purpose, and shaped network namespaces; and the tests
# marked ``long`` where they are written: every benchmark and the DDP example run end to end,
# the bit widths a property test's everyday sample leaves (``widths.py``), and the gloo runs of
# one algorithm that make test's transport matrix (test_transport_invariance.py) also makes.
# `make test` leaves them to `make test-long`, which CI runs after it (`.ci/run`): nothing leaves CI.
LONG = {
    "test_triton_uniform.py", "test_triton_qsgd.py", "test_triton_crc.py", "test_triton_drop.py",
    "test_fast_interpreter.py", "test_device_audit.py", "test_deferred_codecs.py", "test_kernel_registers.py",
    "test_distributed_faults.py", "test_netcheck.py",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in LONG:
            item.add_marker(pytest.mark.long)
