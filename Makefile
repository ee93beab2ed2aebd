# The two commands the README starts with: `make demo` and `make test`.
PY := .venv/bin/python
export PYTHONPATH := $(CURDIR)

.PHONY: setup demo test lint typecheck unit e2e bench clean

setup:
	@bash scripts/setup.sh

demo: setup
	$(PY) scripts/demo.py

lint: setup
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

typecheck: setup
	$(PY) -m mypy vllm_ledger

test: setup lint typecheck
	$(PY) -m pytest

unit: setup
	$(PY) -m pytest -m "not e2e"

e2e: setup
	$(PY) -m pytest -m e2e

bench: setup
	$(PY) bench/run.py

clean:
	rm -rf build dist .pytest_cache .mypy_cache .ruff_cache
