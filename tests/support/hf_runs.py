"""The `harness` arguments of a run of the `hf` backend, the tests' tiny checkpoints' or a screen's: one place that
says how a test names its tasks, data and model settings to the backend."""

from __future__ import annotations

from pathlib import Path


def hf_run(tasks: str, data_dir: Path, *model_args: str, checkpoint: Path | None = None) -> tuple[str | Path, ...]:
    """`--tasks tasks --model hf --model_args ... --data_dir data_dir`: the model arguments `model_args`, after
    `pretrained=checkpoint,threads=1` where a checkpoint folder is given (one thread, as every test's model runs)."""
    settings = (f"pretrained={checkpoint}", "threads=1", *model_args) if checkpoint is not None else model_args
    return ("--tasks", tasks, "--model", "hf", "--model_args", ",".join(settings), "--data_dir", data_dir)
