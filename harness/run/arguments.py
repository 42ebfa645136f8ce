"""The options of an evaluation (`harness --tasks ... --model ...`, `simple_evaluate(tasks=..., model=...)`), each
declared once (`harness.run.declared_options`): `EvaluationOptions`, whose fields are the flags of `run_parser`, the
keywords of `simple_evaluate` and the options a run's plan reads (`harness.run.plan.plan_run`). lm-eval's everyday
flags are its base, `harness.run.lm_eval_flags.LmEvalOptions`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builders.core.contract import REQUIRED, add_flags, option, positive_int, switch
from harness.errors import CommandOptions, CommandParser, UserError, include_path_option
from harness.run.declared_options import arguments_option
from harness.run.lm_eval_flags import LM_EVAL, LmEvalOptions, Seeds, gen_kwargs_flag, read_seeds

if TYPE_CHECKING:
    from builders.core import contract
    from harness.run.run_file import RunFile
    from harness.running.sharding import Shard

TOKEN_BUDGET_BATCH_SIZE = 64  # the request cap per batch when only --max_batch_tokens is given
GROUPS = (LM_EVAL,)  # the `--help` groups after the parser's own


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as package_version

    try:
        return package_version("mmlongeval")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _task_names(value: Any) -> str:
    """Comma-separated names; a keyword may give a list."""
    return value if isinstance(value, str) else ",".join(str(name) for name in value)


def _limit(value: object) -> float:
    text = str(value)
    try:
        number = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of documents or a fraction, got {text!r}") from None
    if number == 0:
        raise argparse.ArgumentTypeError("0 documents would evaluate nothing; give N >= 1 or a fraction in (0, 1)")
    if not math.isfinite(number) or number < 0 or (number >= 1 and number != int(number)):
        raise argparse.ArgumentTypeError(f"expected an integer >= 1 or a fraction in (0, 1), got {text!r}")
    return number


def _dollars(value: object) -> float:
    text = str(value)
    try:
        number = float(text.removeprefix("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of US dollars, got {text!r}") from None
    if not math.isfinite(number) or number <= 0:
        raise argparse.ArgumentTypeError(f"expected a number of US dollars above 0, got {text!r}")
    return number


def _batch_size(value: object) -> int | str:
    """An integer >= 1, or lm-eval's `auto` (`auto:N` too: lm-eval searches N times, this harness on every
    out-of-memory, so N changes nothing)."""
    text = str(value)
    return "auto" if text == "auto" or text.startswith("auto:") else positive_int(text, " or auto")


def _shard(value: Any) -> Shard | None:
    from harness.running.sharding import Shard, parse_shard

    if isinstance(value, Shard):
        return value
    try:
        return parse_shard(value)
    except ValueError as err:
        raise UserError(str(err)) from None


def _json_object(value: Any) -> dict[str, contract.JsonValue]:
    """`--metadata`: a JSON object's text, or a dict (of what JSON holds)."""
    from builders.core import contract

    if isinstance(value, Mapping):  # parsed from its JSON text: a copy holding only what JSON holds
        try:
            value = json.dumps(dict(value))
        except (TypeError, ValueError) as err:
            raise UserError(f"--metadata: not JSON ({err})") from None
    elif not value:
        return {}
    try:
        parsed = contract.loads_json(value)
    except contract.TooManyDigits as err:
        raise UserError(f"--metadata: {err.where or 'the value'}: {err.problem}") from None
    except json.JSONDecodeError as err:  # the text is not quoted: it may hold a key
        raise UserError(f"--metadata: not valid JSON ({err})") from None
    except RecursionError:
        raise UserError("--metadata: not valid JSON (nested too deeply to read)") from None
    if not isinstance(parsed, dict):  # a mapping's copy always is one
        raise UserError(f"--metadata: expected a JSON object, got {type(parsed).__name__}")
    return parsed


def _reasoning_tags(value: object) -> tuple[tuple[str, str], ...] | None:
    from harness.models.facts.reasoning import parse_reasoning_tags

    try:
        return parse_reasoning_tags(value)
    except ValueError as err:
        raise UserError(str(err)) from None


def _at_least_one(flag: str, value: int) -> str | None:
    return f"{flag} must be at least 1" if value < 1 else None


@dataclass(frozen=True, kw_only=True)
class EvaluationOptions(LmEvalOptions):
    """Every option of an evaluation, read and checked (a value left out is its default)."""

    tasks: str = option(
        REQUIRED,
        "comma-separated task, group, tag or dataset config names "
        "(<benchmark>_<config>: all its tasks), globs, or YAML paths; `list` prints them all",
        parse=_task_names,
        check=lambda flag, value: None if any(n.strip() for n in value.split(",")) else f"{flag} is empty",
        accepts="str | Sequence[str]",
    )
    model: str | None = option(
        None,
        "backend (hf, vllm, openai, constant, random) or an alias (qwen2.5-vl, ...); required unless --tasks list",
    )
    model_args: dict[str, str] = arguments_option(
        'k=v,k2=v2 for the backend; quote values with commas: answer="1, 2, 3"',
        "--model_args",
    )
    data_dir: str | None = option(
        None,
        "folder holding built datasets, or a pushed build on the Hub: "
        "hf://ORG/NAME@REVISION (default: $MMLONGEVAL_DATA_DIR, then ~/.cache/mmlongeval/data, then "
        "the task's metadata.hub_repo)",
        parse=os.fspath,
        accepts="str | os.PathLike[str] | None",
    )
    trust_unverified_data: bool = switch(
        "read data that cannot be verified (no "
        "build manifest, a malformed one, files it does not list) instead of refusing it; the "
        'results and the report then say "unverified"'
    )
    include_path: tuple[Path, ...] = include_path_option(
        "extra folder (or YAML file) of tasks; may be repeated",
        accepts="str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None",
    )
    limit: float | None = option(
        None,
        "first N documents (N >= 1) of each task, or a fraction in (0, 1) "
        "(testing only); --limit 0 is refused, as it would score nothing",
        parse=_limit,
        accepts="int | float | str | None",
    )
    batch_size: int | str | None = option(
        None,
        "requests per model call (default 1; with "
        f"--max_batch_tokens the most requests per batch, default {TOKEN_BUDGET_BATCH_SIZE}); `auto`: "
        "the largest that fits in device memory, from --max_batch_size down (hf; recorded in the results)",
        parse=_batch_size,
    )
    max_batch_tokens: int | None = option(
        None,
        "hf: batch by the rows' token counts, at most this many "
        "tokens per batch counting padding (prompt + max_gen_toks), long prompts first",
        parse=int,
        check=_at_least_one,
    )
    shard: Shard | None = option(
        None,
        "run only shard I of N of every task (0-based: 0/4 .. 3/4), for batch "
        "schedulers; combine the shards' output folders with `harness merge`",
        parse=_shard,
        accepts="str | None",
    )
    ray: str | None = option(
        None,
        "where the replicas of "
        "--model_args data_parallel_size=D run, as Ray actors: without ADDRESS a Ray instance started on "
        "this machine for the run (also the default with D > 1, unless $RAY_ADDRESS is set); `auto` the "
        "cluster `ray start` runs here; or a cluster's address (needs: pip install -e '.[ray]'; see "
        "docs/scaling.md)",
        bare="local",
        metavar="ADDRESS",
        accepts="str | bool | None",
    )
    seed: Seeds | None = option(
        None,
        "seed for sampling and the random baseline "
        "(default 0); lm-eval's four, random,numpy,torch,fewshot (0,1234,1234,1234), are taken too",
        parse=read_seeds,
        accepts="int | Sequence[int | None] | str | None",
    )
    gen_kwargs: dict[str, Any] = arguments_option(
        "override generation settings of every task: max_gen_toks=64,temperature=0",
        "--gen_kwargs",
        typed=True,
    )
    metadata: dict[str, Any] = option(
        {},
        'JSON merged into every task\'s metadata, e.g. \'{"subset": "full"}\'',
        parse=_json_object,
        accepts="str | Mapping[str, object] | None",
        spell=lambda value: json.dumps(dict(value)),
    )
    output_path: Path | None = option(
        None,
        "write results, the resumable sample journal and the "
        "response cache under OUTPUT_PATH/<model>/ (without it nothing is saved)",
        short="-o",
        parse=Path,
        accepts="str | os.PathLike[str] | None",
    )
    cache_dir: Path | None = option(
        None,
        "keep the response cache in CACHE_DIR/cache.sqlite3, shared by "
        "every output path and model (default: $MMLONGEVAL_CACHE_DIR, else OUTPUT_PATH/<model>/)",
        parse=Path,
        accepts="str | os.PathLike[str] | None",
    )
    no_cache: bool = switch("do not read or write the response cache")
    log_samples: bool = switch(
        "also write samples_<task>_<date>.jsonl as lm-eval "
        "does: each sample's prompt (<image> markers), answer, target, metrics and image hashes"
    )
    allow_failures: bool = switch(
        "exit 0 even when some samples or judge calls "
        "failed with errors (timeouts, provider errors): they are left out of the denominators either "
        "way, and a rerun of the same command tries them again"
    )
    no_progress: bool = switch("no progress bar")
    judge_model: str | None = option(
        None,
        "backend or alias that judges the tasks with a `judge:` block after "
        "generation (a summarization task's Fluency-F1, by the judge its paper used), e.g. openai; without "
        "it those tasks report only their own metrics",
    )
    judge_args: dict[str, str] = arguments_option(
        "k=v model args of the judge (e.g. model=gpt-4o-2024-11-20,"
        "base_url=...; the task names its paper's judge as the default `model`)",
        "--judge_args",
    )
    reasoning_tags: tuple[tuple[str, str], ...] | None = option(
        None,
        "take a reasoning model's thinking out of each answer before it is scored: a JSON list of [start, end] tag "
        'pairs (\'[["<think>", "</think>"]]\'), `default` for lmms-eval\'s (<think>, <analysis>), or `none`; '
        "default: the alias's own (a thinking model's), else those of the thinking block the checkpoint's chat "
        "template opens, else none; the whole answer is kept in the journal and the sample log (docs/evaluating.md)",
        parse=_reasoning_tags,
        accepts="str | Sequence[Sequence[str]] | None",
        spell=lambda value: json.dumps([list(pair) for pair in value]) if value else "none",
    )
    screen_only: bool = switch(
        "build every request and screen it as the run "
        "would (over_length, too_many_images, invalid input) under the model's limits, without "
        "loading the model; print the counts per task and write nothing"
    )
    batch: bool = switch(
        "send an API model's (and judge's) requests through its provider's batch interface (OpenAI's Batch API, "
        "Anthropic's Message Batches, Gemini's batch mode: half the price, answers within 24 hours); the batch ids are "
        "journalled in the output folder, so the same command resumes a killed run's batches (docs/cost.md)"
    )
    max_cost: float | None = option(
        None,
        "a budget in US dollars: a run whose estimate (docs/cost.md) is over it, or whose answers nothing bounds, does "
        "not start, and a run whose answers' and judge calls' reported usage reaches it stops, every finished answer "
        "journalled (the same command resumes)",
        metavar="USD",
        parse=_dollars,
        accepts="int | float | str | None",
    )
    prices: Path | None = option(
        None,
        "a JSON price table whose entries replace the built-in one's by model name "
        "(harness/models/facts/prices.json's shape; docs/cost.md)",
        metavar="FILE",
        parse=Path,
        accepts="str | os.PathLike[str] | None",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.predict_only and self.output_path is None:
            raise UserError("--predict_only needs --output_path (the folder the answers are journalled in)")
        if self.batch and self.output_path is None:
            raise UserError("--batch needs --output_path (the folder its batch ids are journalled in)")
        if self.log_samples and self.output_path is None:
            raise UserError("--log_samples needs --output_path (the folder the sample logs go to)")
        if self.use_cache and self.cache_dir is not None and str(self.cache_dir) != self.use_cache:
            raise UserError(f"--use_cache {self.use_cache} and --cache_dir {self.cache_dir} name two caches: give one")

    @property
    def task_names(self) -> list[str]:
        return [name.strip() for name in self.tasks.split(",") if name.strip()]

    @property
    def auto_batch(self) -> bool:
        """--batch_size auto: searched from --max_batch_size down (`harness.models.shared.scheduling.auto_batch`)."""
        return self.batch_size == "auto"

    @property
    def seeds(self) -> Seeds:
        """lm-eval's four seeds (each the default 0 without --seed)."""
        return self.seed or (0, 0, 0, 0)

    @property
    def sampling_seed(self) -> int:
        """The seed of sampling and the random baseline: --seed's first."""
        return self.seeds[0]


@dataclass(frozen=True, kw_only=True)
class RunCommandFlags(CommandOptions):
    """The `harness` command line's flags beside a run's options."""

    config: Path | None = option(
        None,
        "a YAML file of this command's flags, each a key without its dashes (tasks: [...], model_args: {...}); "
        "a flag given here replaces the file's value (docs/evaluating.md, docs/run.yaml)",
        metavar="FILE",
        parse=Path,
    )
    version: bool = switch("show program's version number and exit", short="-V")


class RunParser(CommandParser):
    """`harness`'s parser: a decoding setting typed as a flag is named as its `--gen_kwargs` key (`gen_kwargs_flag`)."""

    spelt_here = staticmethod(gen_kwargs_flag)


def run_parser() -> argparse.ArgumentParser:
    parser = RunParser(
        prog="harness",
        description="Evaluate a vision-language model on tasks from tasks/ (lm-eval-style YAML).",
        epilog="Other commands: `harness ls` (tasks, groups, tags), `harness models` (backends, aliases), "
        "`harness report RESULTS_DIR` (markdown table and plots), `harness view RESULTS_DIR` (a local web page "
        "over runs, samples and their images), `harness merge OUT SHARD_DIR...` (combine --shard runs), "
        "`harness compare RESULTS [RESULTS_B]` (two runs paired on sample ids), `harness power` (the rows a "
        "difference needs). Example: harness --tasks TASK --model random --data_dir data --output_path results",
    )
    add_flags(parser, EvaluationOptions, GROUPS)
    add_flags(
        parser, RunCommandFlags, late={"version": {"action": "version", "version": f"harness (mmlongeval) {version()}"}}
    )
    for action in parser._actions:  # --tasks may come from --config: checked once it is read (`parse_arguments`)
        action.required = False
    return parser


def parse_arguments(argv: Sequence[str]) -> tuple[argparse.Namespace, RunFile | None]:
    """A `harness` command line (without the program's name) read, with the flags its `--config FILE` gives where
    the command line gives none, and that file as read (None without one); a file of several runs is refused."""
    from harness.run.run_file import apply_run_file, read_run_file

    args = run_parser().parse_args(list(argv))
    return args, apply_run_file(
        args, EvaluationOptions, read_run_file(args.config, EvaluationOptions) if args.config else None
    )


def parse_runs(argv: Sequence[str]) -> tuple[argparse.Namespace, list[RunFile]]:
    """A `harness` command line read, and the runs its `--config FILE` gives, every one checked (none without a
    file): each run's flags are `with_run(argv, run)`'s."""
    from harness.run.run_file import read_run_files

    args = run_parser().parse_args(list(argv))
    return args, read_run_files(args.config, EvaluationOptions) if args.config is not None else []


def with_run(argv: Sequence[str], run_file: RunFile | None) -> argparse.Namespace:
    """The command line `argv` read, with the flags `run_file` (one run of its `--config FILE`) gives where it gives
    none."""
    from harness.run.run_file import apply_run_file

    args = run_parser().parse_args(list(argv))
    apply_run_file(args, EvaluationOptions, run_file)
    return args


def parse_options(argv: Sequence[str]) -> EvaluationOptions:
    """The options a `harness` command line (without the program's name) gives, checked."""
    return EvaluationOptions.from_namespace(parse_arguments(argv)[0])
