# The two commands: `make run` and `make test`. Both create the virtualenv and
# install what they need on a machine that has nothing but python3.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEMO ?= demo-home

.PHONY: run test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q --disable-pip-version-check -e '.[test]'
	touch $@

run: $(VENV)/.installed
	$(BIN)/dovecote demo $(DEMO)
	@echo "dovecote is installed in $(BIN)/, which is not on PATH: run '. $(BIN)/activate' to type plain 'dovecote'"

lint: $(VENV)/.installed
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy

# Two workers: this machine has two cores, and the suite's real processes wait on disks more than on CPUs.
test: lint
	$(BIN)/pytest -n 2

bench: $(VENV)/.installed
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) $(DEMO) .pytest_cache .ruff_cache
