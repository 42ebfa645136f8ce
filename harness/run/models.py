"""A run's models opened from its plan: the backend (or its replicas on Ray) behind the response cache, the judge of
the tasks scored by one, and the alias's input policies for the run's tasks."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import UserError

if TYPE_CHECKING:
    from harness.api import Model
    from harness.inputs.input_policy import RunPolicies
    from harness.run.plan import RunPlan
    from harness.running.task.judge import Judges


def make_model(
    name: str,
    backend: str,
    args: dict[str, str],
    batch_size: int,
    max_batch_tokens: int | None,
    ray_address: str | None = None,
    judge: bool = False,
) -> Model:
    """The backend in this process, or `data_parallel_size` replicas of it on Ray (`harness.models.backends.replicas`); a
    failure is one line naming the flags that chose it (the judge's: `--judge_model`, `--judge_args`)."""
    from harness.models.backends.replicas import build_model

    try:
        return build_model(
            backend, args, batch_size=batch_size, max_batch_tokens=max_batch_tokens, ray_address=ray_address
        )
    except (ValueError, ImportError, OSError) as err:
        if judge:  # the judge's arguments are --judge_args, whatever the backend's own words say
            raise UserError(f"--judge_model {name}: {str(err).replace('--model_args', '--judge_args')}") from None
        raise UserError(f"model {name!r}: {err}{_switched_alias_note(name, backend)}") from None


def _switched_alias_note(name: str, backend: str) -> str:
    """Why an alias's own arguments reached a backend that does not take them (`backend=` switched it)."""
    from harness.models.aliases import ALIASES

    alias = ALIASES.get(name)
    if alias is None or alias.backend == backend:
        return ""
    given = ",".join(f"{k}={v}" for k, v in alias.args.items())
    return (
        f" (the alias {name} sets {given} for the {alias.backend} backend, and backend={backend} passes them to "
        f"{backend}; to run {backend}, give --model {backend} with its own --model_args)"
    )


def with_run_files(plan: RunPlan, backend: str, args: dict[str, str], who: str) -> dict[str, str]:
    """`args`, with what the run gives the backend of its own (`who`: the model or the judge): its engine's log in the
    output folder (`engine_log_arg`), its engine's progress bars off under `--no_progress` (`progress_arg`), each
    unless given, and `--batch`'s journal where the run asks for it (`batch_arg`)."""
    from harness.models.registry import backend_spec

    spec = backend_spec(backend)
    own = {}
    if spec.engine_log_arg is not None and plan.output_dir is not None:
        own[spec.engine_log_arg] = str(plan.output_dir / f"engine_{who}.log")
    if spec.progress_arg is not None and plan.options.no_progress:
        own[spec.progress_arg] = "false"
    args = {**own, **args}
    if not plan.options.batch:
        return args
    arg = spec.batch_arg
    if arg is None:  # a local model beside an API judge: the judge alone goes in batches
        print(
            f"harness: --batch: the {backend} backend ({who}) has no batch interface: its requests go as usual",
            file=sys.stderr,
        )
        return args
    assert plan.output_dir is not None  # --batch needs --output_path, checked with the options
    return {**args, arg: str(plan.output_dir / f"batches_{who}.jsonl")}


def open_model(plan: RunPlan) -> Model:
    """The backend (searching the batch size that fits, with --batch_size auto), behind the response cache when the
    run has one (`harness.run.plan.cache_path`)."""
    model = make_model(
        plan.model.name,
        plan.model.backend,
        with_run_files(plan, plan.model.backend, plan.model.args, "model"),
        plan.starting_batch_size,
        plan.options.max_batch_tokens,
        plan.options.ray,
    )
    if plan.options.auto_batch and (why := model.fit_batch_size(plan.options.max_batch_size)):
        print(f"harness: --batch_size auto: {why}", file=sys.stderr)
    return behind_cache(model, plan.cache)


def behind_cache(model: Model, path: Path | None) -> Model:
    from harness.running.cache import CachingModel, ResponseCache

    if path is not None and model.facts.cache_responses:
        try:
            model = CachingModel(model, ResponseCache(path))
        except BaseException as err:  # an unusable cache, or one that cannot be written: close what was opened
            model.close()
            if isinstance(err, ValueError):
                raise UserError(str(err)) from None
            raise
    return model


def run_policies(plan: RunPlan) -> RunPolicies:
    """The alias's input policies for this run's tasks (`harness.inputs.input_policy`; none for a plain backend): its
    own rules, then those of its paper run in each task's benchmark."""
    from harness.config.benchmark import declared_benchmark
    from harness.inputs.input_policy import RunPolicies
    from harness.models.aliases import alias_policy

    name = plan.model.alias
    if name is None:
        return RunPolicies()
    policies = {}
    for task in plan.tasks:
        benchmark = declared_benchmark(task.config.benchmark)
        if policy := alias_policy(name, task.name, benchmark, looked_up=True):
            policies[task.name] = policy
    return RunPolicies(policies)


def departures(plan: RunPlan) -> list[str]:
    """The lines telling a run of an alias which of its tasks the paper's run of the model left out (none for a plain
    backend)."""
    from harness.config.benchmark import declared_benchmark
    from harness.models.aliases import left_out

    name = plan.model.alias
    if name is None:
        return []
    return left_out(name, [(task.name, declared_benchmark(task.config.benchmark)) for task in plan.tasks])


def judge_args(plan: RunPlan, model: str | None) -> dict[str, str]:
    """The judge's arguments for tasks judged by `model` (their `judge.model`; None: the judge as given): the judge's
    (`--judge_model` and `--judge_args`), under the arguments of the alias of that name where it is one of the judge's
    backend (VLMEvalKit's `gpt-5.5-2026-04-24`: sent no temperature, its cap as max_completion_tokens), under those
    given on the command line."""
    from harness.models.aliases import ALIASES
    from harness.models.registry import backend_spec

    judge = plan.judge
    assert judge is not None
    served = backend_spec(judge.backend).served_model_arg
    if model is None or served is None:
        return dict(judge.args)
    declared = ALIASES.get(model)
    own = dict(declared.args) if declared is not None and declared.backend == judge.backend else {}
    return {**judge.args, **own, **judge.given, served: model}


def open_judge(plan: RunPlan) -> Judges | None:
    """The judges of `--judge_model` (each behind the response cache): one per judge model the selected tasks name
    (`judge.model`, their paper's judge) unless `--judge_args` names the model for all; None, with a note when a
    task would be judged, without `--judge_model`."""
    specs = [task.judge for task in plan.tasks if task.judge is not None]
    if not specs:
        if plan.options.judge_model or plan.options.judge_args:
            print("harness: --judge_model/--judge_args ignored: no selected task is scored by a judge", file=sys.stderr)
        return None
    if plan.judge is None:
        names = [task.name for task in plan.tasks if task.judge is not None]
        print(
            f"harness: {len(names)} task(s) ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''}) are scored "
            f"by a judge after generation: without --judge_model their judge metrics "
            f"({', '.join(specs[0].metrics)}) stay absent",
            file=sys.stderr,
        )
        return None
    from harness.models.registry import backend_spec
    from harness.running.task.judge import Judges

    judge = plan.judge
    served = backend_spec(judge.backend).served_model_arg
    named = served is None or served in judge.given  # the user's model judges every task

    def open_one(model: str | None) -> Model:
        args = with_run_files(plan, judge.backend, judge_args(plan, model), "judge")
        return behind_cache(make_model(judge.name, judge.backend, args, 1, None, judge=True), plan.cache)

    # each task's paper's judge, unless told otherwise
    model_of = {task.name: None if named else task.judge.model for task in plan.tasks if task.judge is not None}
    return Judges(open_one, model_of)
