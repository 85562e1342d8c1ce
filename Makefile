# Heliostat: every target creates .venv if it is absent and installs the project into it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck bench protos clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/heliostat demo

# The packages mypy passes today (configured in pyproject.toml; controller/ joins when it is clean,
# then `typecheck` is plain `$(BIN)/mypy`, which checks all five). A cache of their own: mypy 1.19
# replays controller/'s cached errors from a full run even where pyproject.toml follows it silently.
TYPED := optimizer southbound emulation benchmarks
MYPY_TYPED := $(BIN)/mypy --cache-dir .mypy_cache/typed $(TYPED)

test: $(STAMP)
	$(BIN)/ruff check .
	$(MYPY_TYPED)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(MYPY_TYPED)

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

protos: $(STAMP)
	$(BIN)/python -m southbound.grpc_native.proto
	$(BIN)/python -m controller.northbound.proto

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache
