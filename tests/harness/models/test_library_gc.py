"""The `harness` command's collector while the `hf` backend imports torch and transformers
(`harness.models.shared.library_gc`): paused, then what the imports made frozen, so that full collections stop
traversing it; the model built after is not frozen, and a Python caller's collector is left as it is."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# A process of its own builds the backend (the command's, where its entry said so; a Python caller's, where not) and
# says how many full collections ran while it did, what is frozen, and whether the collector is on after.
BUILD = """
import gc, json, sys
from harness.models.shared.library_gc import in_the_command
if sys.argv[2] == "command":
    in_the_command()
full = []
gc.callbacks.append(lambda phase, info: full.append(1) if phase == "stop" and info["generation"] == 2 else None)
from harness.models.backends.hf.model import HFModel
model = HFModel.from_args({"pretrained": sys.argv[1], "device": "cpu", "threads": "1"})
import torch
tracked = {id(o) for o in gc.get_objects()}  # every tracked object but the frozen ones
print(json.dumps({
    "full_collections": len(full),
    "frozen": gc.get_freeze_count(),
    "torch_frozen": id(torch.nn.Module) not in tracked,
    "model_frozen": id(model) not in tracked or id(model.model) not in tracked,
    "collector_on": gc.isenabled(),
}))
"""


def built(checkpoint: Path, who: str) -> dict[str, object]:
    run = subprocess.run(
        [sys.executable, "-c", BUILD, str(checkpoint), who],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.splitlines()[-1])


@pytest.mark.slow  # a tiny LLaVA built in a process of its own, twice
def test_the_command_freezes_the_libraries_not_the_model_and_a_caller_keeps_its_collector(tiny_llava: Path) -> None:
    command = built(tiny_llava, "command")
    # Before: seven or eight full collections while torch, transformers and the model classes imported (~0.9 s).
    # Now the one before the imports (planning's small heap), and at most one as the processor and weights load.
    assert command["full_collections"] <= 3
    assert command["torch_frozen"] and not command["model_frozen"] and command["collector_on"]
    assert command["frozen"] > 100_000
    caller = built(tiny_llava, "caller")
    assert caller["frozen"] == 0 and not caller["torch_frozen"] and caller["collector_on"]
    assert caller["full_collections"] > command["full_collections"]
