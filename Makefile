# clirplug: set-up, demo and tests. `make demo` and `make test` are the README's two commands.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PYSERINI := pyserini==1.6.0

.PHONY: install demo test clean

install: $(BIN)/clirplug

# Pyserini is installed without its dependencies: clirplug uses only its Anserini jar,
# never its dense-retrieval stack (torch, transformers, onnxruntime, openai).
$(BIN)/clirplug: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --no-deps "$(PYSERINI)"
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $@

# = `clirplug demo`: the experiment clirplug/data/demo.yaml, written under demo-output/
demo: install
	$(BIN)/clirplug demo

test: install
	$(BIN)/python -m pytest -q tests

clean:
	rm -rf demo-output .pytest_cache
