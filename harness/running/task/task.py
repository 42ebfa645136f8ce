"""A task at run time: its rows and their life (`task_rows`), the requests built from them (`task_requests`), and
here, its Python hooks bound once from its YAML (`!function utils.x`: the functions its keys name, each a `TaskHook`,
its judge, each metric's aggregation, every one checked before a document is read), per-sample scoring, the
aggregation of a task's metrics and what identifies its scores; and what running it gives (`TaskResult`)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.api import EMPTY, OK, GenerationSettings
from harness.config.task_config import MetricSpec, TaskConfig, returns_as_declared
from harness.config.yaml_loader import FunctionRef
from harness.errors import TaskConfigError
from harness.inputs.build_files import BUILDER_SOURCE
from harness.running.journal.journal_file import canonical
from harness.running.task.aggregation import Aggregated, aggregate_metrics
from harness.running.task.hook import TaskHook, call_hook
from harness.running.task.judge import JudgeSpec
from harness.running.task.metric_errors import ScoredRow
from harness.running.task.metrics import AGGREGATIONS, SAMPLE_METRICS
from harness.running.task.process_docs import journal_source
from harness.running.task.requests import TaskRequests
from harness.running.task.rows import ALL_ROWS
from harness.uncertainty.bootstrap import DEFAULT_ITERS


def scored_metadata(metadata: Mapping[str, object] | None) -> dict[str, object] | None:
    """`metadata` as a task's identity holds it: less what only describes the task (`all_rows`, and
    `builder_source`, the official release the missing-data hint names), so declaring either leaves every journal
    written before resumable."""
    return None if metadata is None else {k: v for k, v in metadata.items() if k not in (ALL_ROWS, BUILDER_SOURCE)}


class Task(TaskRequests):
    def __init__(
        self, config: TaskConfig, metadata: Mapping[str, object] | None = None, system_instruction: str | None = None
    ) -> None:
        hooks, self.judge, self.aggregations = bind_hooks(config)
        super().__init__(config, {**config.metadata, **(metadata or {})}, hooks, system_instruction)

    # --------------------------------------------------------------------------------- scoring
    def score(self, doc: Mapping[str, object], response: str) -> dict[str, Any]:
        """The sample's metrics from `process_results` (or the built-in ones): every metric of `metric_list`
        except the judge's, which join later (`harness.running.task.judge`)."""
        judged = set(self.judge.metrics) if self.judge else set()
        names = [m.metric for m in self.config.metric_list if m.metric not in judged]
        if "process_results" in self.hooks:
            hook = self.hooks["process_results"]
            out = call_hook(hook, doc, [response], metadata=self.metadata)
            if not returns_as_declared(out, names, self.some_rows):
                raise hook.wrong(
                    (doc,), f"returned the metrics {sorted(map(str, out))}, where metric_list expects {sorted(names)}"
                )
            return out
        target = self.target(doc)
        return {name: SAMPLE_METRICS[name](target, response) for name in names}

    @property
    def some_rows(self) -> frozenset[str]:
        """The metrics a row may lack (`some_rows: true`)."""
        return frozenset(m.metric for m in self.config.metric_list if m.some_rows)

    def builtin_aggregations(self) -> dict[str, str]:
        """metric -> the name of its built-in aggregation (the shape its journalled values must have)."""
        return {spec.metric: spec.aggregation for spec in self.config.metric_list if isinstance(spec.aggregation, str)}

    def aggregate(self, scored: list[ScoredRow], bootstrap_iters: int | None = None) -> Aggregated:
        """Aggregate scored samples' metrics, with their plain and clustered errors (`harness.running.task.aggregation`);
        `bootstrap_iters`: None for the default draws of the bootstrap a task's own aggregation is resampled by."""
        judged = self.judge.metrics if self.judge else ()
        iters = DEFAULT_ITERS if bootstrap_iters is None else bootstrap_iters
        return aggregate_metrics(self.name, self.config.metric_list, self.aggregations, judged, scored, iters)

    def cluster_keys(self, doc: Mapping[str, object]) -> list[str]:
        """The row's cluster keys from the task's `cluster_key:` (`harness.config.cluster_key`); none without one."""
        key = self.config.cluster_key
        return key.keys(self.config.dataset_path, doc) if key is not None else []

    def scored_row(self, sample_id: str, metrics: Mapping[str, object], keys: Sequence[str] | None) -> ScoredRow:
        """A scored sample as the aggregation reads it: named `task/sample id`, keyed by its cluster keys, or by its
        own name where it has none (it stands alone)."""
        name = f"{self.name}/{sample_id}"
        return ScoredRow(name, metrics, tuple(keys) if keys else (name,))

    def higher_is_better(self) -> dict[str, bool]:
        return {m.metric: m.higher_is_better for m in self.config.metric_list if not m.reference}

    def reference_metrics(self) -> set[str]:
        """The `metric_list` entries that are reference levels (chance), not scores (`MetricSpec.reference`)."""
        return {m.metric for m in self.config.metric_list if m.reference}

    # ----------------------------------------------------------------------------- identity
    def identity(self) -> dict[str, Any]:
        """What decides the replies a journal may reuse: the task's config less its scoring (with the hooks' sources),
        metadata, data. A change of scoring only rescores the replies (`scoring_identity`)."""
        config = {k: v for k, v in self._config_identity().items() if k not in SCORING_KEYS}
        return {
            "task": self.name,
            "version": self.config.version,
            "sent_sha256": _digest(config, self._hook_sources(scoring=False)),
            "metadata": scored_metadata(self.metadata),
            "dataset": self.data.fingerprint if self.data else None,
        }

    def same_data(self, recorded: object) -> str | None:
        """Whether a journal's data fingerprint `recorded` names this task's data: None where it does, else why not
        ("" where it simply names another; `harness.inputs.content_hash.earlier_data`)."""
        from harness.inputs.content_hash import earlier_data  # only where a journal's data differs: most runs never

        return earlier_data(self.data, recorded)

    def scoring_identity(self) -> dict[str, object]:
        """What decides a stored reply's metrics: the metrics, the scorer and their hooks' sources."""
        config = {k: v for k, v in self._config_identity().items() if k in SCORING_KEYS}
        return {
            "metrics": [m.metric for m in self.config.metric_list],
            "sha256": _digest(config, self._hook_sources(scoring=True)),
        }

    def _config_identity(self) -> dict[str, object]:
        config = self.config.to_dict()
        config.pop("source", None)
        config.pop("benchmark", None)  # the benchmark's declaration: its report, paper models, ... (no score)
        config.pop("cluster_key", None)  # how errors are computed: journals from before it was declared still resume
        config.pop("judge", None)  # asked after generation: judging again never makes the model answer again
        if isinstance(config.get("metadata"), dict):  # `all_rows` describes the task, changes no score
            config["metadata"] = scored_metadata(config["metadata"])
        if config.get("refusals") == "exclude":  # the default, left out so that existing journals still resume
            config.pop("refusals")
        if config.get("fit_context") is None:  # none declared: journals from before the key still resume
            config.pop("fit_context", None)
        return config

    def _hook_sources(self, scoring: bool) -> dict[str, str]:
        config = self.config
        scorers = [getattr(config, key) for key in SCORING_KEYS if key != "metric_list"]
        scorers += [*config.judge.values(), *(m.aggregation for m in config.metric_list)]
        refs = [ref for ref in config.function_refs() if ref is not config.benchmark]
        hashes = {str(ref): ref.source_hash() for ref in refs if any(ref is s for s in scorers) == scoring}
        if isinstance(config.process_docs, FunctionRef) and not scoring:  # the rows' container is no part of it
            source = journal_source(config.process_docs.resolve())
            if source is not None:
                hashes[str(config.process_docs)] = hashlib.sha256(source.encode()).hexdigest()
        return hashes


def _aggregation(config: TaskConfig, spec: MetricSpec) -> Callable[..., Any]:
    if isinstance(spec.aggregation, FunctionRef):
        return spec.aggregation.resolve()
    if spec.aggregation not in AGGREGATIONS:
        raise TaskConfigError(
            f"{config.source}:1: task {config.task!r}: metric {spec.metric!r}: unknown aggregation "
            f"{spec.aggregation!r} (known: {', '.join(AGGREGATIONS)})"
        )
    return AGGREGATIONS[spec.aggregation]


def bind_hooks(config: TaskConfig) -> tuple[dict[str, TaskHook], JudgeSpec | None, dict[str, Callable[..., Any]]]:
    """The task's hooks (by YAML key), its judge and its metrics' aggregations, or a `TaskConfigError` naming its
    YAML."""
    name = config.task
    functions = {  # every key a `!function` names, but the benchmark's declaration (no hook: `harness.config.benchmark`)
        key: TaskHook(key, name, value)
        for key, value in vars(config).items()
        if isinstance(value, FunctionRef) and key != "benchmark"
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
    return functions, judge, aggregations


# Task keys that decide how a reply is scored, never what the model is sent: a change rescores a journal's replies.
# (`refusals` decides a record's status when it is journalled, `random_answer` the random backend's reply: not here.)
SCORING_KEYS = frozenset({"metric_list", "process_results", "doc_to_target"})


def _digest(config: Mapping[str, object], hooks: Mapping[str, str]) -> str:
    return hashlib.sha256(canonical([config, hooks]).encode()).hexdigest()


@dataclass(kw_only=True)
class TaskResult(Aggregated):
    """A task's aggregates (`Aggregated`) and how the run got them."""

    task: Task
    settings: GenerationSettings
    fingerprint: str
    counts: dict[str, int]  # samples per status, over the evaluated documents
    n_effective: int
    resumed: int  # samples found finished in the journal
    changed: int  # journalled samples whose inputs changed since, generated again
    generated: int  # samples sent to the model in this run
    seconds: float
    usage: dict[str, int] = field(default_factory=dict)  # token usage summed over the task's samples
    answer_usages: list[dict[str, int]] = field(default_factory=list)  # each answer's, priced one by one (`cost`)
    task_docs: int = 0  # documents of the task before sharding
    rescored: str | None = None  # why and how many stored replies were scored again (`SampleStore.rescoring`)
    truncated: int = 0  # samples the task's truncation rule cut to fit the model
    past_window: int = 0  # answers that ran past the checkpoint's window, on purpose (`ModelFacts.window`)
    judge_counts: dict[str, int] = field(default_factory=dict)  # n_judged, n_judge_unparsed, n_judge_error
    judge_usage: dict[str, int] = field(default_factory=dict)  # the judge's token usage, summed over its calls
    judge_usages: list[dict[str, int]] = field(default_factory=list)  # each judge call's, priced one by one

    @property
    def n_scored(self) -> int:
        return self.counts.get(OK, 0) + self.counts.get(EMPTY, 0)
