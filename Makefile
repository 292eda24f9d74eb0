# The two commands: `make run` and `make test` (see README.md).
PYTHON_BIN ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
export PORT
# The suite runs on two processes (pytest-xdist): each test owns its database and ports.
# PYTEST_ARGS="-n 0" runs it in one; PYTEST_ARGS="-n 0 tests/…" one part.
PYTEST_ARGS ?= -n 2

.PHONY: run test lint bench clean

$(VENV)/.runtime: requirements.txt
	@test -x $(PY) || $(PYTHON_BIN) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $@

$(VENV)/.dev: requirements-dev.txt $(VENV)/.runtime
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@touch $@

run: $(VENV)/.runtime
	$(PY) manage.py migrate --noinput -v0
	$(PY) manage.py seed_demo --if-empty
	$(PY) manage.py serve --port $(PORT)

test: $(VENV)/.dev
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(VENV)/.dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

bench: $(VENV)/.dev
	$(PY) bench/engine.py

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache
