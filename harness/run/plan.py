"""A run's plan: an evaluation's options (`harness.run.arguments.EvaluationOptions`, from the command line or
`simple_evaluate`'s keywords, each already read and checked) resolved once, into a typed `RunPlan` that
`harness.run.execute` runs.

`plan_run` resolves what the options name: the model and the judge (an alias's arguments, lm-eval's `--device`),
the tasks and their data, the output folder, the response cache, the upload targets. The order matters to users:
every argument and every task's data are checked before a model is loaded, so a typo costs seconds, not a model load.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import DatasetMissingError, UserError, suggest
from harness.run.arguments import TOKEN_BUDGET_BATCH_SIZE

if TYPE_CHECKING:
    from harness.config.benchmark import BenchmarkDeclaration
    from harness.config.task_index import Selection, TaskIndex
    from harness.models.facts.reasoning import AnswerTags, ReasoningTags
    from harness.outputs.results.publish import HubTarget
    from harness.outputs.results.results_file import RunFileRecord
    from harness.run.arguments import EvaluationOptions
    from harness.running.task.task import Task

    # how a run takes thinking out: the tags taken out, those whose content is scored, and whence, in words
    Thinking = tuple[ReasoningTags | None, AnswerTags | None, str]

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
    """Everything a run needs, checked before a model is loaded: its options, and what they resolve to."""

    options: EvaluationOptions  # as given (read and checked: `harness.run.arguments`)
    argv: tuple[str, ...]  # the command line, as given (`command` is what is recorded)
    secrets: list[str]  # every secret of the run: nothing it writes or prints holds one
    model: ModelChoice
    judge: ModelChoice | None  # --judge_model
    index: TaskIndex
    selection: Selection
    tasks: list[Task]  # in run order; each checked, its rows unloaded until it runs
    include_paths: tuple[Path, ...]  # --include_path, and the YAML files --tasks names
    output_dir: Path | None  # <output_path>/<model folder>; None: nothing is saved
    cache: Path | None  # the response cache's file (`cache_path`); None: no cache
    sample_logs: bool  # the sample logs are written: --log_samples, or implied by --predict_only
    hub: HubTarget | None  # where --hf_hub_log_args uploads the results
    # `--output_path FILE.json`, as lm-eval reads it: the results are also written as FILE's stem + date, beside it
    # (the run's own files go to FILE's folder / <model folder>, as for `--output_path FOLDER`)
    results_copy: Path | None = None
    # A reasoning model's thinking, taken out of each answer before it is scored: --reasoning_tags, else the alias's
    # own, else those of the thinking block the checkpoint's chat template opens (`harness.models.facts.reasoning.in_force`),
    # with the tags the alias wraps its answer in, and where they come from, in words
    thinking: Thinking = (None, None, "")
    checkpoint_thinking: ReasoningTags | None = None  # the markers its response_template declares (`declared_thinking`)
    checkpoint_template: str | None = None  # its chat template, as its files on this machine hold it
    run_file: RunFileRecord | None = None  # --config FILE, as read (the flags the command line left to it)

    def command(self) -> list[str]:
        """The command line as the lock file and the results record it: every secret redacted."""
        from harness.redact import redact_command

        return redact_command(["harness", *self.argv], self.secrets)

    @property
    def starting_batch_size(self) -> int:
        """The batch size a backend starts with: --batch_size, else 1 (with --max_batch_tokens, the request cap); with
        --batch_size auto each backend starts from its default, hf then searches."""
        chosen = None if self.options.auto_batch else self.options.batch_size
        assert not isinstance(chosen, str)  # "auto" is the only text --batch_size takes
        return chosen or (TOKEN_BUDGET_BATCH_SIZE if self.options.max_batch_tokens else 1)

    def thinking_with(self, template: str | None) -> Thinking:
        """How the run takes thinking out once the model says the chat template it renders with (a prompt style's
        bundled one, one given, the checkpoint's as loaded): decided again with that template; where it says none,
        as planned (with the checkpoint's template on this machine)."""
        if template is None:
            return self.thinking
        options = self.options
        return reasoning_in_force(options.reasoning_tags, self.model.alias, template, self.checkpoint_thinking, "its")


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


def resolve_model(
    name: str,
    given: dict[str, str],
    benchmarks: Sequence[BenchmarkDeclaration] = (),
    flag: str = "--model_args",
) -> ModelChoice:
    """The backend, arguments and alias of --model (or --judge_model, whose arguments are `flag`) and its parsed
    arguments (an alias's for the benchmarks the run's tasks declare); lm-eval's and lmms-eval's names and model
    arguments read as the backend here takes them, each said in one line (`harness.models.shared.foreign_args`); an
    unknown name is an error with suggestions."""
    from harness.models.aliases import ALIASES, resolve
    from harness.models.registry import available_models, backend_spec, other_names
    from harness.models.shared.foreign_args import Refused, translate

    # A backend's own name first: it reads no alias (no family module) and no other backend's declaration.
    foreign = None if name in available_models() or name in ALIASES else other_names().get(name)
    backend, args, alias = resolve(foreign[0] if foreign else name, given, benchmarks)
    if backend not in available_models():
        known_model(name, given)
        raise UserError(f"--model {name}: backend {backend!r} is not one of {', '.join(sorted(available_models()))}")
    try:
        args, lines = translate(backend_spec(backend).foreign_args, args)
    except Refused as err:
        raise UserError(str(err).replace("--model_args", flag, 1)) from None
    if foreign:
        print(f"harness: --model {name}: {foreign[1]}'s name, for the {backend} backend here", file=sys.stderr)
    for line in lines:
        print(f"harness: {line.replace('--model_args', flag, 1)}", file=sys.stderr)
    return ModelChoice(name, backend, args, alias, given)


def known_model(name: str, given: Mapping[str, str]) -> str:
    """The backend `--model name` (with `given` --model_args) runs on, known before the tasks are read (an alias's
    `backend=` is the same for every benchmark); a `UserError` with suggestions unless `name` is a backend, an alias,
    or lm-eval's or lmms-eval's name for one."""
    from harness.models.aliases import ALIASES
    from harness.models.registry import available_models, other_names

    if name in available_models():  # a backend by its own name: no family or other backend is read for it
        return name
    if name in ALIASES:
        return given.get("backend", ALIASES[name].backend)
    if name in other_names():
        return other_names()[name][0]
    known = set(available_models()) | set(ALIASES) | set(other_names())
    raise UserError(suggest(name, known, "model") + " (see `harness models`)")


def reasoning_in_force(
    given: ReasoningTags | None,
    alias: str | None,
    template: str | None = None,
    checkpoint: ReasoningTags | None = None,
    template_of: str = "the checkpoint's chat template",
) -> Thinking:
    """How the run takes a model's thinking out of its answers: `--reasoning_tags` where given, else the alias's,
    else the markers the `checkpoint` declares, else the thinking block its chat `template` opens; and where that
    comes from, in words. A template past its bound on thinking tags is a `UserError` naming it (`template_of`)."""
    from harness.models.aliases import ALIASES
    from harness.models.facts.reasoning import in_force, source

    declared = ALIASES.get(alias) if alias else None
    tags, answer = (declared.reasoning_tags, declared.answer_tags) if declared is not None else (None, None)
    try:
        return (*in_force(given, tags, answer, template, checkpoint), source(given, tags, template, checkpoint))
    except ValueError as err:  # past the bound on thinking tags
        raise UserError(f"{template_of}: {err}") from None


def _set_verbosity(level: str | None) -> None:
    """--verbosity: the log level of the libraries."""
    if level:
        import logging

        logging.basicConfig(level=level)
        for name in ("", *VERBOSITY_LOGGERS):  # each library sets its own logger's level: set theirs too
            logging.getLogger(name).setLevel(level)


def _split_gen_kwargs(gen_kwargs: Mapping[str, object], model: ModelChoice) -> tuple[dict[str, object], ModelChoice]:
    """--gen_kwargs checked on their own, before any task: the message names the flag, not a task. Returned: the
    generation settings', and the model with the keys beyond them that its backend's engine takes for its sampling
    (`BackendSpec.engine_sampling`: vLLM's SamplingParams fields) in the argument it takes them by (a JSON object),
    over those given there; for any other backend such a key is refused."""
    import json

    from harness.api import GenerationSettings
    from harness.models.registry import backend_spec
    from harness.run.lm_eval_flags import gen_kwargs_keys

    engine = backend_spec(model.backend).engine_sampling
    known = gen_kwargs_keys()
    own = {k: v for k, v in gen_kwargs.items() if engine is None or k in known}
    values = dict(own)
    if "max_new_tokens" in values:
        values["max_gen_toks"] = values.pop("max_new_tokens")
    sampling = {k: v for k, v in gen_kwargs.items() if k not in own}
    try:
        GenerationSettings.from_dict(values)
        if engine is not None and sampling:
            engine.check(sampling)
    except (TypeError, ValueError) as err:
        raise UserError(f"--gen_kwargs {err}") from None
    if engine is None or not sampling:
        return own, model
    try:
        given = json.loads(model.args.get(engine.arg) or "{}")
    except ValueError:
        given = None
    if not isinstance(given, dict):
        raise UserError(f"--model_args {engine.arg}: expected a JSON object of the engine's sampling arguments")
    return own, replace(model, args={**model.args, engine.arg: json.dumps({**given, **sampling})})


def _load_tasks(index: TaskIndex, names: list[str], args: EvaluationOptions) -> list[Task]:
    """Every task's data and settings, checked before a model is loaded; all missing data in one message."""
    from harness.running.progress import LOADING, bar
    from harness.running.task.rows import left_out_line
    from harness.running.task.task import Task

    tasks = [Task(index.tasks[name], args.metadata, args.system_instruction) for name in names]
    absent: list[DatasetMissingError] = []
    # One bar over the tasks (`datasets`, where a task's hook calls into it, prints nothing: `datasets_quiet`).
    with bar(len(tasks), LOADING, "task", not args.no_progress and len(tasks) > 1) as loading:
        for task in tasks:
            try:
                task.load(args.data_dir, args.limit, args.trust_unverified_data)
            except DatasetMissingError as err:
                absent.append(err)
            task.generation_settings(args.gen_kwargs, args.sampling_seed)
            task.unload()  # checked; its rows are read again when it runs
            loading.update()
    if absent:
        raise UserError(DatasetMissingError.combined(absent))
    for line in left_out_line([(task.name, task.left_out) for task in tasks if task.left_out]):
        print(line, file=sys.stderr)  # before the model loads: a long run on half the build is said up front
    return tasks


def cache_path(args: EvaluationOptions, output_dir: Path | None) -> Path | None:
    """Where the response cache lives: the SQLite file `--use_cache PATH` names itself, as lm-eval's
    `--use_cache x.db` reads (a file that exists, or a name with a suffix such as .db or .sqlite3); else in the folder
    --use_cache or --cache_dir names, else $MMLONGEVAL_CACHE_DIR, else beside the model's journals in the output
    folder; None with --no_cache or nowhere to keep it."""
    import os

    from harness.running.cache import CACHE_DIR_ENV, CACHE_FILENAME

    if args.no_cache:
        return None
    if args.use_cache:
        named = Path(args.use_cache)
        if named.is_file() or (not named.is_dir() and named.suffix != ""):
            return named
    cache_dir = Path(args.use_cache) if args.use_cache else args.cache_dir  # --use_cache: lm-eval's --cache_dir
    folder = cache_dir or (Path(os.environ[CACHE_DIR_ENV]).expanduser() if os.environ.get(CACHE_DIR_ENV) else None)
    if folder is not None:
        return Path(folder) / CACHE_FILENAME
    return output_dir / CACHE_FILENAME if output_dir is not None else None


def _check_run_flags(args: EvaluationOptions, model: str, log_samples: bool) -> tuple[HubTarget | None, str]:
    """The upload target `--hf_hub_log_args` names and the backend `model` runs on, once the flags that need another
    flag or a reachable cluster have it and `model` names a backend or an alias; a `UserError` naming the first that
    does not."""
    hub = None
    if args.hf_hub_log_args:
        from harness.outputs.results.publish import parse_hub_target

        hub = parse_hub_target(args.hf_hub_log_args)
    if hub is not None and args.output_path is None:
        raise UserError("--hf_hub_log_args pushes the results file: it needs --output_path")
    if args.ray is not None:
        from harness.models.backends.replicas.cluster import address_problem

        if ray_problem := address_problem(args.ray):
            raise UserError(f"--ray {args.ray}: {ray_problem}")
    backend = known_model(model, args.model_args)  # a name neither a backend nor an alias stops here
    if hub is not None and hub.push_samples and not log_samples:
        raise UserError(
            "--hf_hub_log_args push_samples_to_hub=True pushes the sample logs, which only --log_samples "
            "writes: add --log_samples (or drop push_samples_to_hub)"
        )
    return hub, backend


def _output_places(args: EvaluationOptions, model: ModelChoice) -> tuple[Path | None, Path | None, Path | None]:
    """Where the run writes: the results copy `--output_path x.json` names, the model's folder, and the cache."""
    from harness.outputs.results.results import model_folder_name

    results_copy = args.output_path if args.output_path and args.output_path.suffix == ".json" else None
    output_root = results_copy.parent if results_copy else args.output_path
    # A folder the run makes or writes in: the first part of it that exists is a folder, or the run would stop there
    existing = next((p for p in (output_root, *output_root.parents) if p.exists()), None) if output_root else None
    if existing is not None and not existing.is_dir():
        raise UserError(
            f"--output_path {args.output_path}: {existing} is a file, not a folder; give a folder (the run writes "
            "FOLDER/<model>/results_*.json) or a name ending in .json (lm-eval's results file, written beside)"
        )
    output_dir = output_root / model_folder_name(model.backend, model.args) if output_root else None
    return results_copy, output_dir, cache_path(args, output_dir)


def _checkpoint_declares(pretrained: str, revision: str | None) -> tuple[str | None, ReasoningTags | None]:
    """The chat template and thinking markers a checkpoint's files on this machine hold (read only for a model that
    names a checkpoint)."""
    from harness.models.facts.checkpoint import checkpoint_template, checkpoint_thinking

    return checkpoint_template(pretrained, revision), checkpoint_thinking(pretrained, revision)


def plan_run(args: EvaluationOptions, argv: Sequence[str], run_file: RunFileRecord | None = None) -> RunPlan:
    """The plan of the run `args` asks for (`argv`: the command line they were given as, or stand for, with the
    `--config` file it names, `run_file`); a `UserError` naming the first bad flag, task or dataset."""
    from harness.config.task_index import TaskIndex
    from harness.models.aliases import alias_benchmarks
    from harness.models.registry import backend_spec
    from harness.redact import collect_secrets, register
    from harness.run.lm_eval_flags import apply_compat_flags

    if args.model is None:
        raise UserError("--model is required")
    # Every secret of the run (model, judge and upload arguments, the environment) is known before anything is written.
    secrets = collect_secrets({"model": args.model_args, "judge": args.judge_args, "hub": args.hf_hub_log_args})
    register(secrets)  # from here on, nothing the run writes or prints holds them
    _set_verbosity(args.verbosity)
    log_samples = args.log_samples or args.predict_only  # as lm-eval: the answers are what a prediction-only run is for
    hub, backend = _check_run_flags(args, args.model, log_samples)
    judge = resolve_model(args.judge_model, args.judge_args, flag="--judge_args") if args.judge_model else None
    if args.max_batch_tokens and not backend_spec(backend).token_budget:
        print(
            f"harness: --max_batch_tokens is used by the hf backend only; {backend} batches its own way",
            file=sys.stderr,
        )

    names, include_paths = _resolve_task_names(args.task_names, list(args.include_path))
    index = TaskIndex(include_paths)
    selection = index.select(names)
    # An alias's arguments for the benchmarks its tasks declare (their paper's run of it), and lm-eval's flags.
    model = resolve_model(args.model, args.model_args, alias_benchmarks(args.model, selection.tasks, index))
    model = replace(model, args=apply_compat_flags(args, model.backend, model.args, args.seed))
    gen_kwargs, model = _split_gen_kwargs(args.gen_kwargs, model)
    if gen_kwargs != args.gen_kwargs:  # the engine's sampling arguments went to the backend; the tasks' are the rest
        args = replace(args, gen_kwargs=gen_kwargs)
    tasks = _load_tasks(index, selection.tasks, args)
    if not args.screen_only:  # the screen loads no model and scores nothing: it runs without the extras
        from harness.run.requirements import check_requirements, declared_extras, run_needs

        check_requirements(
            run_needs(
                model.backend,
                model.name,
                (judge.backend, judge.name) if judge else None,
                tasks,
                scoring=not args.predict_only,
            ),
            declared_extras(tasks),
        )
    # the checkpoint's own chat template and thinking markers as its files on this machine hold them (the model, once
    # loaded, says the template it renders with: `RunPlan.thinking_with`)
    pretrained, revision = model.args.get("pretrained"), model.args.get("revision")
    template, declared = _checkpoint_declares(pretrained, revision) if pretrained else (None, None)
    results_copy, output_dir, cache = _output_places(args, model)
    return RunPlan(
        options=args,
        argv=tuple(argv),
        secrets=secrets,
        model=model,
        judge=judge,
        index=index,
        selection=selection,
        tasks=tasks,
        include_paths=tuple(include_paths),
        output_dir=output_dir,
        cache=cache,
        sample_logs=log_samples,
        hub=hub,
        results_copy=results_copy,
        thinking=reasoning_in_force(
            args.reasoning_tags, model.alias, template, declared, f"checkpoint {pretrained}: its chat template"
        ),
        checkpoint_thinking=declared,
        checkpoint_template=template,
        run_file=run_file,
    )
