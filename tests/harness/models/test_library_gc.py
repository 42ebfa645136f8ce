"""The `harness` command's collector while a backend imports its libraries (`harness.models.shared.library_gc`):
`hf` torch and transformers, the engines their argument classes (vLLM's `EngineArgs`, SGLang's `ServerArgs`) as their
settings are read. Paused, then what the imports made frozen, so that full collections stop traversing it; the model
built after is not frozen, and a Python caller's collector is left as it is."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# A process of its own builds the backend as the command does (`build_model`; the command's process where its entry
# said so, a Python caller's where not) and says how many full collections ran while it did, what is frozen, and
# whether the collector is on after. The library class is one the backend's imports bring.
BUILD = """
import gc, importlib, json, sys
from harness.models.shared.library_gc import in_the_command
checkpoint, who, backend, library = sys.argv[1:]
if who == "command":
    in_the_command()
full = []
gc.callbacks.append(lambda phase, info: full.append(1) if phase == "stop" and info["generation"] == 2 else None)
from harness.models.backends.replicas import build_model
args = {"pretrained": checkpoint, **({"device": "cpu", "threads": "1"} if backend == "hf" else {})}
model = build_model(backend, args)
module, _, name = library.partition(":")
library_class = getattr(importlib.import_module(module), name)
tracked = {id(o) for o in gc.get_objects()}  # every tracked object but the frozen ones
print(json.dumps({
    "full_collections": len(full),
    "frozen": gc.get_freeze_count(),
    "library_frozen": id(library_class) not in tracked,
    "model_frozen": id(model) not in tracked or id(getattr(model, "model", model)) not in tracked,
    "collector_on": gc.isenabled(),
}))
"""

LIBRARIES = {  # backend: a class its imports bring
    "hf": "torch.nn:Module",
    "vllm": "vllm.engine.arg_utils:EngineArgs",
    "sglang": "sglang.srt.server_args:ServerArgs",
}


def built(checkpoint: Path, who: str, backend: str) -> dict[str, object]:
    run = subprocess.run(
        [sys.executable, "-c", BUILD, str(checkpoint), who, backend, LIBRARIES[backend]],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.splitlines()[-1])


@pytest.mark.slow  # a tiny LLaVA built in a process of its own, twice
def test_the_command_freezes_the_libraries_not_the_model_and_a_caller_keeps_its_collector(tiny_llava: Path) -> None:
    command = built(tiny_llava, "command", "hf")
    # Before: seven or eight full collections while torch, transformers and the model classes imported (~0.9 s).
    # Now the one before the imports (planning's small heap), and at most one as the processor and weights load.
    assert command["full_collections"] <= 3
    assert command["library_frozen"] and not command["model_frozen"] and command["collector_on"]
    assert command["frozen"] > 100_000
    caller = built(tiny_llava, "caller", "hf")
    assert caller["frozen"] == 0 and not caller["library_frozen"] and caller["collector_on"]
    assert caller["full_collections"] > command["full_collections"]


@pytest.mark.slow  # each engine's settings read in a process of its own
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_the_command_freezes_the_engine_argument_classes_its_settings_import(tiny_llava: Path, engine: str) -> None:
    """Reading `--model_args` imports the engine's own declarations: vLLM's took eight full collections of the
    command's process (1.6-1.8 s, bench/RESULTS.md). The backend is built, not its engine (started at the first
    batch), so this runs wherever the engine's classes are installed."""
    pytest.importorskip(LIBRARIES[engine].partition(":")[0])
    command = built(tiny_llava, "command", engine)
    assert command["full_collections"] <= 2
    assert command["library_frozen"] and not command["model_frozen"] and command["collector_on"]
