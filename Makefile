# muster: `make run` for a live demo, `make test` for the suite. Python 3.11 is all a machine needs.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: install run up test bench lint schemas clean chaos

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,bench]'
	$(PY) -m muster.warmup tests/scenarios/*.yaml
	touch $@

run: install
	$(VENV)/bin/muster demo

up: install
	$(VENV)/bin/muster up

test: install
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
