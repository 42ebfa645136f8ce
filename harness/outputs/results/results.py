"""The results file, shaped like lm-eval's (`lm_eval/result_schema.py`) so its tools read it, and the
terminal table.

`results[task]` holds what lm-eval's do: the `alias` and `"<metric>,none"` / `"<metric>_stderr,none"`
values (no filters here, hence `none`), and lmms-eval's `"<metric>_stderr_clustered,none"` (the error clustered on
the task's `cluster_key:`; lm-eval's `make_table` shows it as a row of its own, lmms-eval's as a column). Our
bookkeeping has keys of its own: `uncertainty[task or group][metric]` (rows, clusters, design effect, method: apart,
so that no table takes them for metrics), `sample_counts[task]`
(`sample_len`, `n_scored` and how many samples ended in each status: refused, failed, over-length, too
many images, invalid input, empty), `group_aggregation[group]` (the rule of each aggregate and the
members it used and missed), `breakdowns[task]` (per cell, per depth), `references[task]` (levels to
compare with, such as a task's chance: constants, not metrics). Top-level `model_name`,
`model_name_sanitized`, `chat_template` and `chat_template_sha` are where lm-eval records them.
"""

from __future__ import annotations

import hashlib
import math
import platform
import re
import subprocess
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any, cast

from harness.api import STATUSES
from harness.config.task_config import GroupConfig
from harness.models.registry import backend_spec
from harness.outputs.results.groups import group_entries
from harness.outputs.results.results_file import (
    Breakdown,
    DataRecord,
    MetricUncertainty,
    MetricValue,
    ResultsFile,
    RunConfig,
    Scalar,
    TaskConfigRecord,
    metric_items,
    strict_number,
    strict_values,
    value_text,
)
from harness.running.task.task import TaskResult
from harness.uncertainty.small_sample import INTERVAL_RULE
from harness.uncertainty.variance import ClusteredError

PACKAGES = (
    "mmlongeval",
    "datasets",
    "huggingface_hub",
    "pyarrow",
    "pillow",
    "numpy",
    "transformers",
    "torch",
    "tokenizers",
    "vllm",
    "httpx",
    # the providers' SDKs: the API version each sends is its own pin (docs/cost.md, "API versions")
    "anthropic",
    "google-genai",
    "httpx2",
)


def sanitize_model_name(name: str) -> str:
    """lm-eval's rule: characters unsafe in paths become `__` (`Qwen/Qwen2.5-VL` -> `Qwen__Qwen2.5-VL`)."""
    return re.sub(r"[\"<>:/|\\?*\[\]]+", "__", name)


def model_folder_name(backend: str, args: dict[str, str]) -> str:
    """The folder under `--output_path` for one model's journals, results and response cache.

    Named after what is evaluated: the checkpoint (`pretrained`) or the served model name (`model`),
    sanitized as lm-eval does, so an alias and the checkpoint it stands for share a folder and two
    checkpoints never do. Backends other than `hf` prefix their name (`vllm__Qwen__Qwen2.5-VL-7B-Instruct`,
    `openai__gpt-4o`): the same checkpoint through another backend is another run, whose journals would
    otherwise be refused as "a different run". A backend without a checkpoint (the baselines) uses its name.
    """
    checkpoint = args.get("pretrained") or args.get("model")
    if not checkpoint:
        return one_folder(sanitize_model_name(backend))
    return one_folder(
        sanitize_model_name(f"{backend}/{checkpoint}" if backend_spec(backend).folder_label else checkpoint)
    )


FOLDER_NAME_MOST = 200  # bytes: under the 255 of a file name, leaving room for what tools add to it


def one_folder(name: str) -> str:
    """`name` (lm-eval's sanitized text of what a user typed) as one folder right under `--output_path`, whatever the
    text: a control character (NUL, a newline) or a lone surrogate becomes `_`, a name of dots only (`..`, `.`) or nothing gains a
    leading `_`, and a name over `FOLDER_NAME_MOST` bytes keeps its start and ends in a hash of the whole, so two
    names stay two folders. Every ordinary name is kept as it is (its journals resume)."""
    unsafe = lambda c: ord(c) < 32 or c == "\x7f" or "\ud800" <= c <= "\udfff"  # noqa: E731 - control, surrogate
    folder = "".join("_" if unsafe(c) else c for c in name).replace("/", "__").replace("\\", "__")
    if not folder.strip("."):
        folder = "_" + folder
    if len(folder.encode()) > FOLDER_NAME_MOST:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        kept = folder.encode()[: FOLDER_NAME_MOST - 17].decode("utf-8", "ignore")
        folder = f"{kept}-{digest}"
    return folder


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def git_hash() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def partial_note(task_results: list[TaskResult], shard: str) -> dict[str, Any]:
    return {
        "shard": shard,
        "task_docs": {r.task.name: r.task_docs for r in task_results},
        "note": f"shard {shard}: every metric and count covers only this shard's documents; run every shard, "
        "then combine them with `harness merge OUT SHARD_DIR...`",
    }


def sample_counts(result: TaskResult) -> dict[str, int]:
    """How many samples a task had, scored, and ended in each status."""
    counts = {"sample_len": result.n_effective, "n_scored": result.n_scored}
    counts.update({f"n_{status}": result.counts.get(status, 0) for status in STATUSES})
    counts.update(result.judge_counts)
    if result.truncated:  # only tasks with a truncation rule cut samples (`harness.inputs.truncation`)
        counts["n_truncated"] = result.truncated
    if result.past_window:  # only runs told to pass the checkpoint's window answer past it
        counts["n_past_window"] = result.past_window
    return counts


def task_entry(result: TaskResult) -> dict[str, Any]:
    entry: dict[str, Any] = {"alias": result.task.config.task_alias or result.task.name}
    references = result.task.reference_metrics()
    for metric, value in result.values.items():
        if metric in references:
            continue
        entry[f"{metric},none"] = strict_number(value)
        entry[f"{metric}_stderr,none"] = strict_number(result.stderrs.get(metric, math.nan))
        error = result.errors.get(metric)
        entry[f"{metric}_stderr_clustered,none"] = strict_number(error.stderr_clustered if error else math.nan)
    return entry


def uncertainty_entry(error: ClusteredError) -> MetricUncertainty:
    """What stands behind a `_stderr_clustered` value (`MetricUncertainty`); a partition's CR2 error and the figures
    issue 107's interval reads, where they were measured (`harness.uncertainty.small_sample`)."""
    entry: MetricUncertainty = {
        "n": error.n,
        "n_clusters": error.n_clusters,
        "design_effect": strict_number(error.design_effect),
        "overlap": error.overlap,
        "method": error.method,
    }
    if error.largest_cluster and not error.overlap:
        entry["stderr_cr2"] = strict_number(error.stderr_cr2)
    if error.largest_cluster and math.isfinite(error.slope):  # issue 107's interval reads these (`estimates.Estimate`)
        entry["kish_clusters"] = strict_number(error.kish_clusters)
        entry["largest_cluster"] = error.largest_cluster
        entry["slope"] = strict_number(error.slope)
        entry["working_model_n"] = strict_number(error.working_model_n)
        entry["interval_rule"] = INTERVAL_RULE
    if error.interval is not None:
        entry["interval"] = [strict_number(bound) for bound in error.interval]
    return entry


def task_uncertainty(result: TaskResult) -> dict[str, MetricUncertainty]:
    references = result.task.reference_metrics()
    return {m: uncertainty_entry(e) for m, e in result.errors.items() if m not in references}


def references(result: TaskResult) -> tuple[str, dict[str, MetricValue]]:
    """A task's reference levels (its chance), kept apart from its metrics (`MetricSpec.reference`)."""
    names = result.task.reference_metrics()
    return result.task.name, {m: strict_number(v) for m, v in result.values.items() if m in names}


def _dataset_entry(result: TaskResult) -> DataRecord:
    """The data a task read, and the rows of it that its metadata left out (`harness.running.task.rows`)."""
    assert result.task.data is not None
    left_out = result.task.left_out
    return cast(
        DataRecord, {**result.task.data.describe(), **({"rows_left_out": left_out.record()} if left_out else {})}
    )


def _task_configs(task_results: list[TaskResult]) -> dict[str, TaskConfigRecord]:
    """Each task's config as its YAML's keys read (checked when read back), with its metadata and the generation
    settings it ran with."""
    configs: dict[str, TaskConfigRecord] = {}
    for r in task_results:
        config = r.task.config.to_dict()
        config["metadata"] = r.task.metadata
        config["generation_settings"] = r.settings.to_dict()
        configs[r.task.name] = cast(TaskConfigRecord, config)
    return configs


def _versions(
    task_results: list[TaskResult], groups: dict[str, list[str]], group_configs: dict[str, GroupConfig]
) -> dict[str, Scalar]:
    """Each task's version, then each group's where its config names one."""
    return {
        **{r.task.name: r.task.config.version for r in task_results},
        **{
            name: group_configs[name].metadata["version"]
            for name in groups
            if name in group_configs and "version" in group_configs[name].metadata
        },
    }


PREDICT_ONLY_NOTE = (
    "the answers are generated and journalled, not scored (no metrics); the same command without "
    "--predict_only scores them without generating again"
)


def predict_only(results: ResultsFile) -> None:
    """A `--predict_only` run's results: its note, and no group score (nothing is scored)."""
    results["predict_only"] = PREDICT_ONLY_NOTE
    results["group_aggregation"] = {}
    results["groups"] = {name: {"alias": entry["alias"]} for name, entry in results["groups"].items()}


def build_results(
    task_results: list[TaskResult],
    groups: dict[str, list[str]],
    group_configs: dict[str, GroupConfig],
    run_config: RunConfig,
    started: float,
    finished: float,
) -> ResultsFile:
    results = {r.task.name: task_entry(r) for r in task_results}
    counts = {r.task.name: sample_counts(r) for r in task_results}
    influences = {r.task.name: r.influences.get for r in task_results}
    group_results, aggregation, group_errors = group_entries(groups, group_configs, results, counts, influences)
    uncertainty = {r.task.name: task_uncertainty(r) for r in task_results}
    uncertainty.update(
        {name: {m: uncertainty_entry(e) for m, e in errors.items()} for name, errors in group_errors.items()}
    )
    configs = _task_configs(task_results)
    out: ResultsFile = {
        "results": results,
        "groups": group_results,
        "group_subtasks": {name: list(members) for name, members in groups.items()},
        "sample_counts": counts,
        "group_aggregation": aggregation,
        "configs": configs,
        "versions": _versions(task_results, groups, group_configs),
        "n-shot": {r.task.name: 0 for r in task_results},
        "higher_is_better": {r.task.name: r.task.higher_is_better() for r in task_results},
        "n-samples": {r.task.name: {"original": r.task.n_original, "effective": r.n_effective} for r in task_results},
        "breakdowns": {
            r.task.name: cast(dict[str, Breakdown], strict_values(r.breakdowns)) for r in task_results if r.breakdowns
        },
        "references": {name: values for name, values in map(references, task_results) if values},
        "uncertainty": {name: entry for name, entry in uncertainty.items() if entry},
        # Tokens the recorded answers took, as the backend reported them (answers served from the
        # journal or the response cache count what they cost when generated).
        "usage": {r.task.name: r.usage for r in task_results if r.usage},
        # the manifest's record of each build, as read: checked when the file is read back (`results_file_problem`)
        "datasets": {r.task.name: _dataset_entry(r) for r in task_results if r.task.data},
        "task_hashes": {r.task.name: r.fingerprint for r in task_results},
        "config": run_config,
        "model_name": (run_config.get("model_args") or {}).get("pretrained")
        or (run_config.get("model_args") or {}).get("model")
        or run_config.get("model_name"),
        "model_name_sanitized": run_config.get("model_name_sanitized"),
        "chat_template": run_config.get("chat_template"),
        "chat_template_sha": run_config.get("chat_template_sha"),
        "package_versions": package_versions(),
        "git_hash": git_hash(),
        "date": started,
        "total_evaluation_time_seconds": str(round(finished - started, 3)),
        # lm-eval's other top-level keys (its EvaluationTracker's), where ours differ.
        "start_time": started,
        "end_time": finished,
        "model_source": run_config.get("model"),
        "system_instruction": run_config.get("system_instruction"),
        "system_instruction_sha": hashlib.sha256(instruction.encode("utf-8")).hexdigest()
        if (instruction := run_config.get("system_instruction"))
        else None,
        "fewshot_as_multiturn": False,
    }
    failed = {r.task.name: r.counts.get("error", 0) for r in task_results if r.counts.get("error", 0)}
    if failed:  # left out of the denominators: the scores are of the samples that did not fail
        out["failed_samples"] = failed
    rescored = {r.task.name: r.rescored for r in task_results if r.rescored}
    if rescored:  # replies journalled by an earlier run, scored again for the task's scoring now
        out["rescored"] = rescored
    if run_config.get("shard"):
        out["partial"] = partial_note(task_results, str(run_config["shard"]))
    return out


def summary_table(results: ResultsFile) -> str:
    """A markdown table like lm-eval's: one row per task and metric, then groups, each value's plain standard error
    and the one clustered on its task's `cluster_key:` beside it."""
    lines = [
        "| Task | Version | n | Metric | Value |   | Stderr | Clustered |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, entry in results["results"].items():
        version = results["versions"].get(name, "")
        counts = results.get("sample_counts", {}).get(name, {})
        excluded = counts.get("sample_len", 0) - counts.get("n_scored", 0)
        refused = counts.get("n_refused", 0)
        n = f"{counts.get('n_scored', '')}" + (
            f" (+{excluded} excl." + (f", {refused} refused" if refused else "") + ")" if excluded else ""
        )
        first = True
        for metric, value, stderr in metric_items(entry):
            clustered = entry.get(f"{metric}_stderr_clustered,none", "N/A")
            lines.append(
                f"| {name if first else ''} | {version if first else ''} | {n if first else ''} | {metric} | "
                f"{value_text(value)} | ± | {value_text(stderr)} | {value_text(clustered)} |"
            )
            first = False
    for name, entry in results.get("groups", {}).items():
        members = results["group_subtasks"].get(name, [])
        aggregated = results.get("group_aggregation", {}).get(name)
        scored = aggregated["n_scored"] if aggregated else ""
        metrics = list(metric_items(entry))
        if not metrics:
            lines.append(f"| {name} (group) | | | reports its {len(members)} members, no pooled score | | | | |")
        for metric, value, stderr in metrics:
            clustered = entry.get(f"{metric}_stderr_clustered,none", "N/A")
            lines.append(
                f"| {name} (group) | | {scored} | {metric} | {value_text(value)} | ± | {value_text(stderr)} | {value_text(clustered)} |"
            )
    return "\n".join(lines)
