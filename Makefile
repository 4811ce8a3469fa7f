# The two commands: `make run` and `make test`. Both create the virtualenv and
# install what they need on a machine that has nothing but python3.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEMO ?= demo-home

.PHONY: run test stress lint bench bench-check clean screenshots mutate docs

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q --disable-pip-version-check -e '.[test]'
	touch $@

# Builds (or tops up) the demo home, then serves it in the foreground until Ctrl-C.
run: $(VENV)/.installed
	$(BIN)/dovecote demo $(DEMO)
	@echo "dovecote is installed in $(BIN)/, which is not on PATH: run '. $(BIN)/activate' to type plain 'dovecote'"
	@echo
	$(BIN)/dovecote --home $(DEMO)/.dovecote serve $(SERVE)

# The browser tests drive Debian's chromium (no browser download: this machine reaches none).
CHROMIUM ?= /usr/bin/chromium
$(CHROMIUM):
	apt-get update -q && apt-get install -y -q chromium

# tests/ and bench/ are type-checked too, at a stated, smaller strictness than src/: every function annotated
# (strict's untyped-def rules), calls with the right names and arities, returns and imports checked; not checked:
# a str given where a StrEnum is taken and other argument types (tests spell verbs' enums as strings), unions a
# test narrows by asserting (the MCP SDK's content types), attributes of a Store subclass, lambdas' inferred types,
# Any returned from JSON, and assignments, indexing and no-value calls inside helper expressions.
MYPY_TESTS := --implicit-reexport --allow-untyped-calls --no-warn-unused-ignores \
	$(addprefix --disable-error-code=,arg-type union-attr attr-defined misc no-any-return assignment index func-returns-value)

lint: $(VENV)/.installed
	$(BIN)/ruff check src tests bench mutation sitegen
	$(BIN)/mypy
	$(BIN)/mypy $(MYPY_TESTS) tests bench sitegen

# Four workers on this machine's two cores: the suite's real processes (servers, killed writers, browsers)
# wait on disks, pipes and sockets more than on CPUs, so two more workers fill the waits (2026-12-02, quiet:
# 2 min 33 s at -n 4 against 4 min 32 s at -n 2). Work stealing: an idle worker takes tests queued on a busy
# one, so the run does not end on one worker's backlog of slow tests.
# Bytecode is written even where the environment says not to (PYTHONDONTWRITEBYTECODE, as this machine's
# does): otherwise every dovecote process a test starts compiles its modules from source again, and every
# worker rewrites every test module's asserts (2026-12-03: 13% of the suite's CPU).
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest
test: lint | $(CHROMIUM)
	$(PYTEST) -n 4 --dist worksteal

# The long sweeps (every crash point and I/O fault of every operation, every hostile CLI argument, the deep
# fuzz, the schemathesis state machine); then the two ten-minute soaks, both modes at once and nothing beside
# them; then the tests that restart PostgreSQL under writers (every session on the server ends: never beside
# make test), alone: the restart must not cut another test's sessions.
stress: $(VENV)/.installed
	$(PYTEST) -m stress -n 2 --ignore=tests/load/test_multihost_stress.py --ignore=tests/load/test_soak.py
	$(PYTEST) -m stress -n 2 -rP tests/load/test_soak.py
	$(PYTEST) -m stress tests/load/test_multihost_stress.py

# The pictures of the Human View in the README and the documentation site, taken by the browser test.
screenshots: $(VENV)/.installed | $(CHROMIUM)
	DOVECOTE_SCREENSHOTS=docs/screenshots $(BIN)/pytest tests/browser/test_http_browser.py tests/browser/test_http_browser_cases.py tests/browser/test_http_browser_delivery.py -m screenshots -q
	DOVECOTE_SCREENSHOTS=docs/screenshots $(BIN)/pytest tests/browser/test_http_browser_missions.py -q
	DOVECOTE_SCREENSHOTS=docs/screenshots $(BIN)/pytest tests/browser/test_http_browser_read.py -m screenshots -q

# Mutation testing of the core, each module against its own test files (mutation/mutate.py holds the map):
# mutmut over function bodies, then one change at a time to each module-level table. Not part of make test:
# it runs the tests once per mutant. One module at a time on one worker: MODULES=letters narrows it.
mutate: $(VENV)/.installed
	$(BIN)/python mutation/mutate.py all $(MODULES) --max-children 1

# The documentation site (mkdocs.yml, docs/), served with live reload at http://127.0.0.1:8000/ until Ctrl-C.
# make test builds it with --strict (tests/docs/test_site.py): a broken link or a stale reference fails.
docs: $(VENV)/.installed
	$(BIN)/mkdocs serve

bench: $(VENV)/.installed
	$(BIN)/python bench/run_all.py

# The benchmark guard: the headline ratios of bench/ (cold sweeps, cold injection, warm inbox, durable append,
# REST and MCP sends from 30 agents), each measured beside its reference in one run and held to its goal in
# bench/thresholds.toml; a check fails only when two measurements in a row are more than 25% past its goal
# (the machine is shared and noisy), and at once on one lost letter. Builds its data afresh every run (nothing
# cached: CI is a clean checkout); a few minutes here. Bytecode as `make test`: the cold paths are new processes.
bench-check: $(VENV)/.installed
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python bench/check.py

clean:
	rm -rf $(VENV) $(DEMO) .pytest_cache .ruff_cache site
