# The two commands (see README.md):
#   make demo   installs what is missing, builds, and runs absinthe on a shipped example
#   make test   installs what is missing, builds, and runs the whole test suite
CARGO ?= cargo
DEMO_PROGRAM ?= configs/hdiff.yaml
DEMO_MACHINE ?= machines/xeon-sapphire-rapids-2core.yaml

.PHONY: setup demo test build bench-milp

setup:
	@./scripts/setup.sh

build: setup
	$(CARGO) build --release

demo: build
	./target/release/absinthe check $(DEMO_PROGRAM)
	./target/release/absinthe solve $(DEMO_PROGRAM) --machine $(DEMO_MACHINE) -o build/demo/solution.yaml
	./target/release/absinthe codegen $(DEMO_PROGRAM) --machine $(DEMO_MACHINE) --solution build/demo/solution.yaml --target openmp --harness -o build/demo
	./target/release/absinthe bench $(DEMO_PROGRAM) --machine $(DEMO_MACHINE) --variants naive,unfused,opt --runs 16

test: setup
	$(CARGO) test --workspace

# MILP size and solve time per backend for the shipped programs and generated chains.
bench-milp: setup
	$(CARGO) run --release -p absinthe-solvers --example milp_table
