"""The Python API, as lm-eval's: `simple_evaluate(tasks=..., model=..., ...)` takes the CLI's arguments as keywords
and returns the results dict the CLI writes, through the CLI's own code path (the same parser, checks, runner and
results), so a notebook or a sweep needs no subprocess.

    from harness import simple_evaluate
    results = simple_evaluate(tasks=["mmneedle_k1"], model="random", data_dir="data", limit=2)
    results["groups"]["mmneedle_k1"]["exact_acc_pos,none"]

A keyword is a flag without its dashes (`batch_size="auto"`, `log_samples=True`, `model_args={"pretrained": ...}`);
a list or tuple is joined with commas (`tasks`), a dict of model or judge arguments becomes `k=v,...`, a dict of
`metadata` becomes JSON, True gives a bare flag, False and None leave a flag out. A mistake raises `UserError` with the
CLI's one-line message; a run that stopped before writing results raises `EvaluationError` with its exit code.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

from harness.errors import UserError


class EvaluationError(RuntimeError):
    """The run ended without results (interrupted, or a backend stopped it); `exit_code` is the CLI's."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _kv(values: Mapping[str, Any]) -> str:
    """`k=v,...` as `--model_args` reads it: a value holding a comma quoted."""
    return ",".join(f'{k}="{v}"' if "," in str(v) else f"{k}={v}" for k, v in values.items())


def to_argv(**kwargs: Any) -> list[str]:
    """The command line the keywords stand for."""
    argv: list[str] = []
    for key, value in kwargs.items():
        flag = f"--{key}"
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
            continue
        if key == "metadata" and isinstance(value, Mapping):
            text = json.dumps(dict(value))
        elif isinstance(value, Mapping):
            text = _kv(value)
        elif isinstance(value, Sequence) and not isinstance(value, str):
            if key == "include_path":  # repeated, as on the command line
                argv += [part for path in value for part in (flag, str(path))]
                continue
            text = ",".join(str(v) for v in value)
        else:
            text = str(value)
        argv += [flag, text]
    return argv


def simple_evaluate(**kwargs: Any) -> dict[str, Any]:
    """Run `harness` with these arguments (`harness --help` lists them); the results dict it writes."""
    from harness.cli import run_parser
    from harness.running.run import run_with_results

    argv = to_argv(**kwargs)
    message = io.StringIO()
    try:
        with contextlib.redirect_stderr(message):
            args = run_parser().parse_args(argv)
    except SystemExit:  # argparse's message, as an exception a notebook shows
        lines = message.getvalue().strip().splitlines()
        raise UserError(lines[-1].removeprefix("harness: error: ") if lines else f"invalid arguments {argv}") from None
    if args.model is None:
        raise UserError("model= is required")
    code, results = run_with_results(args, argv)
    if results is None:
        raise EvaluationError(f"the run wrote no results (exit code {code}); its messages are above", code)
    return results


def evaluate(**kwargs: Any) -> dict[str, Any]:
    """lm-eval's second entry point. lm-eval's `evaluate` takes a model object and a task dict built beforehand;
    here a model is loaded from its name by every run, so `evaluate` is `simple_evaluate`, for code written
    against lm-eval's names."""
    return simple_evaluate(**kwargs)
