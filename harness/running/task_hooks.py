"""A task's Python hooks bound once, from its YAML (`!function utils.x`): the functions its keys name (each a
`TaskHook`: one that raises or returns the wrong type is one line naming the task, the hook and the row), its judge,
and each metric's aggregation, every one checked before a document is read."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from harness.config.task_config import MetricSpec, TaskConfig
from harness.config.yaml_loader import FunctionRef
from harness.errors import TaskConfigError
from harness.running.judge import JudgeSpec
from harness.running.metrics import AGGREGATIONS, SAMPLE_METRICS
from harness.running.task_hook import TaskHook

# The task keys that may name a function.
HOOK_KEYS = (
    "process_docs",
    "doc_to_text",
    "doc_to_messages",
    "doc_to_visual",
    "doc_to_target",
    "random_answer",
    "process_results",
    "truncation",
    "text_round_trip",
    "fit_context",
)


@lru_cache(maxsize=256)
def _takes_metadata(func: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return "metadata" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def call_hook(func: Callable[..., Any], *args: Any, metadata: Mapping[str, object]) -> Any:
    """Call a task hook, passing the task's metadata when the hook accepts a `metadata` argument."""
    return func(*args, metadata=metadata) if _takes_metadata(func) else func(*args)


@dataclass(frozen=True)
class TaskHooks:
    """A task's bound hooks (by YAML key), its judge and its metrics' aggregations."""

    functions: dict[str, TaskHook]
    judge: JudgeSpec | None
    aggregations: dict[str, Callable[..., Any]]

    @property
    def judged(self) -> set[str]:
        """The metrics the judge adds after generation."""
        return set(self.judge.metrics) if self.judge else set()


def _aggregation(config: TaskConfig, spec: MetricSpec) -> Callable[..., Any]:
    if isinstance(spec.aggregation, FunctionRef):
        return spec.aggregation.resolve()
    if spec.aggregation not in AGGREGATIONS:
        raise TaskConfigError(
            f"{config.source}:1: task {config.task!r}: metric {spec.metric!r}: unknown aggregation "
            f"{spec.aggregation!r} (known: {', '.join(AGGREGATIONS)})"
        )
    return AGGREGATIONS[spec.aggregation]


def bind_hooks(config: TaskConfig) -> TaskHooks:
    """The task's hooks, its judge and aggregations, or a `TaskConfigError` naming its YAML."""
    name = config.task
    functions = {
        key: TaskHook(key, name, value) for key in HOOK_KEYS if isinstance(value := getattr(config, key), FunctionRef)
    }
    judge = JudgeSpec.from_config(config.judge, f"{config.source}:1: task {name!r}", name) if config.judge else None
    judged = set(judge.metrics) if judge else set()
    undeclared = judged - {m.metric for m in config.metric_list}
    if undeclared:
        raise TaskConfigError(
            f"{config.source}:1: task {name!r}: judge metrics {sorted(undeclared)} are not in `metric_list`"
        )
    aggregations: dict[str, Callable[..., Any]] = {}
    for spec in config.metric_list:
        aggregations[spec.metric] = _aggregation(config, spec)
        if "process_results" not in functions and spec.metric not in set(SAMPLE_METRICS) | judged:
            raise TaskConfigError(
                f"{config.source}:1: task {name!r}: metric {spec.metric!r} needs `process_results` "
                f"(built-in sample metrics: {', '.join(SAMPLE_METRICS)})"
            )
    if not config.metric_list:
        raise TaskConfigError(f"{config.source}:1: task {name!r} has an empty `metric_list`")
    return TaskHooks(functions, judge, aggregations)
