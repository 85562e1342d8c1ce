# Heliostat: every target creates .venv if it is absent and installs the project into it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo demo-jobs test lint typecheck bench protos clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

# The foreign clients of the standard protocols (finsy, pygnmi) in their own environment:
# their protobuf pins differ from ours (tests/foreign/requirements.txt says why).
FOREIGN := .venv-foreign
FOREIGN_STAMP := $(FOREIGN)/.installed

$(FOREIGN_STAMP): tests/foreign/requirements.txt
	$(PYTHON) -m venv $(FOREIGN)
	$(FOREIGN)/bin/pip install --quiet -r tests/foreign/requirements.txt
	touch $(FOREIGN_STAMP)

demo: $(STAMP)
	$(BIN)/heliostat demo

demo-jobs: $(STAMP)
	$(BIN)/heliostat demo --jobs

# mypy checks every package (pyproject.toml's [tool.mypy]: strict on optimizer/ and the device
# contracts, the defaults elsewhere).
test: $(STAMP) $(FOREIGN_STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

protos: $(STAMP)
	$(BIN)/python -m southbound.grpc_native.proto
	$(BIN)/python -m controller.northbound.proto
	$(BIN)/python -m southbound.standard.proto

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache
