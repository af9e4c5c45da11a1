# mcpstation developer tasks (GNU make).
#
#   make run     create .venv if needed, install mcpstation, run `mcpstation up`
#   make test    install mcpstation[test] and the npm test servers; ruff, then mypy --strict beside pytest
#   make lint    ruff check and format check, mypy --strict
#   make bench   run the benchmarks
#   make clean   remove .venv, node_modules and caches
#
# Installs are tracked by stamp files, so a repeated `make test` only reinstalls when
# pyproject.toml (Python) or package.json / package-lock.json (npm) changed.

PYTHON ?= python3
VENV   ?= .venv
NPM    ?= npm

# Extra arguments: `make test PYTEST_ARGS='-k stdio -x'`, `make run ARGS='--help'`.
PYTEST_ARGS ?=
# pytest worker processes: most tests wait on server processes and sockets, not on the CPU.
PYTEST_WORKERS ?= 4
ARGS ?=

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := test
.DELETE_ON_ERROR:
.SUFFIXES:

VPY := $(VENV)/bin/python
STAMP_RUN  := $(VENV)/.stamp-install-run
STAMP_TEST := $(VENV)/.stamp-install-test
STAMP_NPM  := node_modules/.stamp-npm-ci

export PIP_DISABLE_PIP_VERSION_CHECK := 1
export PIP_NO_INPUT := 1

.PHONY: run test lint bench clean venv install install-test npm

# --- environments ---------------------------------------------------------------------------

$(VPY):
	@echo "==> creating virtualenv $(VENV) with $(PYTHON) ($$($(PYTHON) --version 2>&1))"
	$(PYTHON) -m venv $(VENV)

venv: $(VPY)

$(STAMP_RUN): pyproject.toml | $(VPY)
	@echo "==> pip install -e . (pyproject.toml changed or first install)"
	$(VPY) -m pip install -e .
	@touch $@

$(STAMP_TEST): pyproject.toml | $(VPY)
	@echo "==> pip install -e '.[test]' (pyproject.toml changed or first install)"
	$(VPY) -m pip install -e '.[test]'
	@touch $@ $(STAMP_RUN)

$(STAMP_NPM): package.json package-lock.json
	@command -v $(NPM) >/dev/null || { echo "error: npm not found on PATH; it is needed to install the npm test servers (package.json)" >&2; exit 1; }
	@echo "==> npm ci (node_modules missing or package-lock.json changed; npm $$($(NPM) --version), node $$(node --version))"
	$(NPM) ci --no-audit --no-fund
	@touch $@

install: $(STAMP_RUN)
install-test: $(STAMP_TEST)
npm: $(STAMP_NPM)

# --- tasks ----------------------------------------------------------------------------------

run: $(STAMP_RUN)
	@echo "==> $(VENV)/bin/mcpstation up $(ARGS)"
	$(VENV)/bin/mcpstation up $(ARGS)

lint: $(STAMP_TEST)
	@echo "==> ruff check, ruff format --check, mypy --strict src"
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy --strict src

test: $(STAMP_TEST) $(STAMP_NPM)
	@missing=""; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v haproxy >/dev/null || missing="$$missing haproxy"; \
	if [ -z "$$missing" ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		echo "==> apt-get install$$missing (the console browser test, the replicas-behind-a-balancer test)"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) \
			|| echo "note: could not install$$missing; the tests that need them will be skipped"; \
	else \
		echo "note:$$missing not installed and this is not root; the tests that need them will be skipped"; \
	fi
	@echo "==> ruff check, ruff format --check"
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	@# The tests spawn hundreds of interpreters; with PYTHONDONTWRITEBYTECODE set none of them would
	@# keep its bytecode, and each would compile the package again (about 0.2 s of CPU apiece).
	@echo "==> compileall src tests"
	$(VPY) -m compileall -q -j 0 src tests >/dev/null
	@# mypy (about 55 s of one core from an empty cache) runs beside pytest, whose workers spend most
	@# of their time waiting on servers and sockets; niced, it takes the CPU they leave idle and does
	@# not slow their timed waits. Its output is shown only when it fails, and then after pytest's,
	@# so that on success pytest's summary stays the last line.
	@echo "==> mypy --strict src (beside pytest; shown only if it fails), pytest -n $(PYTEST_WORKERS) $(PYTEST_ARGS)"
	@mypy_log=$$(mktemp); mypy_pid=""; \
	trap '[ -z "$$mypy_pid" ] || kill "$$mypy_pid" 2>/dev/null; rm -f "$$mypy_log"' EXIT; trap 'exit 130' INT TERM; \
	nice -n 10 $(VENV)/bin/mypy --strict src >"$$mypy_log" 2>&1 & mypy_pid=$$!; \
	pytest_status=0; $(VENV)/bin/pytest -n $(PYTEST_WORKERS) $(PYTEST_ARGS) || pytest_status=$$?; \
	mypy_status=0; wait "$$mypy_pid" || mypy_status=$$?; mypy_pid=""; \
	if [ "$$mypy_status" -ne 0 ]; then echo "==> mypy --strict src failed (exit $$mypy_status):"; cat "$$mypy_log"; fi; \
	[ "$$pytest_status" -eq 0 ] && [ "$$mypy_status" -eq 0 ]

bench: $(STAMP_TEST) $(STAMP_NPM)
	@if [ -f bench/run.py ]; then \
		echo "==> $(VPY) bench/run.py $(ARGS)"; $(VPY) bench/run.py $(ARGS); \
	elif [ -f bench/__init__.py ] || [ -f bench/__main__.py ]; then \
		echo "==> $(VPY) -m bench $(ARGS)"; $(VPY) -m bench $(ARGS); \
	else \
		echo "error: no bench/run.py or bench package to run" >&2; exit 1; \
	fi

clean:
	@echo "==> removing $(VENV), node_modules and caches"
	rm -rf $(VENV) node_modules .pytest_cache .ruff_cache build dist test-artifacts
	find . -path ./.git -prune -o \( -name __pycache__ -o -name '*.egg-info' \) -type d -prune -exec rm -rf {} +
