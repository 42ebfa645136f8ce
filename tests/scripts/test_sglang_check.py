"""scripts/sglang_check.sh (the same rows through `vllm` and `sglang` on a GPU) where there is none: it parses, and
stops before building or running anything, saying why."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.paths import PROJECT

SCRIPT = PROJECT / "scripts" / "sglang_check.sh"


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), "tiny/ckpt", str(tmp_path / "work")],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": "/usr/bin:/bin", **env},
        timeout=60,
    )


def test_the_script_parses_and_needs_a_gpu(tmp_path: Path) -> None:
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True).returncode == 0
    if shutil.which("nvidia-smi", path="/usr/bin:/bin"):
        pytest.skip("this machine has nvidia-smi")
    result = _run(tmp_path)
    assert result.returncode == 2 and "sglang_check: no nvidia-smi: this check needs an NVIDIA GPU" in result.stderr
    assert not (tmp_path / "work").exists()
    wrong = _run(tmp_path, SGLANG_CHECK_BACKENDS="hf")
    assert wrong.returncode == 2 and "SGLANG_CHECK_BACKENDS must name vllm, sglang or both, not 'hf'" in wrong.stderr
    other = _run(tmp_path, SGLANG_CHECK_BENCHMARK="milebench")
    assert other.returncode == 2 and "must be mmneedle or mmlongbench, not 'milebench'" in other.stderr
