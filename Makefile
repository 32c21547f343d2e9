# clirplug: set-up, demo and tests. `make demo` and `make test` are the README's two commands.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PYSERINI := pyserini==1.6.0

.PHONY: install browser demo test clean

install: $(BIN)/clirplug browser

# Pyserini is installed without its dependencies: clirplug uses only its Anserini jar,
# never its dense-retrieval stack (torch, transformers, onnxruntime, openai).
# Reinstalled when the e5 engine's C source changes: setup.py compiles it into the package.
$(BIN)/clirplug: pyproject.toml setup.py clirplug/e5engine/e5.c clirplug/e5engine/e5.h
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --no-deps "$(PYSERINI)"
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $@

# The search page's browser test (tests/integration/test_serve_browser.py) drives Debian's Chromium
# through its chromedriver: installed with apt-get when missing and run as root.
browser:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing chromium and chromium-driver (Debian packages) for the browser test"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
	else \
		echo "chromium and chromium-driver are missing: install them as root (apt-get install chromium chromium-driver);"; \
		echo "without them the browser test (tests/integration/test_serve_browser.py) fails"; \
	fi

# = `clirplug demo`: the experiment clirplug/data/demo.yaml, written under demo-output/
demo: install
	$(BIN)/clirplug demo

# pytest-xdist: the tests in up to 4 worker processes, whole modules each (tests/conftest.py)
test: install
	$(BIN)/python -m pytest -q -n auto --maxprocesses 4 tests

clean:
	rm -rf demo-output .pytest_cache
