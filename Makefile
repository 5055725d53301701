# thinwire — the two commands are `make reproduce` and `make test`; each sets up .venv first.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
# The CPU torch wheel may be provided as a local file; pip looks there when the folder exists.
WHEELS ?= /opt/wheels
PIP_FLAGS := $(if $(wildcard $(WHEELS)/*.whl),--find-links $(WHEELS),)
UV := uv==0.9.30
# The notebooks come from the one paper list, thinwire.papers.PAPERS (read once setup has run).
NOTEBOOKS = $(shell $(PY) -c "from thinwire.papers import PAPERS; print(*PAPERS)")
NEED_NOTEBOOKS = @test -n "$(NOTEBOOKS)" || { echo "make: thinwire.papers.PAPERS could not be read" >&2; exit 1; }
PROFILE ?= default
GOLDEN_WORKERS ?= -n 2 --dist loadfile
export PYTHONHASHSEED := 0
export THINWIRE_PROGRESS ?= 0

.PHONY: setup test test-long unit unit-long golden-test golden-test-papers golden-test-other-cpu reproduce golden lab bench netcheck data-cifar10 clean

setup: $(VENV)/.stamp

$(VENV)/.stamp: requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip==23.2.1 || true
	@# uv installs the lock in seconds (pip took about 3 minutes), compiled to bytecode as pip
	@# does (without it every process imports torch from source: 8.7 s against 4.7 s); pip where uv cannot
	$(PY) -m pip install -q $(UV) && $(VENV)/bin/uv pip install -q --compile-bytecode --python $(PY) $(PIP_FLAGS) -r requirements.lock \
		|| $(PY) -m pip install -q $(PIP_FLAGS) -r requirements.lock
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	$(PY) -m ipykernel install --sys-prefix --name thinwire --display-name "thinwire (.venv)" >/dev/null
	@# netcheck's delay lines queue packets with iptables (Debian's package; root only, optional)
	@command -v iptables >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		apt-get install -y -q iptables >/dev/null 2>&1; } || echo "setup: no iptables: netcheck runs without delays"
	touch $@

test: setup unit golden-test

# What takes minutes and rarely moves with an everyday change (tests/conftest.py's LONG: device
# kernels under Triton's interpreter, killed and stalled ranks, shaped networks; the benchmarks
# run end to end), the paper notebooks' goldens, and every golden on an emulated other CPU.
# CI runs it after `make test` (.ci/run).
test-long: setup unit-long golden-test-papers golden-test-other-cpu

# Tests marked ``alone`` measure step times: they run after the others, with nothing beside them
# (only the files that mark any are collected again: collecting every file takes about 10 s).
# The 30 slowest tests are listed at the end: where make test's time goes.
ALONE_FILES = $(shell grep -rl --include='test_*.py' "pytest.mark.alone" tests)
unit: setup
	$(PY) -m pytest -q -n 2 -m "not alone and not long" --durations=30 tests
	$(PY) -m pytest -q -p no:xdist -m alone $(or $(ALONE_FILES),tests)

unit-long: setup
	$(PY) -m pytest -q -n 2 -m long --durations=30 tests

# Executed smoke-profile notebooks, re-run by nbval; only # NBVAL_CHECK_OUTPUT cells are compared.
# Their float numbers are compared with the full-precision values the goldens recorded, within
# the tolerances the cells state (thinwire/checks.py); THINWIRE_GOLDEN says where the goldens are.
# Two notebooks run at a time, one per core. `$(call GOLDEN_TEST,notebooks)`.
GOLDEN_TEST = THINWIRE_GOLDEN=$(CURDIR)/tests/golden THINWIRE_RESULTS=$$(mktemp -d) THINWIRE_REPORTS=$$(mktemp -d) \
	$(PY) -m pytest -q $(GOLDEN_WORKERS) --nbval-lax --nbval-current-env --sanitize-with tests/golden/sanitize.cfg \
	$(addprefix tests/golden/,$(addsuffix .ipynb,$(1)))
# make test's goldens: the first notebook a newcomer opens and the comparison, which runs a
# method of every family (about 2 minutes together on two cores); the paper notebooks' (7 minutes
# more) are in make test-long.
EVERYDAY_NOTEBOOKS := quickstart compare
PAPER_NOTEBOOKS = $(filter-out $(EVERYDAY_NOTEBOOKS),$(NOTEBOOKS))
# Another CPU, emulated: torch's AVX2 kernels instead of AVX-512, oneDNN limited to AVX2, one
# thread each for torch, OpenMP and numba (other reduction orders; float results move in
# their last digits and training amplifies it).
OTHER_CPU = ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 NUMBA_NUM_THREADS=1

# This CPU as the goldens were made: torch's, OpenMP's and numba's own thread counts
# (THINWIRE_TEST_THREADS=default: tests/conftest.py leaves them), their idle OpenMP threads
# waiting passively (the wait policy moves no number; two processes' spinning threads
# oversubscribe the cores: two notebooks side by side took 305 s spinning, 72 s passive).
THIS_CPU = THINWIRE_TEST_THREADS=default OMP_WAIT_POLICY=PASSIVE
golden-test: setup
	$(THIS_CPU) $(call GOLDEN_TEST,$(EVERYDAY_NOTEBOOKS))

golden-test-papers: setup
	$(NEED_NOTEBOOKS)
	$(THIS_CPU) $(call GOLDEN_TEST,$(PAPER_NOTEBOOKS))

golden-test-other-cpu: setup
	$(NEED_NOTEBOOKS)
	$(OTHER_CPU) $(call GOLDEN_TEST,$(NOTEBOOKS))

reproduce: setup
	$(NEED_NOTEBOOKS)
	mkdir -p reports
	for nb in $(NOTEBOOKS); do \
	  $(VENV)/bin/papermill --cwd notebooks -k thinwire notebooks/$$nb.ipynb reports/$$nb.ipynb -p profile $(PROFILE) || exit 1; \
	done
	$(PY) -m thinwire tidy reports/*.ipynb
	$(PY) -m thinwire readme
	@echo "executed notebooks (committed) and figures are in reports/; README tables rewritten from them"

# The goldens are the notebooks executed at the smoke profile; tests/test_goldens.py fails when they are stale.
golden: setup
	$(NEED_NOTEBOOKS)
	for nb in $(NOTEBOOKS); do \
	  env -u THINWIRE_GOLDEN THINWIRE_RESULTS=$$(mktemp -d) THINWIRE_REPORTS=$$(mktemp -d) $(VENV)/bin/papermill --cwd notebooks -k thinwire notebooks/$$nb.ipynb tests/golden/$$nb.ipynb -p profile smoke || exit 1; \
	done

# JupyterLab on the checkout, opened on notebooks/: the executed reports/ are a folder away.
lab: setup
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=$(CURDIR) --LabApp.default_url=/lab/tree/notebooks \
		$(if $(filter 0,$(shell id -u)),--allow-root)

bench: setup
	$(PY) benchmarks/run.py

# The network model against an emulated cluster of shaped links (root; namespaces, veths, tc).
NETCHECK_RATES ?= 10e6,50e6
NETCHECK_DELAYS ?= 0,0.005
netcheck: setup
	$(PY) -m thinwire netcheck --rates $(NETCHECK_RATES) --delays $(NETCHECK_DELAYS)

data-cifar10: setup
	$(PY) -m thinwire data fetch cifar10

clean:
	rm -rf $(VENV) results reports/figures
