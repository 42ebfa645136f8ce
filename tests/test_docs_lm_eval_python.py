"""docs/lm-eval.md's Python examples run as printed after the README's install (issue 54 item 10): in a fresh folder,
after the README's offline build (its `builders build ... --source synthetic` line, run as the README prints it), each
`python` block runs in a fresh interpreter of this install, whose extras need not hold lm-eval. Its first example
once named configs that build had not made, and `make_table` came from lm-eval."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.test_lm_eval_flags_on_every_benchmark import code_blocks
from tests.support.paths import PROJECT


def python_blocks() -> list[str]:
    text = (PROJECT / "docs" / "lm-eval.md").read_text(encoding="utf-8")
    return [block for language, block in code_blocks(text) if language == "python"]


def readme_offline_build() -> list[str]:
    """The README's offline `builders build` line (the block after "No GPU, no network?")."""
    text = (PROJECT / "README.md").read_text(encoding="utf-8")
    offline = text.split("No GPU, no network?", 1)[1]
    (block,) = [block for language, block in code_blocks(offline)[:1] if language == "sh"]
    (line,) = [line for line in block.splitlines() if line.startswith("builders build")]
    return shlex.split(line)


def test_the_python_examples_are_the_ones_the_readmes_build_serves() -> None:
    build = readme_offline_build()
    configs = build[build.index("--configs") + 1]
    (example,) = [block for block in python_blocks() if "simple_evaluate(" in block]
    assert f"mmneedle_{configs}" in example and "from harness import make_table" in example
    assert "lm_eval" not in example  # the harness's own table: lm-eval is not installed by the README


@pytest.mark.slow  # the README's build and each example in a fresh interpreter (~10 s)
def test_each_python_example_runs_as_printed_after_the_readmes_offline_build(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "PYTHONPATH": str(PROJECT),
        "MMLONGEVAL_DATA_DIR": str(tmp_path / "no-data"),
    }
    build = readme_offline_build()
    done = subprocess.run(
        [sys.executable, "-m", *build], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    blocks = python_blocks()
    assert blocks
    for block in blocks:
        ran = subprocess.run(
            [sys.executable, "-c", block], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
        )
        assert ran.returncode == 0, f"{block}\n{ran.stderr[-3000:]}"
        assert "| mmneedle_m10_n2_k1_pos | 1.0 | 2 | existence_acc |" in ran.stdout, ran.stdout
