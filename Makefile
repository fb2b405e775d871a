# muster: `make run` for a live demo, `make test` for the suite. Python 3.11 is all a machine needs.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: install run up test bench lint schemas clean chaos

install: $(VENV)/.installed

# Kernels compile once into a cache keyed by their sources (docs/layers.md): the demo's at install,
# the rest of the scenarios' before the first test run after those sources change.
WARM_SOURCES := $(wildcard libs/muster/kernels/*.py libs/muster/scheduler/*.py) libs/muster/tolerances.py

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "== installing muster and the packages it needs into $(VENV)"
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install -e '.[test,bench]'
	@echo "== compiling the allocator's kernels the demo needs (once: they are cached)"
	$(PY) -m muster.warmup
	touch $@

$(VENV)/.warmed: $(VENV)/.installed $(WARM_SOURCES)
	@echo "== compiling the kernels every test scenario needs (once per change of their sources)"
	$(PY) -m muster.warmup tests/scenarios/*.yaml
	touch $@

run: install
	$(VENV)/bin/muster demo

up: install
	$(VENV)/bin/muster up

test: $(VENV)/.warmed
	$(PY) -m pytest $(PYTEST_ARGS)

bench: install
	$(VENV)/bin/muster bench

lint: install
	$(VENV)/bin/ruff check libs services tests
	$(VENV)/bin/ruff format --check libs services tests

chaos: install
	$(PY) -m muster.chaos.run --jobs 5000

schemas: install
	$(PY) -m muster.schemas schemas

clean:
	rm -rf $(VENV) .muster .pytest_cache
