# The README's commands. Everything a fresh machine needs is installed from here.
SHELL := /bin/bash
VENV  ?= .venv
PY    := $(VENV)/bin/python
export VIRTUAL_ENV := $(abspath $(VENV))
export PYO3_PYTHON := $(abspath $(PY))
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: demo test test-rust test-py lint bench build venv clean

demo: build
	$(VENV)/bin/chainwarden demo

test: build lint test-rust test-py

venv: $(VENV)/.stamp
$(VENV)/.stamp: requirements-dev.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

build: venv
	$(VENV)/bin/maturin develop --release --quiet

test-rust:
	cargo test -p chainwarden-core --release

test-py: build
	scripts/test-python.sh

lint: build
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --release -- -D warnings
	$(VENV)/bin/ruff check python tests benches
	$(VENV)/bin/ruff format --check python tests benches
	$(VENV)/bin/mypy
	$(VENV)/bin/python -m mypy.stubtest chainwarden._core --allowlist .stubtest-allowlist

bench: build
	mkdir -p .benchmarks
	$(VENV)/bin/pytest benches -q --benchmark-only --benchmark-columns=min,median,rounds \
		--benchmark-json=.benchmarks/latest.json $(BENCH_ARGS)
	$(PY) benches/report.py .benchmarks/latest.json

clean:
	cargo clean
	rm -rf $(VENV)
