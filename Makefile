# The two commands (see README.md):
#   make demo   installs what is missing, builds, and runs absinthe on a shipped example
#   make test   installs what is missing, builds, and runs the whole test suite
CARGO ?= cargo
DEMO_PROGRAM ?= configs/hdiff.yaml
# The demo learns the machine it runs on (never a file learned elsewhere) into build/demo/.
DEMO_DIR ?= build/demo
DEMO_MACHINE ?= $(DEMO_DIR)/machine.yaml
ABSINTHE = ./target/release/absinthe

.PHONY: setup demo test build bench-milp bench-halide bench-gt4py bench-peers bench-model-forms halide-venv gt4py-venv demo-machine cache-peer lint python-test python-overhead

setup:
	@./scripts/setup.sh

build: setup
	$(CARGO) build --release

demo: build
	@mkdir -p $(DEMO_DIR)
	@echo "== 1/5 learn this machine (training kernels are cached in ~/.cache/absinthe)"
	$(ABSINTHE) learn --machine machines/template.yaml --out $(DEMO_MACHINE) --quiet
	@echo "== 2/5 check the program"
	$(ABSINTHE) check $(DEMO_PROGRAM)
	@echo "== 3/5 solve: fusion and tiling chosen together"
	$(ABSINTHE) solve $(DEMO_PROGRAM) --machine $(DEMO_MACHINE) --format yaml -o $(DEMO_DIR)/solution.yaml
	$(ABSINTHE) solve $(DEMO_PROGRAM) --machine $(DEMO_MACHINE)
	@echo "== 4/5 generate OpenMP C++ for the optimum (with a verifying, timing harness)"
	$(ABSINTHE) codegen $(DEMO_PROGRAM) --machine $(DEMO_MACHINE) --solution $(DEMO_DIR)/solution.yaml --target openmp --harness -o $(DEMO_DIR)
	@echo "== 5/5 measure: the optimum against the untiled reference and the unfused schedule"
	$(ABSINTHE) bench $(DEMO_PROGRAM) --machine $(DEMO_MACHINE) --variants naive,unfused,opt --runs 32

# The tests run two at a time, each starting OpenMP kernels with a thread per CPU: threads that
# spin while they wait then take the CPUs from each other's work (two learns side by side: 465 s
# spinning, 15 s passive). No test asserts a time; `bench` and `learn` outside the tests keep
# the default policy.
test: export OMP_WAIT_POLICY := passive
test: setup lint
	$(CARGO) test --workspace
	$(MAKE) python-test

# The Python package (python/): installed into a fresh venv with pytest, run against the debug
# build of absinthe that `cargo test` made.
PY_VENV ?= build/py-venv
python-test: setup
	$(CARGO) build
	@test -x $(PY_VENV)/bin/python || python3 -m venv $(PY_VENV)
	$(PY_VENV)/bin/pip install -q --disable-pip-version-check ./python numpy pytest pyyaml
	ABSINTHE_BIN=$(CURDIR)/target/debug/absinthe $(PY_VENV)/bin/python -m pytest -q -p no:cacheprovider python/tests

# The cost of a kernel call from Python (benches/python_overhead.py), on the release build.
python-overhead: build
	@test -x $(PY_VENV)/bin/python || python3 -m venv $(PY_VENV)
	$(PY_VENV)/bin/pip install -q --disable-pip-version-check ./python numpy
	ABSINTHE_BIN=$(CURDIR)/target/release/absinthe $(PY_VENV)/bin/python benches/python_overhead.py $(PYTHON_OVERHEAD_ARGS)

# Formatting and lints are part of the test command (and so of CI).
lint: setup
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# Program x machine x solver x encoding: MILP size, status, seconds, gap (docs/RESULTS.md).
# Options via BENCH_MILP_ARGS, e.g. BENCH_MILP_ARGS="--time-limit 10 --machines default".
bench-milp: setup
	$(CARGO) run --release -p absinthe-solvers --example milp_table -- $(BENCH_MILP_ARGS)

# absinthe against Halide's autoschedulers (Mullapudi2016, Adams2019, Li2018) on one program, side
# by side: absinthe's naive, unfused and opt, then the same program as a Halide pipeline, timed
# the same way, its outputs checked against absinthe's (benches/halide_peer.py --help). Creates
# build/halide-venv (pip: halide numpy pyyaml) and learns this machine into $(DEMO_MACHINE) when
# missing. Options via HALIDE_ARGS, e.g. HALIDE_ARGS="--runs 16 --schedulers mullapudi2016,li2018".
HALIDE_PROGRAM ?= configs/cosmo_adv5.yaml
HALIDE_VENV ?= build/halide-venv
bench-halide: build halide-venv
	@$(if $(findstring --no-absinthe,$(HALIDE_ARGS)),true,$(MAKE) --no-print-directory demo-machine)
	$(HALIDE_VENV)/bin/python benches/halide_peer.py $(HALIDE_PROGRAM) --machine $(DEMO_MACHINE) $(HALIDE_ARGS)

halide-venv:
	@test -x $(HALIDE_VENV)/bin/python || python3 -m venv $(HALIDE_VENV)
	@$(HALIDE_VENV)/bin/python -c "import halide, numpy, yaml" 2>/dev/null || $(HALIDE_VENV)/bin/pip install halide numpy pyyaml

# This machine learned into $(DEMO_MACHINE), when it is missing.
demo-machine: build
	@test -f $(DEMO_MACHINE) || { mkdir -p $(DEMO_DIR) && \
		$(ABSINTHE) learn --machine machines/template.yaml --out $(DEMO_MACHINE) --quiet; }

# absinthe against GT4Py's CPU backends (gt:cpu_kfirst, gt:cpu_ifirst, dace:cpu) on one program,
# side by side: absinthe's naive, unfused, noinline and opt, then the program written as a gtscript
# stencil (sweeps and intervals included), timed the same way in rounds that time opt and every
# backend back to back, its outputs checked against
# absinthe's (benches/gt4py_peer.py --help). Creates build/gt4py-venv (pip: gt4py numpy pyyaml),
# installs boost's headers (Debian libboost-dev, for the gt: backends) when root may, and learns
# this machine into $(DEMO_MACHINE) when missing. Options via GT4PY_ARGS, e.g.
# GT4PY_ARGS="--runs 16 --backends gt:cpu_kfirst".
GT4PY_PROGRAM ?= configs/cosmo_hvdiff.yaml
GT4PY_VENV ?= build/gt4py-venv
bench-gt4py: demo-machine gt4py-venv
	$(GT4PY_VENV)/bin/python benches/gt4py_peer.py $(GT4PY_PROGRAM) --machine $(DEMO_MACHINE) $(GT4PY_ARGS)

gt4py-venv:
	@test -x $(GT4PY_VENV)/bin/python || python3 -m venv $(GT4PY_VENV)
	@$(GT4PY_VENV)/bin/python -c "import gt4py, numpy, yaml" 2>/dev/null || $(GT4PY_VENV)/bin/pip install gt4py numpy pyyaml
	@test -d /usr/include/boost || { test "$$(id -u)" = 0 && apt-get install -y -qq --no-install-recommends libboost-dev >/dev/null; } || \
		{ echo "bench-gt4py: the gt: backends need boost's headers: apt-get install libboost-dev" >&2; exit 1; }

# absinthe's opt against the best of Halide's autoschedulers and GT4Py's CPU backends on a suite:
# the shipped COSMO-like programs and seeded generated families, at 64x64x60 and 256x256x60; per
# program the ratio to the best verified peer, then the geometric mean and the worst
# (benches/bench_peers.py --help). Long: Adams2019 searches about 5 minutes per program at 256.
# Options via PEERS_ARGS, e.g. PEERS_ARGS="--sizes 64 --peers halide --seeds 1,2".
bench-peers: demo-machine halide-venv gt4py-venv
	python3 benches/bench_peers.py --machine $(DEMO_MACHINE) $(PEERS_ARGS)

# The two forms of the model (`--model linear|absinthe`) side by side on the same timed runs: the
# published form learned into build/demo/absinthe.yaml when missing, then per program one bench of
# opt, 16 random configurations and the published optimum, every row priced by both forms
# (benches/model_forms.py --help). Options via FORMS_ARGS, e.g. FORMS_ARGS="--runs 32", or
# FORMS_ARGS="--grid" to hold each optimum against the exhaustive auto-tuning grid in the same run.
FORMS_PROGRAMS ?= configs/hdiff.yaml configs/heat4.yaml configs/chain8.yaml configs/cosmo_hdiff4.yaml \
	configs/cosmo_adv5.yaml configs/cosmo_pgrad.yaml configs/cosmo_smag.yaml configs/cosmo_divdamp.yaml
bench-model-forms: demo-machine
	@test -f $(DEMO_DIR)/absinthe.yaml || $(ABSINTHE) learn --machine $(DEMO_MACHINE) --model absinthe \
		--out $(DEMO_DIR)/absinthe.yaml --quiet
	@test -x $(PY_VENV)/bin/python || python3 -m venv $(PY_VENV)
	@$(PY_VENV)/bin/python -c "import yaml" 2>/dev/null || $(PY_VENV)/bin/pip install -q pyyaml
	$(PY_VENV)/bin/python benches/model_forms.py --linear $(DEMO_MACHINE) --absinthe $(DEMO_DIR)/absinthe.yaml \
		$(FORMS_PROGRAMS) $(FORMS_ARGS)

# The cache model against Kerncraft's cache simulator (pycachesim): `absinthe cache --trace` on
# small domains of shipped programs, the trace replayed through pycachesim per level and thread;
# every count must agree (benches/cache_peer.py --help). Creates build/cache-venv. Each program
# runs on this machine's caches (sysfs) and on small levels that its small domain overflows.
CACHE_VENV ?= build/cache-venv
CACHE_PEER_ARGS ?= --domain 40,24,8
cache-peer: build
	@test -x $(CACHE_VENV)/bin/python || python3 -m venv $(CACHE_VENV)
	@$(CACHE_VENV)/bin/python -c "import cachesim" 2>/dev/null || $(CACHE_VENV)/bin/pip install pycachesim
	@for p in configs/hdiff.yaml configs/cosmo_hdiff4.yaml configs/cosmo_adv5.yaml configs/heat4.yaml; do \
		$(CACHE_VENV)/bin/python benches/cache_peer.py $$p $(CACHE_PEER_ARGS) || exit 1; \
		$(CACHE_VENV)/bin/python benches/cache_peer.py $$p $(CACHE_PEER_ARGS) --small-levels || exit 1; done
