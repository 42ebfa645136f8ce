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
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from harness.errors import UserError

if TYPE_CHECKING:
    from harness.outputs.results_file import ResultsFile


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


def simple_evaluate(
    *,
    tasks: str | Sequence[str],
    model: str,
    model_args: str | Mapping[str, Any] | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    output_path: str | os.PathLike[str] | None = None,
    limit: int | float | None = None,
    batch_size: int | str | None = None,
    max_batch_size: int | None = None,
    max_batch_tokens: int | None = None,
    device: str | None = None,
    seed: int | Sequence[int | None] | None = None,
    gen_kwargs: str | Mapping[str, Any] | None = None,
    system_instruction: str | None = None,
    apply_chat_template: bool | str = False,
    num_fewshot: int | None = None,
    log_samples: bool = False,
    log_samples_suffix: str | None = None,
    predict_only: bool = False,
    write_out: bool = False,
    judge_model: str | None = None,
    judge_args: str | Mapping[str, Any] | None = None,
    include_path: Sequence[str | os.PathLike[str]] | None = None,
    metadata: str | Mapping[str, Any] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    use_cache: str | os.PathLike[str] | None = None,
    no_cache: bool = False,
    trust_remote_code: bool = False,
    trust_unverified_data: bool = False,
    bootstrap_iters: int | None = None,
    shard: str | None = None,
    allow_failures: bool = False,
    hf_hub_log_args: str | Mapping[str, Any] | None = None,
    wandb_args: str | Mapping[str, Any] | None = None,
    verbosity: str | None = None,
    no_progress: bool = False,
    verbose: bool = False,
    **flags: Any,
) -> ResultsFile:
    """Evaluate `model` on `tasks` as `harness --tasks ... --model ...` does, and return the results dict it
    writes (lm-eval's shape: `results`, `groups`, `configs`, `versions`, `n-shot`, `config`, ...).

    Args:
        tasks: task, group, tag or dataset-config names (`harness ls`), a list or a comma-separated string.
        model: a backend (`hf`, `vllm`, `openai`, `random`, `constant`) or an alias (`qwen2.5-vl`; `harness models`).
        model_args: the backend's arguments, `{"pretrained": ..., "dtype": "bfloat16"}` or `"k=v,..."`.
        data_dir: the folder holding the builds (`builders build ... --out DIR`), or `hf://ORG/NAME@REVISION`.
        output_path: where the journal (resumable), the results file and the sample logs go; None keeps nothing.
        limit: the first N documents of each task (N >= 1), or a fraction in (0, 1); for testing.
        batch_size: requests per model call, or "auto" (hf: the largest that fits, from `max_batch_size` down).
        max_batch_size: where `batch_size="auto"` starts.
        max_batch_tokens: hf: batch by token count, at most this many tokens a batch.
        device: hf: the device to load on ("cuda:0"); other backends place themselves.
        seed: the seed of sampling and the random baseline, or lm-eval's four (random, numpy, torch, fewshot).
        gen_kwargs: generation settings for every task, `{"max_gen_toks": 64}` or `"k=v,..."`.
        system_instruction: a system turn before every prompt.
        apply_chat_template: accepted as lm-eval's; every backend renders the model's own template.
        num_fewshot: 0 or None (every task is zero-shot as its paper ran it).
        log_samples: also write lm-eval's `samples_<task>_<date>.jsonl` (needs `output_path`).
        log_samples_suffix: lmms-eval's suffix of the sample logs' names.
        predict_only: generate and journal the answers without scoring them.
        write_out: print the first prompts of each task before generating.
        judge_model, judge_args: the judge of the tasks scored by one (MMLongBench summarization).
        include_path: more folders (or YAML files) of tasks.
        metadata: merged into every task's metadata, a dict or JSON text.
        cache_dir, use_cache: the response cache's folder (`use_cache` is lm-eval's name); `no_cache` turns it off.
        trust_remote_code: let the hf or vllm backend run the checkpoint's own code.
        trust_unverified_data: read data without a build manifest (the results then say "unverified").
        bootstrap_iters: recorded, as lm-eval's (the standard errors here are analytic).
        shard: "I/N": this shard's documents only (combine shards with `harness merge`).
        allow_failures: return the results even when samples failed with errors.
        hf_hub_log_args: lm-eval's upload of the results to a Hub dataset repo.
        wandb_args: log the results to Weights & Biases (`wandb.init` arguments; needs the wandb extra).
        verbosity: the libraries' log level ("INFO", ...).
        no_progress: no progress bars (on stderr).
        verbose: print the results table on stdout, as the CLI does (default: nothing on stdout).
        **flags: any other `harness` flag, by its name without dashes.

    Raises:
        UserError: a mistake in the arguments, the tasks or the data, with the CLI's one-line message.
        EvaluationError: the run stopped before writing results (its `exit_code` is the CLI's).

    A list or tuple is joined with commas, a dict of arguments becomes `k=v,...` (`metadata`: JSON), True gives a
    bare flag, False and None leave a flag out.
    """
    from harness.execute import run_with_results
    from harness.run_arguments import run_parser

    named = {k: v for k, v in locals().items() if k not in ("flags", "verbose", "run_parser", "run_with_results")}
    argv = to_argv(**named, **flags)
    message = io.StringIO()
    try:
        with contextlib.redirect_stderr(message):
            args = run_parser().parse_args(argv)
    except SystemExit:  # argparse's message, as an exception a notebook shows
        lines = message.getvalue().strip().splitlines()
        raise UserError(lines[-1].removeprefix("harness: error: ") if lines else f"invalid arguments {argv}") from None
    if args.model is None:
        raise UserError("model= is required")
    # The CLI prints the results table on stdout; a notebook gets the dict instead, unless it asks (`verbose`).
    with contextlib.nullcontext() if verbose else contextlib.redirect_stdout(io.StringIO()):
        code, results = run_with_results(args, argv)
    if results is None:
        raise EvaluationError(f"the run wrote no results (exit code {code}); its messages are above", code)
    return results


def evaluate(**kwargs: Any) -> ResultsFile:
    """lm-eval's second entry point. lm-eval's `evaluate` takes a model object and a task dict built beforehand;
    here a model is loaded from its name by every run, so `evaluate` is `simple_evaluate` (see its parameters),
    for code written against lm-eval's names."""
    return simple_evaluate(**kwargs)
