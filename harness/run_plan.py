"""A run's plan: `harness --tasks ... --model ...`'s arguments checked, parsed and resolved once, into a typed
`RunPlan` that `harness.execute` runs.

`plan_run` is the one reader of the command line's `argparse` namespace (`harness.run_arguments.run_parser`, which
`simple_evaluate` parses its keywords with too): each `k=v` string (`--model_args`, `--judge_args`, `--gen_kwargs`,
`--hf_hub_log_args`, `--wandb_args`) is parsed here once, and nothing after reads a flag. The order matters to users:
every argument and every task's data are checked before a model is loaded, so a typo costs seconds, not a model load.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import DatasetMissingError, UserError, suggest

if TYPE_CHECKING:
    from harness.config.task_index import Selection, TaskIndex
    from harness.lm_eval_flags import CompatFlags
    from harness.outputs.hub_upload import HubTarget
    from harness.running.sharding import Shard
    from harness.running.task import Task

TOKEN_BUDGET_BATCH_SIZE = 64  # the request cap per batch when only --max_batch_tokens is given
VERBOSITY_LOGGERS = ("transformers", "datasets", "huggingface_hub", "vllm", "httpx")  # what --verbosity sets


@dataclass(frozen=True)
class ModelChoice:
    """A model of the run: `--model` with `--model_args`, or `--judge_model` with `--judge_args`, resolved."""

    name: str  # as given: a backend or an alias
    backend: str
    args: dict[str, str]  # what the backend is built with: the alias's arguments, those given, the flags' (--device)
    alias: str | None
    given: dict[str, str]  # the arguments as given on the command line


@dataclass(frozen=True)
class RunPlan:
    """Everything a run needs, checked before a model is loaded."""

    argv: tuple[str, ...]  # the command line, as given (`command` is what is recorded)
    secrets: list[str]  # every secret of the run: nothing it writes or prints holds one
    model: ModelChoice
    judge: ModelChoice | None  # --judge_model
    judge_flags_given: bool  # --judge_model or --judge_args was given (a note when no task is judged)
    index: TaskIndex
    selection: Selection
    tasks: list[Task]  # in run order; each checked, its rows unloaded until it runs
    include_paths: tuple[Path, ...]
    metadata: dict[str, Any]  # --metadata
    gen_kwargs: dict[str, Any]  # --gen_kwargs, typed
    data_dir: str | None
    limit: float | None
    seed: int
    shard: Shard | None
    batch_size: int
    auto_batch: bool  # --batch_size auto: searched from `max_batch_size` down
    max_batch_size: int
    max_batch_tokens: int | None
    ray_address: str | None  # --ray
    system_instruction: str | None
    trust_unverified_data: bool
    output_dir: Path | None  # <output_path>/<model folder>; None: nothing is saved
    cache: Path | None  # the response cache's file (`cache_path`); None: no cache
    log_samples: bool
    predict_only: bool
    screen_only: bool
    write_out: bool
    progress: bool
    allow_failures: bool
    compat: CompatFlags  # lm-eval's everyday flags, as the results record them
    hub: HubTarget | None  # where --hf_hub_log_args uploads the results
    wandb: tuple[dict[str, Any], dict[str, Any]] | None  # --wandb_args, --wandb_config_args: (init, config)

    def command(self) -> list[str]:
        """The command line as the lock file and the results record it: every secret redacted."""
        from harness.redact import redact_command

        return redact_command(["harness", *self.argv], self.secrets)


def _json_arg(text: str, flag: str) -> dict[str, Any]:
    if not text:
        return {}
    from builders.core import contract

    try:
        value = contract.loads_json(text)
    except contract.TooManyDigits as err:
        raise UserError(f"{flag}: {err.where or 'the value'}: {err.problem}") from None
    except json.JSONDecodeError as err:  # the text is not quoted: it may hold a key
        raise UserError(f"{flag}: not valid JSON ({err})") from None
    except RecursionError:
        raise UserError(f"{flag}: not valid JSON (nested too deeply to read)") from None
    if not isinstance(value, dict):
        raise UserError(f"{flag}: expected a JSON object, got {type(value).__name__}")
    return value


def _resolve_task_names(names: list[str], include_paths: list[Path]) -> tuple[list[str], list[Path]]:
    """YAML paths given to --tasks are indexed like --include_path and replaced by their names."""
    from harness.config.yaml_loader import load_config

    resolved, extra = [], []
    for name in names:
        path = Path(name)
        if name.endswith((".yaml", ".yml")) and path.is_file():
            data = load_config(path)
            extra.append(path)
            resolved.append(str(data.get("group") or data.get("task")))
        else:
            resolved.append(name)
    return resolved, include_paths + extra


def resolve_model(name: str, given: dict[str, str], task_names: Sequence[str] = ()) -> ModelChoice:
    """The backend, arguments and alias of --model (or --judge_model) and its parsed arguments (an alias's for the
    benchmarks of `task_names`); an unknown name is an error with suggestions."""
    from harness.models.aliases import ALIASES, resolve
    from harness.models.registry import available_models

    backend, args, alias = resolve(name, given, task_names)
    if backend not in available_models():
        raise UserError(suggest(name, set(available_models()) | set(ALIASES), "model") + " (see `harness models`)")
    return ModelChoice(name, backend, args, alias, given)


def _check_run_args(args: argparse.Namespace) -> tuple[int, Shard | None, list[str]]:
    """(batch size, shard, task names) of a run, or a UserError naming the bad flag."""
    from harness.running.sharding import parse_shard

    _check_lm_eval_flags(args)
    auto = args.batch_size == "auto"  # searched from --max_batch_size down (`harness.models.scheduling.auto_batch`)
    if not auto and args.batch_size is not None and args.batch_size < 1:
        raise UserError("--batch_size must be at least 1")
    if args.max_batch_tokens is not None and args.max_batch_tokens < 1:
        raise UserError("--max_batch_tokens must be at least 1")
    try:
        shard = parse_shard(args.shard)
    except ValueError as err:
        raise UserError(str(err)) from None
    if args.log_samples and args.output_path is None:
        raise UserError("--log_samples needs --output_path (the folder the sample logs go to)")
    names = [n.strip() for n in args.tasks.split(",") if n.strip()]
    if not names:
        raise UserError("--tasks is empty")
    chosen = None if auto else args.batch_size  # auto: each backend starts from its default, hf then searches
    return chosen or (TOKEN_BUDGET_BATCH_SIZE if args.max_batch_tokens else 1), shard, names


def _check_lm_eval_flags(args: argparse.Namespace) -> None:
    """lm-eval's flags (`harness.run_arguments.add_lm_eval_flags`) checked, as lm-eval does (`--predict_only` implies
    `--log_samples`: `plan_run`)."""
    if args.predict_only and args.output_path is None:
        raise UserError("--predict_only needs --output_path (the folder the answers are journalled in)")
    if isinstance(args.apply_chat_template, str):
        raise UserError(
            f"--apply_chat_template {args.apply_chat_template}: every backend renders the model's own chat "
            "template; a named template is not supported (give the flag without a name)"
        )
    if args.verbosity:
        import logging

        logging.basicConfig(level=args.verbosity)
        for name in ("", *VERBOSITY_LOGGERS):  # each library sets its own logger's level: set theirs too
            logging.getLogger(name).setLevel(args.verbosity)


def _check_gen_kwargs(gen_kwargs: dict[str, Any]) -> None:
    """--gen_kwargs checked on their own, before any task: the message names the flag, not a task."""
    from harness.api import GenerationSettings

    values = dict(gen_kwargs)
    if "max_new_tokens" in values:
        values["max_gen_toks"] = values.pop("max_new_tokens")
    try:
        GenerationSettings.from_dict(values)
    except (TypeError, ValueError) as err:
        raise UserError(f"--gen_kwargs {err}") from None


def _load_tasks(
    index: TaskIndex, names: list[str], args: argparse.Namespace, metadata: dict[str, Any], gen_kwargs: dict[str, Any]
) -> list[Task]:
    """Every task's data and settings, checked before a model is loaded; all missing data in one message."""
    from harness.running.progress import LOADING, bar, datasets_quiet
    from harness.running.rows_left_out import left_out_line
    from harness.running.task import Task

    tasks = [Task(index.tasks[name], metadata, args.system_instruction) for name in names]
    absent: list[DatasetMissingError] = []
    # One bar over the tasks, in place of what `datasets` would print per split.
    with datasets_quiet(), bar(len(tasks), LOADING, "task", not args.no_progress and len(tasks) > 1) as loading:
        for task in tasks:
            try:
                task.load(args.data_dir, args.limit, args.trust_unverified_data)
            except DatasetMissingError as err:
                absent.append(err)
            task.generation_settings(gen_kwargs, args.seed)
            task.unload()  # checked; its rows are read again when it runs
            loading.update()
    if absent:
        raise UserError(DatasetMissingError.combined(absent))
    for line in left_out_line([(task.name, task.left_out) for task in tasks if task.left_out]):
        print(line, file=sys.stderr)  # before the model loads: a long run on half the build is said up front
    return tasks


def cache_path(no_cache: bool, cache_dir: Path | None, output_dir: Path | None) -> Path | None:
    """Where the response cache lives: --cache_dir (or --use_cache), else $MMLONGEVAL_CACHE_DIR, else beside the
    model's journals in the output folder; None with --no_cache or nowhere to keep it."""
    import os

    from harness.running.cache import CACHE_DIR_ENV, CACHE_FILENAME

    if no_cache:
        return None
    folder = cache_dir or (Path(os.environ[CACHE_DIR_ENV]).expanduser() if os.environ.get(CACHE_DIR_ENV) else None)
    if folder is not None:
        return Path(folder) / CACHE_FILENAME
    return output_dir / CACHE_FILENAME if output_dir is not None else None


def _typed_kv(text: str, flag: str) -> dict[str, Any]:
    from harness.models.args import parse_kv, typed

    return {k: typed(v) for k, v in parse_kv(text, flag).items()}


def plan_run(args: argparse.Namespace, argv: list[str]) -> RunPlan:
    """The plan of the run `args` (`harness.run_arguments.run_parser`) asks for; a `UserError` naming the first bad flag,
    task or dataset."""
    from harness.config.task_index import TaskIndex
    from harness.lm_eval_flags import CompatFlags, apply_compat_flags
    from harness.models.args import parse_kv
    from harness.models.replicas.cluster import address_problem
    from harness.outputs.hub_upload import parse_hub_target
    from harness.outputs.results import model_folder_name
    from harness.redact import collect_secrets, register

    # Every secret of the run (model, judge and upload arguments, the environment) is known before anything is written.
    model_given, judge_given = parse_kv(args.model_args), parse_kv(args.judge_args, "--judge_args")
    hub_given = parse_kv(args.hf_hub_log_args, "--hf_hub_log_args")
    secrets = collect_secrets({"model": model_given, "judge": judge_given, "hub": hub_given})
    register(secrets)  # from here on, nothing the run writes or prints holds them
    batch_size, shard, names = _check_run_args(args)
    log_samples = args.log_samples or args.predict_only  # as lm-eval: the answers are what a prediction-only run is for
    hub = parse_hub_target(hub_given)
    if hub is not None and args.output_path is None:
        raise UserError("--hf_hub_log_args pushes the results file: it needs --output_path")
    ray_problem = address_problem(args.ray) if getattr(args, "ray", None) is not None else None
    if ray_problem:
        raise UserError(f"--ray {args.ray}: {ray_problem}")
    model = resolve_model(args.model, model_given, names)
    model = ModelChoice(
        model.name, model.backend, apply_compat_flags(args, model.backend, model.args), model.alias, model.given
    )
    wandb = (
        (_typed_kv(args.wandb_args, "--wandb_args"), _typed_kv(args.wandb_config_args, "--wandb_config_args"))
        if args.wandb_args
        else None
    )
    if hub is not None and hub.push_samples and not log_samples:
        raise UserError(
            "--hf_hub_log_args push_samples_to_hub=True pushes the sample logs, which only --log_samples "
            "writes: add --log_samples (or drop push_samples_to_hub)"
        )
    judge = resolve_model(args.judge_model, judge_given) if args.judge_model else None
    from harness.models.registry import backend_spec

    if args.max_batch_tokens and not backend_spec(model.backend).token_budget:
        print(
            f"harness: --max_batch_tokens is used by the hf backend only; {model.backend} batches its own way",
            file=sys.stderr,
        )
    names, include_paths = _resolve_task_names(names, list(args.include_path))
    index = TaskIndex(include_paths)
    selection = index.select(names)
    metadata = _json_arg(args.metadata, "--metadata")
    gen_kwargs = _typed_kv(args.gen_kwargs, "--gen_kwargs")
    _check_gen_kwargs(gen_kwargs)
    tasks = _load_tasks(index, selection.tasks, args, metadata, gen_kwargs)
    if not args.screen_only:  # the screen loads no model and scores nothing: it runs without the extras
        from harness.requirements import check_requirements, run_needs

        check_requirements(
            run_needs(
                model.backend,
                model.name,
                (judge.backend, judge.name) if judge else None,
                tasks,
                scoring=not args.predict_only,
            )
        )
    output_dir = args.output_path / model_folder_name(model.backend, model.args) if args.output_path else None
    cache_dir = Path(args.use_cache) if args.use_cache else args.cache_dir  # --use_cache: lm-eval's --cache_dir
    return RunPlan(
        argv=tuple(argv),
        secrets=secrets,
        model=model,
        judge=judge,
        judge_flags_given=bool(args.judge_model or args.judge_args),
        index=index,
        selection=selection,
        tasks=tasks,
        include_paths=tuple(include_paths),
        metadata=metadata,
        gen_kwargs=gen_kwargs,
        data_dir=args.data_dir,
        limit=args.limit,
        seed=args.seed,
        shard=shard,
        batch_size=batch_size,
        auto_batch=args.batch_size == "auto",
        max_batch_size=args.max_batch_size,
        max_batch_tokens=args.max_batch_tokens,
        ray_address=getattr(args, "ray", None),
        system_instruction=args.system_instruction,
        trust_unverified_data=args.trust_unverified_data,
        output_dir=output_dir,
        cache=cache_path(args.no_cache, cache_dir, output_dir),
        log_samples=log_samples,
        predict_only=args.predict_only,
        screen_only=args.screen_only,
        write_out=args.write_out,
        progress=not args.no_progress,
        allow_failures=args.allow_failures,
        compat=CompatFlags.from_args(args),
        hub=hub,
        wandb=wandb,
    )
