"""A checkpoint folder is untrusted input too (issue 49, item 3): before transformers or vLLM reads a byte of it,
every file of the folder is known to be a regular file once its links are followed; a FIFO planted under a file's
name is one line naming it, at `--screen_only` and in a run. (On 4795f55 transformers took a FIFO planted as
`tokenizer_config.json` for a missing file and loaded the processor without it, saying nothing: another tokenizer
configuration than the checkpoint's.)"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.support.deadline import within

TASK = "mmneedle_m1_n2_k1_pos"


@pytest.mark.parametrize("screen", [True, False], ids=["screen-only", "run"])
def test_a_fifo_in_a_checkpoint_folder_is_named_not_waited_on(
    tmp_path: Path, tiny_llava: Path, data_dir: Path, harness, screen: bool
) -> None:
    checkpoint = Path(shutil.copytree(tiny_llava, tmp_path / "ckpt"))
    planted = checkpoint / "tokenizer_config.json"
    planted.unlink()
    os.mkfifo(planted)
    argv = ["--tasks", TASK, "--model", "hf", "--model_args", f"pretrained={checkpoint}", "--data_dir", data_dir]
    argv += ["--limit", "2"] + (["--screen_only"] if screen else ["--output_path", tmp_path / "out"])
    with within(60, "a run over a checkpoint holding a FIFO"):
        run = harness(*argv)
    assert "Traceback" not in run.err, run.err
    if screen:  # the screen counts by the family's rule instead, and says why (its reason cut at 200 characters)
        assert run.code == 0 and f"CheckpointUnavailable: checkpoint {checkpoint}: " in run.out, run.out
    else:
        (line,) = [line for line in run.err.splitlines() if line.startswith("harness: error:")]
        assert run.code == 2 and f"checkpoint {checkpoint}: {planted} is a FIFO, not a regular file" in line, line
