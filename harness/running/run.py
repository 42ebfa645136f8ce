"""`harness --tasks ... --model ...`: one evaluation run, from its parsed arguments to the results file.

The order matters to users: every argument and every task's data are checked before a model is loaded
(so a typo costs seconds, not a model load), the run then screens and generates task by task, and the
results are written once every task has finished.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import DatasetMissingError, UserError, suggest

TOKEN_BUDGET_BATCH_SIZE = 64  # the request cap per batch when only --max_batch_tokens is given
VERBOSITY_LOGGERS = ("transformers", "datasets", "huggingface_hub", "vllm", "httpx")  # what --verbosity sets


def _json_arg(text: str, flag: str) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
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


def resolve_model(name: str, model_args: str, flag: str = "--model_args") -> tuple[str, dict[str, str], str | None]:
    """(backend, arguments, alias) for --model/--model_args; an unknown name is an error with suggestions."""
    from harness.models.aliases import ALIASES, resolve
    from harness.models.args import parse_kv
    from harness.models.registry import available_models

    backend, args, alias = resolve(name, parse_kv(model_args, flag))
    if backend not in available_models():
        raise UserError(suggest(name, set(available_models()) | set(ALIASES), "model") + " (see `harness models`)")
    return backend, args, alias


def make_model(name: str, backend: str, args: dict[str, str], batch_size: int, max_batch_tokens: int | None,
               ray_address: str | None = None) -> Any:
    """The backend in this process, or `data_parallel_size` replicas of it on Ray (`harness.models.replicas`)."""
    from harness.models.replicas import build_model

    try:
        return build_model(backend, args, batch_size=batch_size, max_batch_tokens=max_batch_tokens,
                           ray_address=ray_address)
    except (ValueError, ImportError, OSError) as err:
        raise UserError(f"model {name!r}: {err}{_switched_alias_note(name, backend)}") from None


def _switched_alias_note(name: str, backend: str) -> str:
    """Why an alias's own arguments reached a backend that does not take them (`backend=` switched it)."""
    from harness.models.aliases import ALIASES

    alias = ALIASES.get(name)
    if alias is None or alias.backend == backend:
        return ""
    given = ",".join(f"{k}={v}" for k, v in alias.args.items())
    return (f" (the alias {name} sets {given} for the {alias.backend} backend, and backend={backend} passes them to "
            f"{backend}; to run {backend}, give --model {backend} with its own --model_args)")


def _stopped_message(err: BaseException, output_dir: Path | None) -> str:
    """One line for a backend that stopped the run; a longer report (a replica's traceback) goes to a
    file in the output folder."""
    from harness.file_writing import write_text

    text = str(err).strip() or type(err).__name__
    first, _, rest = text.partition("\n")
    message = f"the model backend stopped: {first}"
    if rest.strip() and output_dir is not None:
        details = write_text(output_dir / "backend_error.log", text)
        message += f" (details in {details})"
    if output_dir is not None:
        message += f"; finished samples are saved under {output_dir}, run the same command to resume"
    return message


def _cache_stats(model: Any) -> dict[str, Any]:
    from harness.running.cache import CachingModel

    if not isinstance(model, CachingModel):
        return {"cache": None}
    return {"cache": str(model.cache.path), "cache_hits": model.cache_hits, "model_calls": model.model_calls,
            "requests_sent": model.requests_sent}


def _check_run_args(args: argparse.Namespace) -> tuple[int, Any, list[str]]:
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
    """lm-eval's flags (`harness.cli.add_lm_eval_flags`) checked, and their implications applied, as lm-eval does."""
    if args.predict_only:
        if args.output_path is None:
            raise UserError("--predict_only needs --output_path (the folder the answers are journalled in)")
        args.log_samples = True  # as lm-eval: the answers are what a prediction-only run is for
    if isinstance(args.apply_chat_template, str):
        raise UserError(f"--apply_chat_template {args.apply_chat_template}: every backend renders the model's own chat "
                        "template; a named template is not supported (give the flag without a name)")
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


def _load_tasks(index: Any, names: list[str], args: argparse.Namespace, metadata: dict[str, Any],
                gen_kwargs: dict[str, Any]) -> list[Any]:
    """Every task's data and settings, checked before a model is loaded; all missing data in one message."""
    from harness.running.progress import LOADING, bar, datasets_quiet
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
    return tasks


def cache_path(args: argparse.Namespace, output_dir: Path | None) -> Path | None:
    """Where the response cache lives: --cache_dir, else $MMLONGEVAL_CACHE_DIR, else beside the model's
    journals in the output folder; None with --no_cache or nowhere to keep it."""
    from harness.running.cache import CACHE_DIR_ENV, CACHE_FILENAME

    if args.no_cache:
        return None
    folder = args.cache_dir or (Path(os.environ[CACHE_DIR_ENV]).expanduser() if os.environ.get(CACHE_DIR_ENV) else None)
    if folder is not None:
        return Path(folder) / CACHE_FILENAME
    return output_dir / CACHE_FILENAME if output_dir is not None else None


def _open_model(args: argparse.Namespace, backend: str, model_args: dict[str, str], batch_size: int,
                output_dir: Path | None) -> Any:
    """The backend (searching the batch size that fits, with --batch_size auto), behind the response cache when the
    run has one (`cache_path`)."""
    model = make_model(args.model, backend, model_args, batch_size, args.max_batch_tokens, getattr(args, "ray", None))
    if args.batch_size == "auto" and (why := model.fit_batch_size(args.max_batch_size)):
        print(f"harness: --batch_size auto: {why}", file=sys.stderr)
    return _behind_cache(model, args, output_dir)


def _behind_cache(model: Any, args: argparse.Namespace, output_dir: Path | None) -> Any:
    from harness.running.cache import CachingModel, ResponseCache

    path = cache_path(args, output_dir)
    if path is not None and model.cache_responses:
        try:
            model = CachingModel(model, ResponseCache(path))
        except BaseException as err:  # an unusable cache, or one that cannot be written: close what was opened
            model.close()
            if isinstance(err, ValueError):
                raise UserError(str(err)) from None
            raise
    return model


@dataclass
class RunPlan:
    """Everything a run needs, checked before a model is loaded."""

    args: argparse.Namespace
    argv: list[str]
    backend: str
    model_args: dict[str, str]
    alias: str | None
    batch_size: int
    shard: Any
    index: Any  # TaskIndex
    selection: Any  # Selection
    tasks: list[Any]
    metadata: dict[str, Any]
    gen_kwargs: dict[str, Any]
    include_paths: list[Path]
    output_dir: Path | None
    secrets: list[str] = field(default_factory=list)
    judge: tuple[str, dict[str, str]] | None = None  # the judge's (backend, arguments) of --judge_model
    hub: Any = None  # where --hf_hub_log_args uploads the results (`harness.outputs.hub_upload.HubTarget`)
    results: dict[str, Any] | None = None  # the results, once the run has written them

    def command(self) -> list[str]:
        """The command line as the lock file and the results record it: every secret redacted."""
        from harness.redact import redact_command

        return redact_command(["harness", *self.argv], self.secrets)


def plan_run(args: argparse.Namespace, argv: list[str]) -> RunPlan:
    from harness.config.task_index import TaskIndex
    from harness.models.args import parse_kv, typed
    from harness.outputs.hub_upload import parse_hub_target
    from harness.outputs.results import model_folder_name
    from harness.redact import collect_secrets, register

    # Every secret of the run (model, judge and upload arguments, the environment) is known before anything is written.
    judge_args = parse_kv(args.judge_args, "--judge_args")
    secrets = collect_secrets({"model": parse_kv(args.model_args), "judge": judge_args,
                               "hub": parse_kv(args.hf_hub_log_args, "--hf_hub_log_args")})
    register(secrets)  # from here on, nothing the run writes or prints holds them
    batch_size, shard, names = _check_run_args(args)
    hub = parse_hub_target(args.hf_hub_log_args)
    if hub is not None and args.output_path is None:
        raise UserError("--hf_hub_log_args pushes the results file: it needs --output_path")
    backend, model_args, alias = resolve_model(args.model, args.model_args)
    from harness.lm_eval_flags import apply_compat_flags

    model_args = apply_compat_flags(args, backend, model_args)
    if hub is not None and hub.push_samples and not args.log_samples:
        raise UserError("--hf_hub_log_args push_samples_to_hub=True pushes the sample logs, which only --log_samples "
                        "writes: add --log_samples (or drop push_samples_to_hub)")
    judge = None
    if args.judge_model:
        judge_backend, resolved_judge_args, _ = resolve_model(args.judge_model, args.judge_args, "--judge_args")
        judge = (judge_backend, resolved_judge_args)
    if args.max_batch_tokens and backend != "hf":
        print(f"harness: --max_batch_tokens is used by the hf backend only; {backend} batches its own way", file=sys.stderr)
    names, include_paths = _resolve_task_names(names, list(args.include_path))
    index = TaskIndex(include_paths)
    selection = index.select(names)
    metadata = _json_arg(args.metadata, "--metadata")
    gen_kwargs = {k: typed(v) for k, v in parse_kv(args.gen_kwargs, "--gen_kwargs").items()}
    _check_gen_kwargs(gen_kwargs)
    tasks = _load_tasks(index, selection.tasks, args, metadata, gen_kwargs)
    if not args.screen_only:  # the screen loads no model and scores nothing: it runs without the extras
        from harness.requirements import check_requirements, run_needs

        check_requirements(run_needs(backend, args.model, judge and (judge[0], args.judge_model), tasks,
                                     scoring=not args.predict_only))
    output_dir = args.output_path / model_folder_name(backend, model_args) if args.output_path else None
    return RunPlan(args, argv, backend, model_args, alias, batch_size, shard, index, selection, tasks, metadata,
                   gen_kwargs, include_paths, output_dir, secrets, judge, hub)


def run(args: argparse.Namespace, argv: list[str]) -> int:
    """Run the evaluation `harness` was asked for (`args` from `harness.cli.run_parser`); the exit code."""
    return run_with_results(args, argv)[0]


def run_with_results(args: argparse.Namespace, argv: list[str]) -> tuple[int, dict[str, Any] | None]:
    """`run`'s exit code and the results it wrote (None where it wrote none: `--screen_only`, a run that stopped);
    the Python API's entry (`harness.evaluator`)."""
    from harness.redact import scrubbed_output
    from harness.running.lock import OutputLock

    if args.no_progress:
        import datasets

        datasets.disable_progress_bars()
    with scrubbed_output():
        plan = plan_run(args, argv)
        if args.screen_only:
            return _screen_only(plan), None
        if plan.output_dir is None:
            print("harness: no --output_path: results are printed only, and an interrupted run cannot resume",
                  file=sys.stderr)
            return _execute(plan), plan.results
        # Held from before the model is loaded until the results are written; released (its file removed)
        # however the run ends, a failed start included.
        with OutputLock(plan.output_dir, plan.command(), plan.secrets):
            return _execute(plan), plan.results


def run_policies(plan: RunPlan) -> Any:
    """The alias's input policies for this run's tasks (`harness.inputs.input_policy`; none for a plain backend)."""
    from harness.inputs.input_policy import RunPolicies
    from harness.models.aliases import ALIASES

    alias = ALIASES.get(plan.alias or "")
    if alias is None:
        return RunPolicies()
    return RunPolicies({task.name: policy for task in plan.tasks if (policy := alias.policy_for(task.name))})


def _open_judge(plan: RunPlan, output_dir: Path | None) -> Any:
    """The judge backend of `--judge_model` (behind the response cache), or None; a note when a task would
    be judged but no judge was given."""
    from harness.models.args import parse_kv

    specs = [task.judge for task in plan.tasks if task.judge is not None]
    if not specs:
        if plan.args.judge_model or plan.args.judge_args:
            print("harness: --judge_model/--judge_args ignored: no selected task is scored by a judge", file=sys.stderr)
        return None
    if not plan.args.judge_model:
        names = [task.name for task in plan.tasks if task.judge is not None]
        print(f"harness: {len(names)} task(s) ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''}) are scored "
              f"by a judge after generation: without --judge_model their judge metrics "
              f"({', '.join(specs[0].metrics)}) stay absent", file=sys.stderr)
        return None
    assert plan.judge is not None
    backend, args = plan.judge
    if backend == "openai" and "model" not in parse_kv(plan.args.judge_args, "--judge_args") and specs[0].model:
        args = {**args, "model": specs[0].model}  # the paper's judge, unless told otherwise
    return _behind_cache(make_model(plan.args.judge_model, backend, args, 1, None), plan.args, output_dir)


def _screen_only(plan: RunPlan) -> int:
    """--screen_only: the screen's decisions for every request, the model never loaded, nothing written."""
    from harness.models.replicas.settings import split_pool_args
    from harness.running.screen_only import screen_model, screen_table, screen_tasks

    try:
        model = screen_model(plan.backend, split_pool_args(plan.backend, plan.model_args)[1])  # replicas count alike
    except (ValueError, ImportError) as err:
        raise UserError(str(err)) from None
    policies = run_policies(plan)
    results = screen_tasks(model, plan.tasks, plan.gen_kwargs, plan.args.seed, plan.shard,
                           policies if policies.by_task else None)
    print(screen_table(model, results))  # scrubbed as all output is (`run`)
    for task, described in policies.describe().items():
        print(f"input policy of {plan.alias} on {task}: {described}")
    return 0


def _execute(plan: RunPlan) -> int:
    from harness.api import BackendFatalError
    from harness.outputs.results import build_results, summary_table, write_results
    from harness.running.runner import Runner, RunOptions

    args, output_dir = plan.args, plan.output_dir
    model = _open_model(args, plan.backend, plan.model_args, plan.batch_size, output_dir)
    try:
        judge = None if args.predict_only else _open_judge(plan, output_dir)
    except BaseException:
        model.close()
        raise
    policies = run_policies(plan)
    if args.write_out:
        from harness.running.write_out import write_out

        write_out(plan.tasks, plan.gen_kwargs, args.seed)
    options = RunOptions(data_dir=args.data_dir, limit=args.limit, seed=args.seed, gen_kwargs=plan.gen_kwargs,
                         output_dir=output_dir, log_samples=args.log_samples, progress=not args.no_progress,
                         shard=plan.shard, judge=judge, policies=policies if policies.by_task else None,
                         score=not args.predict_only, log_samples_suffix=args.log_samples_suffix)
    started = time.time()
    try:
        task_results = Runner(model, options).run(plan.tasks)
    except KeyboardInterrupt:
        where = f"; finished samples are saved under {output_dir}, run the same command to resume" if output_dir else ""
        print(f"harness: interrupted{where}", file=sys.stderr)
        return 130
    except BackendFatalError as err:
        print(f"harness: error: {_stopped_message(err, output_dir)}", file=sys.stderr)
        return 1
    finally:
        finished = time.time()  # the evaluation's end: shutting the model (and judge) down is not evaluation
        identity, stats, backend_stats = model.identity(), _cache_stats(model), model.statistics()
        extra = {"token_counting": model.token_rule, **_chat_template(model.chat_template),
                 "input_policies": policies.describe()}
        model.close()
        if judge is not None:
            from harness.redact import redact_mapping

            extra["judge"] = {"model": redact_mapping(judge.identity()), **_cache_stats(judge),
                              "max_reply_chars": {task.name: task.judge.max_reply_chars for task in plan.tasks
                                                  if task.judge is not None}}
            judge.close()
    run_config = _run_config(plan, identity, {**stats, "backend_stats": backend_stats, **extra})
    results = build_results(task_results, plan.selection.groups, plan.index.groups, run_config, started, finished)
    if args.predict_only:  # nothing scored: no group has a score either
        results.update(predict_only=PREDICT_ONLY_NOTE, group_aggregation={},
                       groups={name: {"alias": entry["alias"]} for name, entry in results["groups"].items()})
    print(summary_table(results))
    _report_run(task_results, stats, plan.shard)
    plan.results = results
    if output_dir is not None:
        path = write_results(results, output_dir, options.date_id)
        print(f"harness: results written to {path}", file=sys.stderr)
        if args.predict_only:
            print(f"harness: --predict_only: {PREDICT_ONLY_NOTE}", file=sys.stderr)
        if plan.hub is not None:
            _upload(plan, path, options.date_id)
    if args.wandb_args:
        _log_to_wandb(args, results)
    return _exit_code(task_results, args.allow_failures, output_dir)


PREDICT_ONLY_NOTE = ("the answers are generated and journalled, not scored (no metrics); the same command without "
                     "--predict_only scores them without generating again")


def _log_to_wandb(args: argparse.Namespace, results: dict[str, Any]) -> None:
    """--wandb_args: the results to Weights & Biases (`harness.outputs.wandb_log`), after they are saved."""
    from harness.models.args import parse_kv, typed
    from harness.outputs.wandb_log import log_results

    init = {k: typed(v) for k, v in parse_kv(args.wandb_args, "--wandb_args").items()}
    config = {k: typed(v) for k, v in parse_kv(args.wandb_config_args, "--wandb_config_args").items()}
    print(f"harness: results logged to Weights & Biases: {log_results(results, init, config)}", file=sys.stderr)


def _upload(plan: RunPlan, results_file: Path, date_id: str) -> None:
    """--hf_hub_log_args: the results file, and with push_samples_to_hub the run's sample logs, to the Hub."""
    from harness.outputs.hub_upload import upload_results

    assert plan.output_dir is not None
    files = [results_file]
    if plan.hub.push_samples:
        files += sorted(plan.output_dir.glob(f"samples_*_{date_id}.jsonl"))
    print(f"harness: results uploaded to {upload_results(plan.hub, plan.output_dir, files)}", file=sys.stderr)


def _exit_code(task_results: list[Any], allow_failures: bool, output_dir: Path | None = None) -> int:
    """1 when nothing could be scored or the judge answered nothing, or (unless allowed) when samples or judge
    calls failed with errors; else 0."""
    samples = sum(r.n_effective for r in task_results)
    if samples and not sum(r.n_scored for r in task_results):
        statuses: dict[str, int] = {}
        for r in task_results:
            for status, n in r.counts.items():
                statuses[status] = statuses.get(status, 0) + n
        shown = ", ".join(f"{n} {status}" for status, n in statuses.items() if n)
        where = (f"see the error fields of the journals in {output_dir}" if output_dir is not None else
                 "run again with --output_path to keep each sample's error in its journal")
        print(f"harness: error: no sample of this run was scored ({shown}); {where}", file=sys.stderr)
        return 1
    judge_failed = sum(r.judge_counts.get("n_judge_error", 0) for r in task_results)
    judge_answered = sum(r.judge_counts.get("n_judged", 0) + r.judge_counts.get("n_judge_unparsed", 0)
                         for r in task_results)
    if judge_failed and not judge_answered:
        print(f"harness: error: every judge call of this run failed ({judge_failed} sample(s)), so no judge metric "
              "was scored; see the error fields of judge_<task>.jsonl, then run the same command again",
              file=sys.stderr)
        return 1
    failed = sum(r.counts.get("error", 0) for r in task_results)
    if (failed or judge_failed) and not allow_failures:
        what = [f"{failed} sample(s) failed with errors and are left out of the scores above"] if failed else []
        if judge_failed:
            what.append(f"the judge failed on {judge_failed} sample(s), left out of the judge metrics above")
        print(f"harness: error: {'; '.join(what)}; run the same command again to retry them, or pass "
              "--allow_failures to accept the run as it is", file=sys.stderr)
        return 1
    return 0


def _chat_template(template: str | None) -> dict[str, str | None]:
    """The chat template as lm-eval records it (`chat_template`, `chat_template_sha`)."""
    import hashlib

    sha = hashlib.sha256(template.encode("utf-8")).hexdigest() if template else None
    return {"chat_template": template, "chat_template_sha": sha}


def _data_dir_label(data_dir: str | None) -> str | None:
    """--data_dir as the results record it: a local folder made absolute, a Hub location as given."""
    from harness.inputs.hub import HUB_PREFIX

    if data_dir is None or str(data_dir).startswith(HUB_PREFIX):
        return data_dir
    return str(Path(data_dir).expanduser().resolve())


def _run_config(plan: RunPlan, identity: dict[str, Any], stats: dict[str, Any]) -> dict[str, Any]:
    """The results' `config`: what was run, and how, with every secret redacted."""
    from harness.outputs.results import sanitize_model_name
    from harness.redact import redact_mapping

    args, model_args = plan.args, plan.model_args
    return {
        "model": plan.backend, "alias": plan.alias, "alias_info": _alias_info(plan.alias),
        "model_name": plan.alias or model_args.get("pretrained") or model_args.get("model") or plan.backend,
        # lm-eval's: the checkpoint (or served model) itself, and its name as a folder.
        "model_name_sanitized": sanitize_model_name(model_args.get("pretrained") or model_args.get("model")
                                                    or plan.backend),
        "model_args": redact_mapping(model_args), "model_identity": redact_mapping(identity),
        "batch_size": plan.batch_size, "max_batch_tokens": args.max_batch_tokens, "limit": args.limit,
        "seed": args.seed, "shard": str(plan.shard) if plan.shard else None, "gen_kwargs": plan.gen_kwargs,
        "metadata": plan.metadata, "data_dir": _data_dir_label(args.data_dir),
        "trust_unverified_data": args.trust_unverified_data,
        "include_path": [str(p.resolve()) for p in plan.include_paths], "log_samples": args.log_samples,
        **_lm_eval_settings(args, stats.get("backend_stats") or {}), **stats, "argv": plan.command(),
    }


def _lm_eval_settings(args: argparse.Namespace, backend_stats: dict[str, Any]) -> dict[str, Any]:
    """What lm-eval's flags did: `batch_size: auto` with the size that fit (`batch_sizes`, as lm-eval records it),
    `predict_only`, the system instruction."""
    searched = backend_stats.get("auto_batch") if args.batch_size == "auto" else None
    from harness.lm_eval_flags import recorded

    settings: dict[str, Any] = {"predict_only": args.predict_only, "system_instruction": args.system_instruction,
                                **recorded(args)}
    if args.batch_size == "auto":
        settings.update(batch_size="auto", max_batch_size=args.max_batch_size,
                        batch_sizes=[searched["chosen"]] if searched else [])
    return settings


def _alias_info(alias: str | None) -> dict[str, Any] | None:
    """What the alias table says of the model beyond its arguments (its training window, its paper name)."""
    from harness.models.aliases import ALIASES

    return ALIASES[alias].describe() if alias in ALIASES else None


def _report_run(task_results: list[Any], stats: dict[str, Any], shard: Any) -> None:
    """What the table does not say: resumed samples, refusals and failures, tokens, cache use."""
    for r in task_results:
        if r.changed:
            print(f"harness: {r.task.name}: {r.changed} journalled samples were answered for other inputs (their "
                  "prompts or images changed since); they were generated again", file=sys.stderr)
        refused, failed = r.counts.get("refused", 0), r.counts.get("error", 0)
        if refused or failed:
            print(f"harness: {r.task.name}: {refused} refused by the provider, {failed} failed (both excluded from "
                  "the denominators; failed samples are tried again by a rerun)", file=sys.stderr)
        if r.usage:
            tokens = ", ".join(f"{k} {v}" for k, v in r.usage.items() if "." not in k)
            print(f"harness: {r.task.name}: token usage: {tokens}", file=sys.stderr)
    resumed = [r for r in task_results if r.resumed]
    if resumed:  # one line for the run, however many tasks it resumed
        which = f"{resumed[0].task.name}: " if len(task_results) == 1 else ""
        tasks = f" ({len(resumed)} of {len(task_results)} tasks)" if len(task_results) > 1 else ""
        print(f"harness: {which}{sum(r.resumed for r in resumed)} samples resumed from the journal, "
              f"{sum(r.generated for r in task_results)} generated now{tasks}", file=sys.stderr)
    if stats.get("cache"):
        print(f"harness: response cache {stats['cache']}: {stats['cache_hits']} hits, {stats['requests_sent']} "
              f"requests sent to the model", file=sys.stderr)
    if shard is not None:
        print(f"harness: shard {shard}: these results cover only this shard's documents; combine every shard "
              "with `harness merge OUT SHARD_DIR...`", file=sys.stderr)
