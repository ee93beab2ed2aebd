# The two commands the README starts with: `make demo` and `make test`.
PY := .venv/bin/python
export PYTHONPATH := $(CURDIR)
# Python's own default: bytecode and pytest's rewritten test modules are cached in __pycache__,
# so the hundreds of `python -m vllm_ledger` processes the tests start, and the next run,
# do not compile the package again (an environment that sets this variable pays it each time).
export PYTHONDONTWRITEBYTECODE :=

.PHONY: setup demo test lint typecheck unit e2e fuzz bench dist clean compat

setup:
	@bash scripts/setup.sh

demo: setup
	$(PY) scripts/demo.py

lint: setup
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

typecheck: setup
	$(PY) -m mypy vllm_ledger tests

# Both cores (pytest-xdist): a file's tests stay on one worker, so a module's shared server
# starts once; the longest files go first (tests/durations.json, devtools/file_order.py).
# TEST_WORKERS=0 runs them in this process. Each run's JUnit report (build/test-report.xml) is
# what `python -m devtools.file_order build/test-report.xml` refreshes that order from.
TEST_WORKERS ?= 2
test: setup lint typecheck
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --junitxml=build/test-report.xml

# The unit lane: tests/unit, laid out like the package. Four workers on two cores: much of its
# wall time is tests waiting on their deadlines (a dripping client cut at 5 s), not CPU. Its
# files share no server, so an idle worker takes tests from a busy one's queue (worksteal):
# otherwise one worker is left with a queue of half a minute when the others are done.
UNIT_WORKERS ?= 4
unit: setup
	$(PY) -m pytest -n $(UNIT_WORKERS) --dist worksteal tests/unit

e2e: setup
	$(PY) -m pytest -m e2e

# The ledger property (tests/test_property_ledgers.py) and the equivalence properties of the
# hot paths (a fast way against the plain way) with many more examples and a random seed; a
# failure prints the example and a @reproduce_failure blob.
FUZZ_TESTS = tests/test_property_ledgers.py tests/unit/write/test_batch.py \
	tests/unit/read/test_attr_judge.py tests/unit/read/test_whose.py \
	tests/unit/format/test_attr_reads.py
fuzz: setup
	HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest -n $(UNIT_WORKERS) $(FUZZ_TESTS)

bench: setup
	$(PY) bench/run.py

# The plugin under each vLLM release in scripts/compat.py's RELEASES: one env each under
# build/compat/ (reused), the interface check, a real CPU server where a CPU build exists;
# rewrites the table in docs/compatibility.md (about 3.5 GB and minutes per release).
compat: setup
	$(PY) scripts/compat.py --write-doc

# A wheel of the project in dist/ (what `pip install` takes on a host without this checkout).
dist: setup
	$(PY) -m pip wheel --no-deps --no-build-isolation -q -w dist .
	@ls dist/vllm_ledger-*.whl

clean:
	rm -rf build dist .pytest_cache .mypy_cache .ruff_cache
