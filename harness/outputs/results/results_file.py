"""The results file, `results_<date>.json`, declared once: its keys and what each holds (`ResultsFile`, lm-eval's
shape: `lm_eval/result_schema.py`), the one place it is written (`write_results`, by a run and by `harness merge`)
and read (`read_results_file`, by `harness report`, `harness view` and `harness merge`). What each key holds is
`harness.outputs.results.results`'s to say (it builds them); the reader checks a file against the same declaration
(`results_file_problem`, validated by pydantic: `harness.schema`; its JSON Schema is `docs/schemas/results_file.json`), so a file edited by hand, cut short, written by
another tool or damaged is one line naming the file, the field and what was expected, never a traceback from deep
inside a renderer. A key a file lacks (an older file) or a key it adds is left alone.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, NotRequired, cast

from pydantic import Field
from typing_extensions import TypedDict

from builders.core import contract
from harness import schema
from harness.errors import UserError
from harness.file_writing import write_text
from harness.outputs.results.cost_record import CostEntry
from harness.redact import dumps

RESULTS_GLOB = "results_*.json"
COPY_OF = "copy_of"  # a copy of a run's results file (`write_results_copy`) names the original, read in its place
Scalar = float | str | bool | None
MetricValue = float | str | None  # a number, or lm-eval's "N/A" (NaN) and "inf" / "-inf"
# "alias", and "<metric>,none", "<metric>_stderr,none" and "<metric>_stderr_clustered,none" (lmms-eval's key) values
TaskEntry = dict[str, MetricValue]
# A results entry's keys that are a metric's errors, not a metric (lmms-eval's `make_table` skips the same suffixes).
ERROR_SUFFIXES = ("_stderr", "_stderr_clustered")


def metric_items(entry: Mapping[str, object]) -> Iterator[tuple[str, Any, Any]]:
    """(metric, value, stderr or "N/A") for each `"metric,filter"` key of a task's results that holds a metric (not
    one of its errors, nor the alias)."""
    for key, value in entry.items():
        metric, comma, _ = key.partition(",")
        if comma and not metric.endswith(ERROR_SUFFIXES):
            yield metric, value, entry.get(f"{metric}_stderr,none", "N/A")


def value_text(value: object) -> str:
    """A value in a table: a float to four decimals (NaN as "nan"), anything else ("N/A", a count) as recorded."""
    return f"{value:.4f}" if isinstance(value, float) else str(value)


class RunFileRecord(TypedDict):
    """`harness --config FILE`: the file (`harness.run.run_file`), as the run read it."""

    path: str  # absolute
    contents: dict[str, object]  # its keys and values as plain JSON, every secret redacted


class JudgeEntry(TypedDict, total=False):
    """One judge of a run whose tasks asked for several: its identity and the tasks it scored."""

    model: dict[str, Any]  # its identity (`Model.identity`), redacted
    tasks: list[str]


class JudgeRecord(TypedDict, total=False):
    """The results' `config.judge` (`harness.run.execute`): the first judged task's judge, each judged task's reply bound,
    and, where the tasks asked for more than one judge, each with its tasks (`harness compare` reads which judge scored
    a task from it); its response cache's figures besides."""

    model: dict[str, Any]
    max_reply_chars: dict[str, int]  # each judged task's bound on a reply's characters
    judges: list[JudgeEntry]


class RunConfig(TypedDict, total=False):
    """The results' `config`: what the run ran and how (`harness.run.results_config.run_config` makes it; `harness merge`
    makes a merged run's from its shards'), every secret redacted."""

    model: str | None  # the backend
    alias: str | None
    alias_info: dict[str, Any] | None
    model_name: str | None
    model_name_sanitized: str
    model_args: dict[str, str] | None
    model_identity: dict[str, Any] | None
    batch_size: int | str  # "auto": searched, the size that fit in `batch_sizes`
    max_batch_tokens: int | None
    limit: float | None
    seed: int
    shard: str | None
    gen_kwargs: dict[str, Any]
    metadata: dict[str, Any]
    data_dir: str | None
    trust_unverified_data: bool
    include_path: list[str] | None
    log_samples: bool
    predict_only: bool
    system_instruction: str | None
    random_seed: int | None  # lm-eval's four seeds, and its other flags (`harness.run.lm_eval_flags.recorded_flags`)
    numpy_seed: int | None
    torch_seed: int | None
    fewshot_seed: int | None
    bootstrap_iters: int | None
    device: str | None
    use_cache: str | None
    num_fewshot: int
    log_samples_suffix: str | None
    max_batch_size: int
    batch_sizes: list[int]
    cache: str | None  # the response cache's file, and what it spared
    cache_hits: int | None
    model_calls: int | None
    requests_sent: int | None
    backend_stats: dict[str, Any]
    token_counting: str
    chat_template: str | None
    chat_template_sha: str | None
    input_policies: dict[str, dict[str, Any]]
    # the [start, end] tag pairs whose blocks were taken out of each answer before scoring (absent: none)
    reasoning_tags: list[Annotated[list[str], Field(min_length=2, max_length=2)]]
    reasoning_tags_from: str  # where they come from: the flag, the alias, or the chat template that opens thinking
    answer_tags: list[str]  # [start, end] of the answer the model wraps after its thinking: what it holds was scored
    judge: JudgeRecord | None
    argv: list[str] | None  # the command line, redacted
    run_file: RunFileRecord | None  # --config FILE: the flags the command line left to it
    merged_from: list[dict[str, Any]]  # `harness merge`: each shard's folder, results file and command line


class AggregationRule(TypedDict):
    """How one of a group's metrics was aggregated (`harness.outputs.results.groups`)."""

    metric: NotRequired[str]  # the members' metric, where the group writes it under another name
    rule: str
    used: list[str]  # the members whose values it used
    missing: list[str]


class GroupAggregation(TypedDict):
    n_scored: int | None
    rules: dict[str, AggregationRule]


class BreakdownCell(TypedDict, total=False):
    """A metric's value over one cell of a breakdown (MMNeedle's grid cell, a depth), with its plain and clustered
    errors, the clusters its rows fall in and the design effect."""

    mean: MetricValue
    n: int | None
    stderr: MetricValue
    stderr_clustered: MetricValue
    n_clusters: int | None
    design_effect: MetricValue


class MetricUncertainty(TypedDict):
    """What stands behind a task's or group's `<metric>_stderr_clustered` (`harness.uncertainty`; docs/statistics.md),
    kept out of `results` so that lm-eval's `make_table` takes none of it for a metric."""

    n: int  # rows (a group: the rows of its members, a row two members share counted once)
    n_clusters: int  # clusters, or the connected components of a crossed (overlap) design
    design_effect: (
        MetricValue  # clustered variance / plain variance, before their small-sample factors; n/deff: effective n
    )
    overlap: bool  # the graph sum of a crossed design, not CR1 over a partition
    method: str  # mean, sum, ratio of sums (influence function), bootstrap, delta method (a group)
    # the figures the report's interval rests on (`harness.uncertainty.small_sample`; docs/statistics.md, "One rule
    # for every design"): absent from files written before issue 98, and where every row is its own cluster
    stderr_cr2: NotRequired[MetricValue]  # a partition's CR2 bias-reduced clustered error (Bell and McCaffrey 2002)
    df: NotRequired[MetricValue]  # files of issues 98 to 106 only: CR2's Bell-McCaffrey degrees of freedom
    kish_clusters: NotRequired[MetricValue]  # 1 / Σ_{i~j} a_i a_j: n² / Σ m_c² for a partition (Kish's clusters)
    largest_cluster: NotRequired[int]  # rows in the largest cluster (a crossed design's: its largest component)
    slope: NotRequired[MetricValue]  # the cluster score test's slope Σ_c W_c T_c (issue 107)
    working_model_n: NotRequired[MetricValue]  # the random-effects working model's effective n, the largest left out
    interval_rule: NotRequired[str]  # the rule the figures are for: `small_sample.INTERVAL_RULE` (issue 107)
    # a task's own 95 % interval of its aggregation ([] where it gives none for these rows: too few clusters), where
    # the task gives one (`metric_errors.with_interval`: MM-NIAH's grid score, issue 98); the report shows it
    interval: NotRequired[list[MetricValue]]


Breakdown = dict[str, BreakdownCell]  # a metric's values by cell (MMNeedle's grid cell, a depth)


class DataSource(TypedDict, total=False):
    kind: str | None
    spec: str | None
    num_images: int | None


class DataConfig(TypedDict, total=False):
    rows: int | None
    # What the run read: the sha256 of the read files' sha256s (space-separated, in order), not the build
    # manifest's content hash of the config
    content_sha256: str | None


class RowsLeftOutRecord(TypedDict, total=False):
    """The rows of a build a task's metadata left out (`harness.running.task.rows.RowsLeftOut.record`)."""

    scored: int
    held: int
    all_with: str


class DataRecord(TypedDict, total=False):
    """The data a task ran on (`harness.inputs.data.LoadedDataset.describe`): the build, its manifest's record of
    it (builder, request, source, caveats), and how it was verified."""

    location: str | None
    revision: str | None
    fingerprint: str
    content_hash: str | None
    builder: str | None
    builder_version: Scalar
    mode: str | None
    rows: str | int | None  # what the build asked for: a count, or "paper"
    limit: int | None
    verification: str | None
    unverified_reason: Scalar
    commit: Scalar
    source: DataSource | None
    caveats: dict[str, Scalar] | None
    config: DataConfig | None
    rows_left_out: RowsLeftOutRecord | None


class TaskConfigRecord(TypedDict, total=False):
    """A task's YAML config as the run read it, with its metadata and generation settings."""

    metadata: dict[str, Any] | None
    generation_settings: dict[str, Any]


class SampleCounts(TypedDict):
    """The document counts of a task (`n-samples`)."""

    original: int | None
    effective: int | None


# Functional syntax: lm-eval's `n-shot` and `n-samples` are no Python names.
ResultsFile = TypedDict(
    "ResultsFile",
    {
        "results": dict[str, TaskEntry],
        "groups": dict[str, TaskEntry],
        "group_subtasks": dict[str, list[str]],
        "sample_counts": dict[str, dict[str, int]],  # task -> sample_len, n_scored, n_<status>, ...
        "group_aggregation": dict[str, GroupAggregation],  # group -> the rule of each aggregate
        "configs": dict[str, TaskConfigRecord],
        "versions": dict[str, Scalar],
        "n-shot": dict[str, int],
        "higher_is_better": dict[str, dict[str, bool]],
        "n-samples": dict[str, SampleCounts],
        "breakdowns": dict[str, dict[str, Breakdown]],  # task -> metric -> its breakdown
        "references": dict[str, dict[str, MetricValue]],  # task -> levels to compare with (its chance)
        "uncertainty": dict[str, dict[str, MetricUncertainty]],  # task or group -> metric -> clusters, design effect
        "usage": dict[str, dict[str, int]],
        "datasets": dict[str, DataRecord],
        "task_hashes": dict[str, str],
        "config": RunConfig,
        "model_name": str | None,
        "model_name_sanitized": str | None,
        "chat_template": str | None,
        "chat_template_sha": str | None,
        "package_versions": dict[str, str | None] | None,
        "git_hash": str | None,
        "date": float | None,
        "total_evaluation_time_seconds": str,
        "start_time": float,
        "end_time": float,
        "model_source": str | None,
        "system_instruction": str | None,
        "system_instruction_sha": str | None,
        "fewshot_as_multiturn": bool,
        "failed_samples": NotRequired[dict[str, int]],  # task -> samples that failed with errors
        "rescored": NotRequired[dict[str, str]],  # task -> how many stored replies were scored again, and why
        "partial": NotRequired[dict[str, Any]],  # a --shard run's: which shard, and the tasks' documents
        "predict_only": NotRequired[str],  # a --predict_only run's note
        "cost": NotRequired[dict[str, dict[str, CostEntry]]],  # task -> model/judge -> tokens and USD
        # task -> its sample log's records: what `simple_evaluate(log_samples=True)` returns, as lm-eval's does (never
        # in the file: the sample logs are files of their own)
        "samples": NotRequired[dict[str, list[dict[str, object]]]],
    },
)


def results_file_problem(data: object) -> str | None:
    """What keeps `data` (a parsed results file) from being a `ResultsFile`, or None."""
    if not isinstance(data, dict):
        return f"expected a JSON object, got {contract.kind_of(data)}"
    return schema.must_be(data, ResultsFile, keys_optional=True)


def strict_number(value: float) -> float | str:
    """NaN as "N/A" (lm-eval's habit), an infinity as "inf" / "-inf": the file stays strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return "N/A" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def strict_values(value: object) -> object:
    """`value` with every NaN or infinity (a breakdown's, a group's) written as `strict_number` writes it, as the
    results file holds it (`write_results`), so what a run returns is what it wrote."""
    if isinstance(value, float):
        return strict_number(value)
    if isinstance(value, dict):
        return {k: strict_values(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict_values(v) for v in value]
    return value


def write_results(results: ResultsFile, model_dir: Path, date_id: str | None = None) -> Path:
    """`results_<date_id>.json` (the date names the run's sample logs too, as lm-eval's): strict JSON, which
    every reader parses (no NaN or Infinity tokens)."""
    stamp = date_id or datetime.now().isoformat().replace(":", "-")
    return write_text(model_dir / f"results_{stamp}.json", dumps(strict_values(results), indent=2, ensure_ascii=False))


# The most bytes a results file may hold: each task's config, metrics, counts and breakdowns take some KB to some tens
# of KB (the demo's largest, four benchmarks' tasks, is 0.3 MB), so a run of every task of the four benchmarks writes
# a few MB.
RESULTS_MOST = 64 * contract.MiB


def write_results_copy(results: ResultsFile, written: Path, asked: Path, date_id: str) -> Path:
    """`--output_path FILE.json`: the results `written` in the run's folder, copied where lm-eval writes them,
    `FILE_<date_id>.json` beside FILE (`lm_eval/loggers/evaluation_tracker.py`, `save_results_aggregated`). The copy
    names its original (`COPY_OF`), so `harness report` and `harness view`, which read the original beside its
    journals, leave it out."""
    target = asked.with_name(f"{asked.stem}_{date_id}.json")
    copy = {**results, COPY_OF: os.path.relpath(written, target.parent)}
    return write_text(target, dumps(strict_values(copy), indent=2, ensure_ascii=False))


def read_results_file(path: Path) -> ResultsFile:
    """A results file, parsed and checked against `ResultsFile`, or a `UserError` naming the file and what was
    expected."""
    try:
        # Without blocking (a FIFO planted as a results file), a regular file only, within its bound.
        data = contract.loads_json(contract.read_regular(path, RESULTS_MOST, "a results file").decode("utf-8"))
    except contract.TooManyDigits as err:
        raise UserError(f"{path}: not a results file the report can read: {err}") from None
    except OSError as err:
        raise UserError(f"{path}: unreadable results file ({err.strerror or err})") from None
    except UnicodeDecodeError as err:
        raise UserError(f"{path}: not a results file: not UTF-8 ({err.reason} at byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise UserError(
            f"{path}: not a results file: not JSON ({err.msg} at line {err.lineno} column {err.colno})"
        ) from None
    except RecursionError:
        raise UserError(f"{path}: not a results file: nested too deeply to read") from None
    problem = results_file_problem(data)
    if problem is not None:
        raise UserError(f"{path}: not a results file the report can read: {problem}")
    return cast(ResultsFile, data)
