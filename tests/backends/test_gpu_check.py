"""scripts/compare_backends.py on real result folders (two `harness` runs of the `constant` baseline),
and the GPU check's refusal to run without a GPU."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main

from .conftest import MMNEEDLE_LIMIT

ROOT = Path(__file__).resolve().parents[2]
TASKS = "mmneedle_m1_n2_k1_pos,mmneedle_m1_n2_k1_neg"




def _run(data: Path, out: Path, answer: str) -> Path:
    code = main(["--tasks", TASKS, "--model", "constant", "--model_args", f'answer="{answer}"', "--data_dir", str(data),
                 "--output_path", str(out), "--no_progress"])
    assert code == 0
    return out


def test_compare_backends_on_two_runs(mmneedle_dir, tmp_path, capsys, script_module):
    compare = script_module("compare_backends")
    never = _run(mmneedle_dir, tmp_path / "a", "-1")
    same = _run(mmneedle_dir, tmp_path / "b", "-1")
    other = _run(mmneedle_dir, tmp_path / "c", "1, 1, 1")
    capsys.readouterr()

    assert compare.main([str(never), str(same), "--labels", "hf", "vllm", "--seconds", "10", "4", "--exclude", "0", "2",
                         "--json", str(tmp_path / "same.json"), "--min_agreement", "1.0"]) == 0
    report = capsys.readouterr().out
    assert f"Answer agreement: {2 * MMNEEDLE_LIMIT}/{2 * MMNEEDLE_LIMIT} = 100.0%" in report
    summary = json.loads((tmp_path / "same.json").read_text())
    assert summary["throughput"]["hf"] == {"samples": 6, "seconds": 10.0, "samples_per_s": 0.6}
    assert summary["throughput"]["vllm"]["samples_per_s"] == 3.0  # 6 samples in 4 - 2 seconds
    neg = summary["tasks"]["mmneedle_m1_n2_k1_neg"]["metrics"]["existence_acc"]
    assert neg == {"a": 1.0, "b": 1.0, "diff": 0.0}

    assert compare.main([str(never), str(other), "--min_agreement", "0.5", "--out", str(tmp_path / "r.md")]) == 1
    report = (tmp_path / "r.md").read_text()
    assert "Answer agreement: 0/6 = 0.0%" in report
    assert "| | existence_acc | 1.0000 | 0.0000 | -1.0000 |" in report  # negatives: '-1' right, '1, 1, 1' wrong
    assert "a='-1' b='1, 1, 1'" in report


def test_gpu_check_needs_a_gpu(tmp_path):
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    result = subprocess.run(["bash", "-n", str(ROOT / "scripts" / "gpu_check.sh")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    # With harness and builders on PATH but no nvidia-smi, the script stops before doing anything.
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    if shutil.which("nvidia-smi", path=env["PATH"]):
        pytest.skip("this machine has nvidia-smi")
    result = subprocess.run([bash, str(ROOT / "scripts" / "gpu_check.sh"), "tiny/ckpt", str(tmp_path / "work")],
                            capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 2
    expected = ("gpu_check: no nvidia-smi: this check needs an NVIDIA GPU" if (bin_dir / "harness").exists()
                else "gpu_check: the 'harness' command is not installed")
    assert expected in result.stderr
    assert not (tmp_path / "work").exists()


def test_gpu_check_names_an_unknown_benchmark(tmp_path):
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    env = {**os.environ, "GPU_CHECK_BENCHMARK": "mmlongbnech"}
    result = subprocess.run([bash, str(ROOT / "scripts" / "gpu_check.sh"), "tiny/ckpt", str(tmp_path / "work")],
                            capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 2
    assert "GPU_CHECK_BENCHMARK must be mmneedle or mmlongbench, not 'mmlongbnech'" in result.stderr
