"""Issue 41, item 13: Ctrl-C (SIGINT) at any moment of a run is the one `harness: interrupted` line and exit code 130,
never a `KeyboardInterrupt` traceback: while an `hf` model loads its weights, just as Ray replicas become ready,
while the tasks' data are read. The signal is sent by the run's own process at that moment (a hook wrapped around
the step), so the moment is the same on every machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import PROJECT
from tests.support.run_setups import run_args

# A child process: the step named by `target` (module, attribute) sends SIGINT to the process as it runs (`before`)
# or as it returns, then the harness runs `argv`.
CHILD = """
import os, signal, sys, importlib
module_name, attribute, when = sys.argv[1], sys.argv[2], sys.argv[3]
owner = importlib.import_module(module_name)
path = attribute.split(".")
for part in path[:-1]:
    owner = getattr(owner, part)
original = getattr(owner, path[-1])
original = getattr(original, "__func__", original)

def interrupted(*args, **kwargs):
    if when == "before":
        os.kill(os.getpid(), signal.SIGINT)
    result = original(*args, **kwargs)
    if when == "after":
        os.kill(os.getpid(), signal.SIGINT)
    return result

is_class_method = isinstance(owner.__dict__.get(path[-1]), classmethod) if isinstance(owner, type) else False
setattr(owner, path[-1], classmethod(interrupted) if is_class_method else interrupted)
from harness.run.cli import main
sys.exit(main(sys.argv[4:]))
"""


def _interrupted(
    script_env: dict[str, str], target: tuple[str, str, str], out: Path | None, *argv: object
) -> subprocess.CompletedProcess:
    """`harness ARGV` (with `--output_path OUT` where `out` is given) interrupted at `target` in a child process,
    after the check that it ended in the one `harness: interrupted` line."""
    env = {**script_env, "PYTHONPATH": os.pathsep.join([str(PROJECT), script_env.get("PYTHONPATH", "")])}
    output = ("--output_path", out) if out is not None else ()
    command = [sys.executable, "-c", CHILD, *target, *map(str, (*argv, *output)), "--no_progress"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    _assert_one_interrupted_line(done, out)
    return done


def _assert_one_interrupted_line(done: subprocess.CompletedProcess, out: Path | None) -> None:
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr, done.stderr
    assert done.returncode == 130, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    if out is None:
        assert last == "harness: interrupted", done.stderr
    else:  # the folder the run resumes from is named
        assert last.startswith(f"harness: interrupted; finished samples are saved under {out}/"), last
        assert last.endswith(", run the same command to resume"), last
    assert not (out is not None and list(out.rglob("harness.lock"))), "the output lock was left behind"


@pytest.mark.slow  # a child process that loads the tiny LLaVA
def test_sigint_while_an_hf_model_loads_is_one_line(
    tmp_path: Path, script_env: dict[str, str], data_dir: Path, tiny_llava: Path
) -> None:
    target = ("transformers", "AutoModelForImageTextToText.from_pretrained", "before")
    hf = run_args("mmneedle_m1_n2_k1_neg", "hf", model_args=f"pretrained={tiny_llava}", data_dir=data_dir)
    _interrupted(script_env, target, tmp_path / "out", *hf, "--limit", "2")


@pytest.mark.slow  # a child process that starts Ray and two replicas
def test_sigint_just_as_ray_replicas_are_ready_is_one_line(
    tmp_path: Path, script_env: dict[str, str], toy_dir: Path, toy_tasks: Path
) -> None:
    target = ("harness.models.backends.replicas.pool", "wait_ready", "after")
    replicas = run_args(
        "toy_colors", "random", model_args="data_parallel_size=2", include_path=toy_tasks, data_dir=toy_dir
    )
    done = _interrupted(script_env, target, tmp_path / "out", *replicas, "--ray")
    assert "replicas ready on Ray" in done.stderr  # the signal came once they were


def test_sigint_while_the_tasks_data_are_read_is_one_line(
    script_env: dict[str, str], toy_dir: Path, toy_tasks: Path
) -> None:
    target = ("harness.running.task.task", "Task.load", "before")
    _interrupted(script_env, target, None, *run_args("toy_colors", "random", include_path=toy_tasks, data_dir=toy_dir))
