# Two commands on a fresh machine (Python 3.11+, pip and make):
#   make serve   set up .venv if needed and run engram on embedded defaults (127.0.0.1:8080, ./engram-data)
#   make test    set up .venv with the test extra if needed, lint, and run the whole suite
#   make lint    fail on any `ruff check` finding or file `ruff format` would change
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: serve test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed

serve: $(VENV)/.installed
	$(BIN)/engram serve

test: lint
	$(BIN)/python -m pytest

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(VENV)/.installed-test
	$(BIN)/python scripts/bench_search.py

clean:
	rm -rf $(VENV) build *.egg-info
