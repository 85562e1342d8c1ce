# Heliostat: every target creates .venv if it is absent and installs the project into it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench protos clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/heliostat fabric check configs/fabric-8.yaml
	$(BIN)/heliostat demand generate --fabric configs/fabric-8.yaml --kind gravity --seed 7 --out $(VENV)/demo-tm.json
	$(BIN)/heliostat fabric mesh configs/fabric-8.yaml
	$(BIN)/heliostat plan --fabric configs/fabric-8.yaml --demand $(VENV)/demo-tm.json

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

protos: $(STAMP)
	$(BIN)/python -m southbound.proto.regen

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
