"""SGLang's request classes (`GenerateReqInput`, `Engine`) imported on the CPU build of torch, for the sglang backend's
tests (requirements/sglang-classes.txt installs what they import).

SGLang imports torchvision at module level (`sglang.srt.multimodal.internvl_utils`, InternVL's transforms), and
torchvision's only builds for torch 2.13 on PyPI are CUDA builds, whose operators do not load beside the CPU torch
("operator torchvision::nms does not exist"). `importable()` gives it a stand-in module holding the one name those
modules read when imported (`transforms.InterpolationMode`, a default argument's value), after transformers has
looked for the real torchvision and found none, so transformers never uses the stand-in. Nothing of it runs: no
request of the sglang backend reaches InternVL's transforms. Call it in a process of its own (`run_with_classes`),
never in the test process, whose other tests must not see a torchvision module."""

from __future__ import annotations

import enum
import importlib.abc
import importlib.machinery
import json
import subprocess
import sys
import types
from pathlib import Path


class _InterpolationMode(enum.Enum):
    NEAREST = "nearest"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"


class _StandIn(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `torchvision` and its submodules as empty modules with `InterpolationMode` (see module doc)."""

    def find_spec(self, name, path, target=None):
        if name == "torchvision" or name.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.InterpolationMode = _InterpolationMode  # type: ignore[attr-defined]
        return module

    def exec_module(self, module):
        return None


def importable() -> None:
    """Make `sglang.srt.managers.io_struct` and `sglang.srt.entrypoints.engine` importable here (see module doc)."""
    import transformers.image_utils  # noqa: F401 - transformers looks for torchvision first, and finds none

    sys.meta_path.insert(0, _StandIn())


def run_with_classes(script: str, *, cwd: Path) -> object:
    """Run `script` (Python source that ends by printing one JSON value) in a process of its own where SGLang's
    request classes import; its JSON value."""
    source = f"from tests.support.sglang_classes import importable\nimportable()\n{script}"
    done = subprocess.run(
        [sys.executable, "-c", source], cwd=cwd, capture_output=True, text=True, timeout=900, check=False
    )
    if done.returncode != 0:
        raise AssertionError(f"the script failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
