"""The Python API, as lm-eval's: `simple_evaluate(tasks=..., model=..., ...)` takes the CLI's options as keywords
and returns the results dict the CLI writes, through the CLI's own code path (the same options, checks, plan,
runner and results), so a notebook or a sweep needs no subprocess.

    from harness import simple_evaluate
    results = simple_evaluate(tasks=["mmneedle_k1"], model="random", data_dir="data", limit=2)
    results["groups"]["mmneedle_k1"]["exact_acc_pos,none"]

Its keywords are the options `harness.run.arguments.EvaluationOptions` declares, each a flag without its dashes
(`batch_size="auto"`, `log_samples=True`, `model_args={"pretrained": ...}`); its signature and `Args:` are made
from those declarations. A keyword's value is read as the flag's text is (a list of task names, a dict of model
arguments, `metadata` as a dict or JSON text); None leaves an option at its default. A mistake raises `UserError`
with the CLI's one-line message; a run that stopped before writing results raises `EvaluationError` with its exit
code.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import UserError
from harness.run.arguments import GROUPS, EvaluationOptions
from harness.run.declared_options import command_line, keyword_docs, keyword_signature

if TYPE_CHECKING:
    from harness.outputs.results.results_file import ResultsFile


class EvaluationError(RuntimeError):
    """The run ended without results (interrupted, or a backend stopped it); `exit_code` is the CLI's."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def simple_evaluate(*, verbose: bool = False, **options: Any) -> ResultsFile:
    """Evaluate `model` on `tasks` as `harness --tasks ... --model ...` does, and return the results dict it
    writes (lm-eval's shape: `results`, `groups`, `configs`, `versions`, `n-shot`, `config`, ...).

    Args:
    {options}
        verbose: print the results table on stdout, as the CLI does (default: nothing on stdout).

    Raises:
        UserError: a mistake in the arguments, the tasks or the data, with the CLI's one-line message.
        EvaluationError: the run stopped before writing results (its `exit_code` is the CLI's).
    """
    from harness.run.execute import run_with_results

    logged = bool(options.get("log_samples") or options.get("predict_only"))
    # lm-eval returns the samples without an output path: the run logs them in a folder of its own, read back, removed
    own = tempfile.TemporaryDirectory(prefix="harness-samples-") if logged and not options.get("output_path") else None
    options = {**options, "output_path": own.name} if own else options
    try:
        chosen = EvaluationOptions.from_keywords(options)
        if chosen.model is None:
            raise UserError("model= is required")
        argv = command_line(EvaluationOptions, GROUPS, options)  # recorded (the lock file, the results' argv)
        started = time.time()
        # The CLI prints the results table on stdout; a notebook gets the dict instead, unless it asks (`verbose`).
        with contextlib.nullcontext() if verbose else contextlib.redirect_stdout(io.StringIO()):
            code, results = run_with_results(chosen, argv)
        if results is None:
            raise EvaluationError(f"the run wrote no results (exit code {code}); its messages are above", code)
        if logged and chosen.output_path is not None:
            results["samples"] = _samples(chosen.output_path, started)
        return results
    finally:
        if own is not None:
            own.cleanup()


def _samples(output_path: Path, since: float) -> dict[str, list[dict[str, object]]]:
    """Each task's sample log this run wrote under `output_path` (`samples_<task>_<date>.jsonl`, written since
    `since`), its records in order."""
    root = output_path.parent if output_path.suffix == ".json" else output_path
    logs = [p for p in root.rglob("samples_*.jsonl") if p.stat().st_mtime >= since]
    found: dict[str, list[dict[str, object]]] = {}
    for log in sorted(logs):
        task = log.name.removeprefix("samples_").rsplit("_", 1)[0]
        found[task] = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    return found


# The keywords a notebook's completion and `help()` show: every declared option, then `verbose`.
simple_evaluate.__signature__ = keyword_signature(  # type: ignore[attr-defined]  # read by inspect.signature
    EvaluationOptions,
    GROUPS,
    [inspect.Parameter("verbose", inspect.Parameter.KEYWORD_ONLY, default=False, annotation="bool")],
    "ResultsFile",
)
simple_evaluate.__doc__ = (simple_evaluate.__doc__ or "").replace(
    "    {options}", keyword_docs(EvaluationOptions, GROUPS, " " * 8)
)


def evaluate(**kwargs: Any) -> ResultsFile:
    """lm-eval's second entry point. lm-eval's `evaluate` takes a model object and a task dict built beforehand;
    here a model is loaded from its name by every run, so `evaluate` is `simple_evaluate` (see its parameters),
    for code written against lm-eval's names."""
    return simple_evaluate(**kwargs)


def make_table(results: ResultsFile, column: str = "results") -> str:
    """The table the CLI prints for `results` (what `simple_evaluate` returned, or a results file read): each task's
    metrics, then each group's, as lm-eval's `lm_eval.utils.make_table` lays them out; `column="groups"`: the groups
    alone, as lm-eval's `make_table(results, "groups")`. lm-eval itself is not needed."""
    from harness.outputs.results.results import summary_table

    if column not in ("results", "groups"):
        raise UserError(f"make_table: column must be 'results' or 'groups', got {column!r}")
    return summary_table(results if column == "results" else {**results, "results": {}})
