"""Typed task and group configs, read from YAML in lm-eval's schema (`lm_eval/config/task.py`).

Only what this harness implements is accepted; an unknown key is an error naming the file and line
(with the closest known key), because a misspelt key that is silently ignored changes results.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.config.cluster_key import ClusterKey, parse_cluster_key
from harness.config.group_rules import GROUP_AGGREGATIONS
from harness.config.yaml_loader import FunctionRef, YamlDict
from harness.errors import TaskConfigError, suggest

# lm-eval keys with no meaning here (few-shot, log-likelihood, filters): named so the error says why.
_UNSUPPORTED = {
    "training_split",
    "validation_split",
    "fewshot_split",
    "fewshot_config",
    "description",
    "target_delimiter",
    "fewshot_delimiter",
    "doc_to_choice",
    "use_prompt",
    "repeats",
    "filter_list",
    "should_decontaminate",
    "doc_to_decontamination_query",
    "custom_dataset",
    "doc_to_audio",
    "unsafe_code",
    "class",
}
_ALIASES = {"doc_to_image": "doc_to_visual", "gen_prefix": "assistant_prefix"}


REFUSAL_POLICIES = ("exclude", "empty")
_TEXT_OR_HOOK = (str, FunctionRef, type(None))
# The type of each task key that is not checked elsewhere (hooks, mappings and `metric_list` are), and its words.
_FIELD_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "dataset_path": ((str,), "a string"),
    "dataset_name": ((str, type(None)), "a string"),
    "test_split": ((str,), "a string"),
    "task_alias": ((str, type(None)), "a string"),
    "output_type": ((str,), "a string"),
    "num_fewshot": ((int,), "an integer"),
    "doc_to_text": (_TEXT_OR_HOOK, "a column name, a template or `!function module.fn`"),
    "doc_to_target": (_TEXT_OR_HOOK, "a column name, a template or `!function module.fn`"),
    "doc_to_visual": ((str, list, FunctionRef, type(None)), "a column name, a list of them or `!function module.fn`"),
    "system_prompt": ((str, type(None)), "a string"),
    "assistant_prefix": ((str, type(None)), "a string"),
    "refusals": ((str,), "a string"),
    "judge": ((dict, type(None)), "a mapping"),
    "tag": ((str, list, type(None)), "a name or a list of names"),
}


@dataclass
class MetricSpec:
    metric: str
    aggregation: str | FunctionRef = "mean"
    higher_is_better: bool = True
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def reference(self) -> bool:
        """`reference: true`: a level to compare scores with (a task's chance), not a score itself; the results
        keep it under `references`, where lm-eval's tools do not take it for a metric."""
        return bool(self.kwargs.get("reference"))

    @property
    def some_rows(self) -> bool:
        """`some_rows: true`: a metric `process_results` gives only some rows (MMLongBench's `score_nonempty`, none
        for an empty answer); its aggregate is over the rows that have it, the others left out, not scored 0."""
        return bool(self.kwargs.get("some_rows"))


@dataclass
class TaskConfig:
    task: str
    dataset_path: str
    source: Path
    dataset_name: str | None = None
    dataset_kwargs: dict[str, Any] = field(default_factory=dict)
    test_split: str = "test"
    task_alias: str | None = None
    tag: list[str] = field(default_factory=list)
    output_type: str = "generate_until"
    num_fewshot: int = 0
    process_docs: FunctionRef | None = None
    doc_to_text: str | FunctionRef | None = None
    doc_to_messages: FunctionRef | None = None
    doc_to_visual: str | list[str] | FunctionRef | None = None
    doc_to_target: str | FunctionRef | None = None
    system_prompt: str | None = None
    assistant_prefix: str | None = None
    random_answer: FunctionRef | None = None  # hook (doc, rng) -> a guess, for the random baseline
    # A provider's refusal: `exclude`d from the denominators and counted (most papers), or scored as the empty
    # answer it is (`empty`: LoCoVQA counts refusals as failures and empty strings as non-responses).
    refusals: str = "exclude"
    process_results: FunctionRef | None = None
    metric_list: list[MetricSpec] = field(default_factory=list)
    generation_kwargs: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    # The benchmark's declaration (`harness.config.benchmark.BenchmarkDeclaration`: its report, viewer hooks, paper models,
    # extras): not part of the task's identity, since none of it changes what the model is asked or how it is scored.
    benchmark: FunctionRef | None = None
    # Judging after generation by a second model (`harness.running.task.judge`): not part of the task's identity either,
    # since it never changes what the model is asked.
    judge: dict[str, Any] = field(default_factory=dict)
    # What to do with a request that does not fit the model (`harness.inputs.truncation`); None: record it over-length.
    truncation: FunctionRef | None = None
    # Prompt text re-decoded by the model's tokenizer, as the paper's code did (`harness.inputs.round_trip`).
    text_round_trip: FunctionRef | None = None
    # Where the row's context stands in its prompt and the length the input is fitted to, for a model that cuts the
    # context at its end to fit (`harness.fit_context`); None: no model cuts it.
    fit_context: FunctionRef | None = None
    # Which rows share an item (`harness.config.cluster_key`): the clustered standard errors count it once. Not part
    # of the task's identity: it changes how errors are computed, never what a sample scores.
    cluster_key: ClusterKey | None = None

    @property
    def version(self) -> Any:
        return self.metadata.get("version", 0)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready config for the results file (`configs`), functions written as `!function x`."""

        def plain(value: object) -> Any:
            if isinstance(value, FunctionRef):
                return str(value)
            if isinstance(value, ClusterKey):
                return value.to_yaml()
            if isinstance(value, MetricSpec):
                out = {
                    "metric": value.metric,
                    "aggregation": plain(value.aggregation),
                    "higher_is_better": value.higher_is_better,
                }
                out.update(value.kwargs)
                return out
            if isinstance(value, dict):
                return {str(k): plain(v) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return [plain(v) for v in value]
            if isinstance(value, Path):
                return str(value)
            return value

        return {name: plain(getattr(self, name)) for name in self.__dataclass_fields__}

    def function_refs(self) -> list[FunctionRef]:
        refs = [v for v in vars(self).values() if isinstance(v, FunctionRef)]
        refs += [v for v in self.judge.values() if isinstance(v, FunctionRef)]
        refs += [m.aggregation for m in self.metric_list if isinstance(m.aggregation, FunctionRef)]
        return refs


@dataclass
class GroupConfig:
    group: str
    task: list[str]
    source: Path
    group_alias: str | None = None
    aggregate_metric_list: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    benchmark: FunctionRef | None = (
        None  # the benchmark's declaration (`harness.config.benchmark.BenchmarkDeclaration`)
    )


def _expect(data: YamlDict, key: str, kind: type | tuple[type, ...], what: str) -> Any:
    value = data[key]
    if not isinstance(value, kind):
        raise TaskConfigError(f"{data.where(key)}: `{key}` must be {what}, got {type(value).__name__}: {value!r}")
    return value


def parse_task(data: YamlDict) -> TaskConfig:
    data = YamlDict(data) if not isinstance(data, YamlDict) else data
    known = set(TaskConfig.__dataclass_fields__) - {"source"}
    values: dict[str, Any] = {}
    for key in data:
        name = _ALIASES.get(key, key)
        if key in _UNSUPPORTED:
            raise TaskConfigError(f"{data.where(key)}: `{key}` (lm-eval) is not supported by this harness")
        if name not in known:
            raise TaskConfigError(f"{data.where(key)}: {suggest(str(key), known | set(_ALIASES), 'task key')}")
        if name in values:
            raise TaskConfigError(f"{data.where(key)}: `{key}` and its alias are both set")
        values[name] = data[key]
    for required in ("task", "dataset_path"):
        if required not in values:
            raise TaskConfigError(f"{data.where()}: task file has no `{required}`")
    _expect(data, "task", str, "a string")
    for name, (kinds, what) in _FIELD_TYPES.items():
        key = next((k for k in data if _ALIASES.get(k, k) == name), None)
        if key is not None and not isinstance(data[key], kinds):
            raise TaskConfigError(
                f"{data.where(key)}: `{key}` must be {what}, got {type(data[key]).__name__}: {str(data[key])[:60]}"
            )
    visual = values.get("doc_to_visual")
    if isinstance(visual, list) and not all(isinstance(v, str) for v in visual):
        raise TaskConfigError(f"{data.where('doc_to_visual')}: `doc_to_visual` must list column names (strings)")
    _check_prompt(data, values)
    if values.get("refusals", "exclude") not in REFUSAL_POLICIES:
        raise TaskConfigError(
            f"{data.where('refusals')}: `refusals` must be one of {', '.join(REFUSAL_POLICIES)}, "
            f"got {values['refusals']!r}"
        )
    tag = values.get("tag", [])
    values["tag"] = [tag] if isinstance(tag, str) else list(tag or [])
    if not all(isinstance(t, str) for t in values["tag"]):
        raise TaskConfigError(f"{data.where('tag')}: `tag` must be a name or a list of names")
    for key in ("metadata", "generation_kwargs", "dataset_kwargs"):
        if key in data and data[key] is not None:
            _expect(data, key, dict, "a mapping")
        values[key] = dict(values.get(key) or {})
    values["metric_list"] = _metric_list(data, values.get("metric_list") or [])
    if "cluster_key" in values:
        values["cluster_key"] = parse_cluster_key(values["cluster_key"], data.where("cluster_key"))
    return TaskConfig(source=Path(str(data.source)), **values)


def _metric_list(data: YamlDict, raw_metrics: object) -> list[MetricSpec]:
    """`metric_list`'s entries, each a metric's name, its aggregation and whether higher is better."""
    metrics = []
    if not isinstance(raw_metrics, list):
        raise TaskConfigError(f"{data.where('metric_list')}: `metric_list` must be a list of mappings")
    for entry in raw_metrics:
        if not isinstance(entry, dict) or "metric" not in entry:
            raise TaskConfigError(f"{data.where('metric_list')}: each `metric_list` entry needs `metric:` ({entry!r})")
        extra = {k: v for k, v in entry.items() if k not in ("metric", "aggregation", "higher_is_better")}
        if not isinstance(entry["metric"], str) or not isinstance(entry.get("aggregation", "mean"), str | FunctionRef):
            raise TaskConfigError(
                f"{data.where('metric_list')}: a `metric_list` entry's `metric` must be a name and its "
                f"`aggregation` a name or `!function module.fn` ({str(entry)[:80]})"
            )
        metrics.append(
            MetricSpec(
                str(entry["metric"]), entry.get("aggregation", "mean"), bool(entry.get("higher_is_better", True)), extra
            )
        )
    return metrics


def _check_prompt(data: YamlDict, values: Mapping[str, object]) -> None:
    """What a task's prompt may be: generated, zero-shot, from `doc_to_text` or `doc_to_messages`, its hooks functions."""
    if values.get("output_type", "generate_until") != "generate_until":
        raise TaskConfigError(
            f"{data.where('output_type')}: only `output_type: generate_until` is supported (got {values['output_type']!r})"
        )
    if values.get("num_fewshot", 0):
        raise TaskConfigError(f"{data.where('num_fewshot')}: few-shot prompting is not supported")
    if "doc_to_text" not in values and "doc_to_messages" not in values:
        raise TaskConfigError(f"{data.where()}: task {values['task']!r} needs `doc_to_text` or `doc_to_messages`")
    for rewrite in ("truncation", "text_round_trip", "fit_context"):
        if values.get(rewrite) is not None and "doc_to_messages" in values:
            raise TaskConfigError(
                f"{data.where(rewrite)}: `{rewrite}` rewrites the `doc_to_text` prompt; a task "
                "with `doc_to_messages` cannot have it"
            )
    for hook in (
        "random_answer",
        "benchmark",
        "process_results",
        "process_docs",
        "doc_to_messages",
        "truncation",
        "text_round_trip",
        "fit_context",
    ):
        if values.get(hook) is not None:
            _function_or_none(data, hook)


def _function_or_none(data: YamlDict, key: str) -> FunctionRef | None:
    value = data.get(key)
    if value is not None and not isinstance(value, FunctionRef):
        raise TaskConfigError(f"{data.where(key)}: `{key}` must be `!function module.fn`, got {value!r}")
    return value


AGGREGATE_KEYS = ("metric", "aggregation", "weight_by_size", "members", "filter_list", "as")


def _check_aggregate(entry: object, members: list[str], where: str) -> None:
    """One `aggregate_metric_list` entry: a metric, a known aggregation or `!function`, named members."""
    if not isinstance(entry, dict) or "metric" not in entry:
        raise TaskConfigError(f"{where}: each `aggregate_metric_list` entry needs `metric:`")
    for key in entry:
        if key not in AGGREGATE_KEYS:
            raise TaskConfigError(f"{where}: {suggest(str(key), set(AGGREGATE_KEYS), 'aggregate key')}")
    rule = entry.get("aggregation", "mean")
    if not isinstance(rule, FunctionRef) and (not isinstance(rule, str) or rule not in GROUP_AGGREGATIONS):
        raise TaskConfigError(
            f"{where}: unknown group aggregation {rule!r} (known: {', '.join(GROUP_AGGREGATIONS)}, "
            "or !function module.fn)"
        )
    if not isinstance(entry["metric"], str):
        raise TaskConfigError(
            f"{where}: an `aggregate_metric_list` entry's `metric` must be a name, got {entry['metric']!r:.40}"
        )
    if entry.get("filter_list", "none") not in ("none", ["none"]):
        raise TaskConfigError(f"{where}: only `filter_list: none` is supported (this harness has no filters)")
    if "as" in entry and not (isinstance(entry["as"], str) and entry["as"]):
        raise TaskConfigError(f"{where}: `as` must be the name the group writes this aggregate under")
    named = entry.get("members")
    if named is not None:
        if not isinstance(named, list) or not all(isinstance(m, str) for m in named):
            raise TaskConfigError(f"{where}: `members` must be a list of the group's member names")
        unknown = [m for m in named if m not in members]
        if unknown:
            raise TaskConfigError(
                f"{where}: `members` names {', '.join(unknown)}, which the group's `task:` list lacks"
            )


def parse_group(data: YamlDict) -> GroupConfig:
    known = set(GroupConfig.__dataclass_fields__) - {"source"}
    for key in data:
        if key not in known:
            raise TaskConfigError(f"{data.where(key)}: {suggest(str(key), known, 'group key')}")
    _expect(data, "group", str, "a string")
    if "task" not in data:
        raise TaskConfigError(f"{data.where('group')}: group {data['group']!r} has no `task:` list")
    members = data["task"]
    members = [members] if isinstance(members, str) else members
    if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
        raise TaskConfigError(f"{data.where('task')}: a group's `task:` must be a list of task or group names")
    aggregates = data.get("aggregate_metric_list") or []
    if isinstance(aggregates, dict):
        aggregates = [aggregates]
    if not isinstance(aggregates, list):
        raise TaskConfigError(
            f"{data.where('aggregate_metric_list')}: `aggregate_metric_list` must be a list of "
            f"mappings (metric, aggregation, ...), got {type(aggregates).__name__}"
        )
    for entry in aggregates:
        _check_aggregate(entry, list(members), data.where("aggregate_metric_list"))
    if data.get("metadata") is not None:
        _expect(data, "metadata", dict, "a mapping")
    if data.get("group_alias") is not None:
        _expect(data, "group_alias", str, "a string")
    return GroupConfig(
        group=data["group"],
        task=list(members),
        source=Path(str(data.source)),
        group_alias=data.get("group_alias"),
        aggregate_metric_list=list(aggregates),
        metadata=dict(data.get("metadata") or {}),
        benchmark=_function_or_none(data, "benchmark"),
    )


def returns_as_declared(returned: Iterable[str], declared: Iterable[str], some_rows: Iterable[str]) -> bool:
    """A row's metrics as `metric_list` declares them: each declared one, those declared `some_rows: true` excepted,
    and nothing undeclared."""
    names = set(declared)
    return names - set(some_rows) <= set(returned) <= names
