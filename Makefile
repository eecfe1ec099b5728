# Two commands on a fresh machine (Python 3.11+, pip and make):
#   make serve   set up .venv if needed and run engram on embedded defaults (127.0.0.1:8080, ./engram-data)
#   make test    set up .venv with the test extra if needed and run the whole suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: serve test bench clean

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

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest

bench: $(VENV)/.installed-test
	$(BIN)/python scripts/bench_search.py

clean:
	rm -rf $(VENV) build *.egg-info
