# an-agent: set-up, demo, tests, benchmarks. Every target is idempotent.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# Debian packages: libyang (C library + yanglint) for validation, yuma123 (netconfd,
# yangcli) as interop client and benchmark reference, sshd as netconfd's SSH front end, prometheus
# (the server) to check that a lab's agents can be scraped (tests/lab/test_lab_prometheus.py).
SYS_PACKAGES := libyang2-dev libyang2-tools netconfd yangcli openssh-server gcc prometheus
STATE ?= $(CURDIR)/state

.PHONY: setup sys-deps demo test test-fast lint typecheck check bench bench-quick bench-compare fuzz clean

setup: sys-deps $(VENV)/.installed

sys-deps:
	@missing=$$(for p in $(SYS_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages:" $$missing; \
	  sudo=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
	  $$sudo apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q --no-install-recommends $$missing; \
	fi

# torch goes in first, pinned, so that sentence-transformers finds it and does not
# pull a CUDA build; then the full lock; then our package, editable.
$(VENV)/.installed: pyproject.toml requirements.lock
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "installing PyTorch (CPU build, pinned) into $(VENV) ..."
	$(BIN)/pip install -qq torch==2.13.0
	@echo "installing the pinned Python packages of requirements.lock ..."
	$(BIN)/pip install -qq -r requirements.lock
	$(BIN)/pip install -qq --no-deps --no-build-isolation -e .
	@echo "an-agent is installed: $(BIN)/an-agent"
	@touch $@

demo: setup
	$(BIN)/python -m an_agent.demo --state-dir $(STATE)/demo

test: setup check
	$(BIN)/python -m pytest -q

test-fast: setup
	$(BIN)/python -m pytest -q -m "not slow"

lint: setup
	$(BIN)/ruff check src tests bench

typecheck: setup
	$(BIN)/mypy

check: lint typecheck

bench: setup
	$(BIN)/python -m bench.run --full

bench-quick: setup
	$(BIN)/python -m bench.run --quick

# 100,000 generated NETCONF inputs against a live agent: 0 crashes, 0 hung sessions, data unchanged.
fuzz: setup
	$(BIN)/python -m bench.fuzz_netconf --count 100000

# The last two runs side by side (bench/results/*.json), so a change's effect is visible.
bench-compare: setup
	$(BIN)/python -m bench.compare

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
