# Two commands for a fresh machine: `make demo` and `make test`. Each creates .venv by itself.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_DIR ?= demo_out

.PHONY: install test lint demo bench clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	# torch 2.13.0 is the CPU build; an unpinned torch would pull a multi-GB CUDA build.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[hf,openai,dev]'
	touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check .

test: $(STAMP) lint
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 $(PY) -m pytest -q

demo: $(STAMP)
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 bash scripts/demo.sh $(DEMO_DIR)

clean:
	rm -rf $(VENV) $(DEMO_DIR)
