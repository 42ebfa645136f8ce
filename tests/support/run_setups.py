"""The set-ups the harness's tests share around a run: its `harness` arguments (`--tasks ... --model ... --data_dir
... --output_path ...`, for the in-process `harness` fixture or a `harness` process), a one-file task over the MMNeedle
build or the toy colours, a test's own backend registered for a block, and the results file a run left in its model
folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.paths import PROJECT


def run_args(
    tasks: str,
    model: str,
    *,
    model_args: str | None = None,
    include_path: Path | None = None,
    data_dir: Path | str | None = None,
    out: Path | None = None,
) -> tuple[str, ...]:
    """`--tasks TASKS [--include_path INCLUDE_PATH] --model MODEL [--model_args MODEL_ARGS] [--data_dir DATA_DIR]
    [--output_path OUT]`, each a string (a process's argv as well as the `harness` fixture's); a flag whose value is
    None is left out."""
    flags = {"--tasks": tasks, "--include_path": include_path, "--model": model, "--model_args": model_args}
    flags |= {"--data_dir": data_dir, "--output_path": out}
    return tuple(text for flag, value in flags.items() if value is not None for text in (flag, str(value)))


def answering_red(task: str, include_path: Path, data_dir: Path, out: Path | None = None) -> tuple[str, ...]:
    """`run_args` of a run of the toy task `task` (from the folder `include_path`) on the toy build `data_dir`, into
    `out`, by the constant model answering "red" (right on the colours' red row, wrong on every other)."""
    return run_args(task, "constant", model_args="answer=red", include_path=include_path, data_dir=data_dir, out=out)


def needle_task_yaml(task: str, more: str = "", *, dataset: str = "mmneedle") -> str:
    """A task named `task` over the `m1_n2_k1` config of MMNeedle's build (or of the build named `dataset`) in one
    file, scored by `exact_match` and defining no answer space (so the random model fails each sample), with the YAML
    lines `more` after it."""
    return (
        f"task: {task}\ndataset_path: {dataset}\ndataset_name: m1_n2_k1\ndoc_to_text: prompt\ndoc_to_visual: images\n"
        f"doc_to_target: answer\nmetric_list:\n  - metric: exact_match\n{more}"
    )


def toy_colors_yaml(task: str, metric_list: str, more: str = "") -> str:
    """A task named `task` over the toy's colours, scored by `utils.process_results` of its folder into the metrics
    of `metric_list` (the YAML under `metric_list:`, indented two spaces), answers cut at 8 tokens, with the YAML
    lines `more` after it."""
    head = f"""
        task: {task}
        dataset_path: toy
        dataset_name: colors
        doc_to_visual: images
        doc_to_text: prompt
        doc_to_target: answer
        process_results: !function utils.process_results
        metric_list:
    """
    metrics = textwrap.indent(textwrap.dedent(metric_list).strip("\n"), "  ")
    tail = "generation_kwargs: {max_gen_toks: 8, until: []}\n"
    return f"{textwrap.dedent(head).lstrip()}{metrics}\n{tail}{textwrap.dedent(more).lstrip()}"


def only_results(folder: Path) -> dict[str, Any]:
    """The one results file of the model folder `folder`, read (fails where there is none, or more than one)."""
    (path,) = folder.glob("results_*.json")
    return json.loads(path.read_text())


def checkpoint_folder(checkpoint: Path) -> str:
    """The model folder's name of a run of the `hf` backend on the checkpoint folder `checkpoint` (its path with each
    `/` as `__`)."""
    return str(checkpoint).replace("/", "__")


@contextmanager
def registered_model(name: str, model: type) -> Iterator[type]:
    """The backend class `model` registered as `--model name` for the block (as `@register_model(name)` does), and
    taken out of the registry after it, whatever the block did."""
    from harness.models.registry import _REGISTRY, register_model

    register_model(name)(model)
    try:
        yield model
    finally:
        _REGISTRY.pop(name)


def modules_a_run_imports(*argv: str, env: dict[str, str] | None = None) -> list[str]:
    """The project modules (`builders`, `harness`, `tasks`) a `harness ARGV` run in a fresh interpreter has imported
    when it ends; the run must succeed."""
    code = (
        "import sys\nfrom harness.run.cli import main\ncode = main(sys.argv[1:])\n"
        "print(*sorted(m for m in sys.modules if m.partition('.')[0] in ('builders', 'harness', 'tasks')))\n"
        "sys.exit(code)"
    )
    ran = subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=PROJECT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.splitlines()[-1].split()
