# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
VENV   ?= .venv
PYTHON ?= python3
BIN    := $(VENV)/bin
PYTEST_WORKERS ?= 2
# Seconds one test may take before pytest-timeout ends it: a hung test must not eat CI's
# 90 minutes. The thread method ends a test stuck in C code too (a DuckDB call), where
# the signal method would wait for the call to return.
PYTEST_TIMEOUT ?= 600
# Extra pytest arguments, e.g. `make test PYTEST_ARGS="tests/registry -x"`.
PYTEST_ARGS ?=

.PHONY: install services test lint demo bench screenshots clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt clients/python/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]' -e 'clients/python[pandas]'
	touch $@

# PostgreSQL, Redis and OpenSSH's sshd: installed and started when missing or down.
services:
	bash scripts/services.sh

# Style, types (mypy, configured in pyproject.toml), the layers (import-linter) and
# .env.example against the settings classes (`python -m cli.env_example` rewrites it).
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m cli.env_example --check

test: install services
	$(BIN)/ruff check .
	$(BIN)/mypy
	@# --max-worker-restart 0: under --dist loadgroup, pytest-xdist 3.8 hangs once it replaces
	@# a crashed worker (pytest-dev/pytest-xdist#1323, #1378); a crash ends the run instead.
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup --max-worker-restart 0 \
		--timeout $(PYTEST_TIMEOUT) --timeout-method thread --durations 25 $(PYTEST_ARGS)

# The service on embedded defaults: seeds (or reuses) a demo account, syncs it, runs the
# API on :$(PORT) and the Dagster UI on :$(DAGSTER_PORT), and prints the account, the demo's
# key and curl examples once the API answers. `make demo PORT=8080 DAGSTER_PORT=3080`
# (on make's command line: a PORT in the environment, as some hosts set, is not taken).
PORT = 8000
DAGSTER_PORT = 3000
demo: install
	$(BIN)/quarry demo start --port $(PORT) --dagster-port $(DAGSTER_PORT)

# The benchmark harness (bench/, docs/benchmark.md): 1,000,000 orders, figures against floors.
bench: install
	@command -v wrk >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk) \
		|| echo "bench: wrk could not be installed; throughput uses the Python load client"
	$(BIN)/python -m bench

# The pictures of docs/console.md: the console's browser test, saving a screenshot at each
# step (docs/console.md, "Tests and screenshots"). Not part of `make test`.
screenshots: install services
	@# The demo's Tokyo store has a Japanese name: without a CJK font it draws as boxes.
	fc-list :lang=ja | grep -q . || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends fonts-noto-cjk)
	QUARRY_CONSOLE_SCREENSHOTS=docs/console $(BIN)/pytest -n 0 --timeout $(PYTEST_TIMEOUT) \
		tests/exports/test_console_browser.py

clean:
	rm -rf $(VENV) .quarry .pytest_cache .ruff_cache
