# The README's commands. Everything a fresh machine needs is installed from here.
SHELL := /bin/bash
VENV  ?= .venv
PY    := $(VENV)/bin/python
DEMO_VENV ?= .venv-demo
export VIRTUAL_ENV := $(abspath $(VENV))
export PYO3_PYTHON := $(abspath $(PY))
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: demo test test-rust test-py lint bench bench-goals build venv wheels wheels-check clean mutants mutants-rust mutants-py

# The demo needs only the package (with its `cli` extra) and maturin to build it: its own small venv,
# not the development toolchain of `make test`.
demo:
	@VIRTUAL_ENV= PYO3_PYTHON= scripts/demo.sh "$(DEMO_VENV)"

test: build lint test-rust test-py

venv: $(VENV)/.stamp
$(VENV)/.stamp: requirements-dev.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

build: venv
	$(VENV)/bin/maturin develop --release --quiet --extras cli

test-rust:
	cargo test -p chainwarden-core --release

test-py: build
	scripts/test-python.sh

lint: build
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --all-features --release -- -D warnings
	$(VENV)/bin/ruff check python tests benches scripts
	$(VENV)/bin/ruff format --check python tests benches scripts
	$(VENV)/bin/mypy
	$(VENV)/bin/python -m mypy.stubtest chainwarden._core chainwarden.vocab --allowlist .stubtest-allowlist
	$(VENV)/bin/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml

# Release artefacts in dist/: manylinux2014 + musllinux_1_2 x86_64 wheels for every CPython >= 3.11 here
# (and every free-threaded one >= 3.14t), and the sdist (scripts/build-wheels.sh says how; benches/README.md
# why per-version, not abi3).
wheels:
	@VIRTUAL_ENV= PYO3_PYTHON= scripts/build-wheels.sh

# Each wheel alone in a fresh venv of its Python, tested from outside the source tree.
wheels-check:
	@VIRTUAL_ENV= PYO3_PYTHON= scripts/wheels-check.sh dist

# The benches also need `_BenchFloor` (the empty-native-call floor), compiled only with the `bench-floor`
# feature: never in wheels nor in the `make test` build.
bench: venv
	$(VENV)/bin/maturin develop --release --quiet --extras cli --features bench-floor
	mkdir -p .benchmarks
	$(VENV)/bin/pytest $(or $(BENCH_ARGS),benches) -q --benchmark-only --benchmark-columns=min,median,rounds \
		--benchmark-json=.benchmarks/latest.json
	$(PY) benches/report.py .benchmarks/latest.json

# One run of the speed goals (benches/README.md "Goals at a glance"), with a met / not met table
# (benches/goals.py).
bench-goals: venv
	$(VENV)/bin/maturin develop --release --quiet --extras cli --features bench-floor
	scripts/bench-goals.sh

# Mutation testing (docs/testing.md): not part of `make test`. Both tools run niced, one job at a time;
# results go to .mutants/. MUTANTS_RS_FILES / the arguments of scripts/mutants-python.sh choose the scope.
MUTANTS_RS_FILES ?= rust/core/src/recorder/divergence.rs rust/core/src/containment/chain.rs \
	rust/core/src/dag/leaves.rs rust/core/src/dag/propagation.rs
mutants: mutants-rust mutants-py

mutants-rust:
	command -v cargo-mutants >/dev/null || cargo install --locked cargo-mutants
	mkdir -p .mutants
	CARGO_PROFILE_DEV_DEBUG=0 CARGO_PROFILE_TEST_DEBUG=0 nice -n 19 cargo mutants -p chainwarden-core -j 1 \
		--timeout 60 $(addprefix -f ,$(MUTANTS_RS_FILES)) --output .mutants/rust

mutants-py: build
	scripts/mutants-python.sh

clean:
	cargo clean
	rm -rf $(VENV) $(DEMO_VENV) .venv-build dist
