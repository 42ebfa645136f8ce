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
    from harness.run_plan import RunPlan


def make_model(
    name: str,
    backend: str,
    args: dict[str, str],
    batch_size: int,
    max_batch_tokens: int | None,
    ray_address: str | None = None,
    judge: bool = False,
) -> Model:
    """The backend in this process, or `data_parallel_size` replicas of it on Ray (`harness.models.replicas`); a
    failure is one line naming the flags that chose it (the judge's: `--judge_model`, `--judge_args`)."""
    from harness.models.replicas import build_model

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


def open_model(plan: RunPlan) -> Model:
    """The backend (searching the batch size that fits, with --batch_size auto), behind the response cache when the
    run has one (`harness.run_plan.cache_path`)."""
    model = make_model(
        plan.model.name,
        plan.model.backend,
        plan.model.args,
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
    """The alias's input policies for this run's tasks (`harness.inputs.input_policy`; none for a plain backend)."""
    from harness.inputs.input_policy import RunPolicies
    from harness.models.aliases import ALIASES

    alias = ALIASES.get(plan.model.alias or "")
    if alias is None:
        return RunPolicies()
    return RunPolicies({task.name: policy for task in plan.tasks if (policy := alias.policy_for(task.name))})


def open_judge(plan: RunPlan) -> Model | None:
    """The judge backend of `--judge_model` (behind the response cache), or None; a note when a task would
    be judged but no judge was given."""
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

    args = plan.judge.args
    served = backend_spec(plan.judge.backend).served_model_arg
    if served is not None and served not in plan.judge.given and specs[0].model:
        args = {**args, served: specs[0].model}  # the paper's judge, unless told otherwise
    return behind_cache(make_model(plan.judge.name, plan.judge.backend, args, 1, None, judge=True), plan.cache)
