"""The opening of `report.md`: how each model's numbers were produced, as its results files record it.

Per model, each run whose numbers the report shows (a results file still holding the newest value of some
task): its date and command, backend and alias settings, model arguments, generation settings, seed, batching,
code commit and package versions, and the data it read (location, builder, source, content hash, verification).
Arguments and commands pass through `harness.redact` again, since a results file written by an older version or
edited by hand may hold what no report should repeat.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.outputs.results.cost_record import cost_lines
from harness.outputs.results.provenance import NONE, UNKNOWN, DataOrigin, limit_text
from harness.redact import redact_command, redact_mapping

# Run-config fields this section shows by name; any other (a flag a later version adds) is listed as it is.
SHOWN = {
    "model",
    "alias",
    "alias_info",
    "model_name",
    "model_name_sanitized",
    "model_args",
    "model_identity",
    "batch_size",
    "max_batch_tokens",
    "limit",
    "seed",
    "shard",
    "gen_kwargs",
    "data_dir",
    "token_counting",
    "chat_template",
    "chat_template_sha",
    "input_policies",
    "judge",
    "argv",
    "run_file",
    "metadata",
    "include_path",
    "log_samples",
    "cache",
    "backend_stats",
    "trust_unverified_data",
    "max_batch_size",
    "batch_sizes",
    "predict_only",
    "system_instruction",
    # lm-eval's flags (`harness.run.lm_eval_flags.recorded`): one line of their own when any is set
    "random_seed",
    "numpy_seed",
    "torch_seed",
    "fewshot_seed",
    "bootstrap_iters",
    "device",
    "use_cache",
    "num_fewshot",
    "log_samples_suffix",
}
LM_EVAL_FLAGS = ("device", "use_cache", "bootstrap_iters", "num_fewshot", "log_samples_suffix")
TASKS_NAMED = 3  # tasks named beside a count before "..."


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _text(value: object) -> str:
    """A recorded value as a reader wants it: `none` for null or empty, JSON for structures."""
    if value is None or value == {} or value == []:
        return NONE
    return value if isinstance(value, str) else _json(value)


def _named(tasks: list[str]) -> str:
    shown = ", ".join(tasks[:TASKS_NAMED]) + (", ..." if len(tasks) > TASKS_NAMED else "")
    return f"{len(tasks)} task(s): {shown}"


def _date(results: Mapping[str, Any]) -> str:
    stamp = results.get("date")
    if not isinstance(stamp, int | float):
        return UNKNOWN
    try:
        when = datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):  # a time no clock shows (year 10,000 and past, NaN)
        return UNKNOWN
    try:  # lm-eval writes it as a string
        return when + f" (evaluation took {float(results['total_evaluation_time_seconds']):.1f} s)"
    except (KeyError, TypeError, ValueError):
        return when


def _by_value(per_task: Iterable[tuple[str, object]]) -> list[tuple[str, list[str]]]:
    """Tasks grouped by an equal value (its JSON text), in first-met order."""
    groups: dict[str, list[str]] = {}
    for task, value in per_task:
        groups.setdefault(_json(value), []).append(task)
    return list(groups.items())


def _generation(results: Mapping[str, Any], tasks: list[str]) -> list[str]:
    """Each distinct generation setting of the run's tasks (the task's own, the run's --gen_kwargs and seed
    applied), with the tasks that used it."""
    configs = results.get("configs", {})
    settings = [(task, (configs.get(task) or {}).get("generation_settings")) for task in tasks]
    return [f"  - `{text}`: {_named(names)}" for text, names in _by_value(settings)]


def _data(results: Mapping[str, Any], tasks: list[str]) -> list[str]:
    """Each build the run read, with its source and content hash, and the tasks that read it."""
    run = results.get("config") or {}
    entries = results.get("datasets") or {}
    builds: dict[tuple[DataOrigin, str, str], list[str]] = {}
    for task in tasks:
        entry = entries.get(task) or {}
        key = (DataOrigin.of(entry, run), str(entry.get("commit") or ""), str(entry.get("verification") or UNKNOWN))
        builds.setdefault(key, []).append(task)
    lines = []
    for (origin, commit, verification), names in builds.items():
        where = f"`{origin.location}`" if origin.location else UNKNOWN
        if origin.revision or commit:
            where += " @ " + " ".join(f"`{part}`" for part in (origin.revision, commit and f"commit {commit}") if part)
        source = f"{origin.source_kind} (`{origin.source_spec}`)" if origin.source_kind else UNKNOWN
        lines.append(
            f"  - {where}: builder {origin.builder or UNKNOWN}; source {source}; build --limit "
            f"{origin.build_limit_text()}; content hash `{origin.content_hash or UNKNOWN}`; "
            f"{verification}; {_named(names)}"
        )
    return lines


def _model(run: dict[str, Any]) -> list[str]:
    alias = run.get("alias")
    lines = [
        f"- **backend**: `{_text(run.get('model'))}`; **alias**: `{_text(alias)}`",
        f"- **model arguments** (redacted): `{_text(redact_mapping(run.get('model_args') or {}))}`",
        f"- **model as loaded** (redacted): `{_text(redact_mapping(run.get('model_identity') or {}))}`",
    ]
    if alias:
        lines.append(f"- **alias settings**: `{_text(redact_mapping(run.get('alias_info') or {}))}`")
    if run.get("judge"):
        lines.append(f"- **judge** (redacted): `{_text(redact_mapping(run['judge']))}`")
    return lines


def _settings(run: Mapping[str, object]) -> list[str]:
    lines = [
        f"- **seed**: {_text(run.get('seed'))}; **--gen_kwargs**: `{_text(run.get('gen_kwargs'))}`; "
        f"**--limit**: {limit_text(run) or UNKNOWN}; **shard**: {_text(run.get('shard'))}",
        f"- **batching**: batch size {_text(run.get('batch_size'))}, max batch tokens "
        f"{_text(run.get('max_batch_tokens'))}"
        + (
            f" (auto from {_text(run.get('max_batch_size'))}: chose {_text(run.get('batch_sizes'))})"
            if run.get("batch_size") == "auto"
            else ""
        ),
        f"- **system instruction**: {_text(run.get('system_instruction'))}; **predict only**: "
        f"{_text(run.get('predict_only'))}",
        f"- **prompts**: token counting `{_text(run.get('token_counting'))}`; chat template sha256 "
        f"`{_text(run.get('chat_template_sha'))}`; input policies `{_text(run.get('input_policies'))}`",
    ]
    seeds = [run.get(k) for k in ("random_seed", "numpy_seed", "torch_seed", "fewshot_seed")]
    flags = {key: run[key] for key in LM_EVAL_FLAGS if run.get(key)}
    if flags or (any(v is not None for v in seeds) and any(v != run.get("seed") for v in seeds)):
        lines.append(f"- **lm-eval's flags**: seeds (random, numpy, torch, fewshot) {_text(seeds)}; `{_text(flags)}`")
    others = {key: value for key, value in sorted(run.items()) if key not in SHOWN}
    if others:
        lines.append(f"- **other run settings**: `{_text(redact_mapping(others))}`")
    return lines


def _run_file(record: object) -> list[str]:
    """The `--config` file the command named, as the run read it (`config.run_file`)."""
    if not isinstance(record, Mapping):
        return []
    contents = record.get("contents")
    shown = _text(redact_mapping(contents)) if isinstance(contents, Mapping) else UNKNOWN
    return [f"- **run file** `{_text(record.get('path'))}` (redacted): `{shown}`"]


def _code(results: Mapping[str, Any]) -> str:
    versions = results.get("package_versions") or {}
    packages = ", ".join(f"{name} {version}" for name, version in versions.items()) or UNKNOWN
    return f"- **code**: commit `{_text(results.get('git_hash'))}`; packages: {packages}"


def run_section(path: str, results: Mapping[str, Any], tasks: list[str], number: int, count: int) -> list[str]:
    """One run: what it was asked, how the model was set up, the code, and the data it read."""
    run = results.get("config") or {}
    argv = run.get("argv")
    command = " ".join(redact_command(argv)) if isinstance(argv, list) else UNKNOWN
    return [
        f"#### Run {number} of {count}: `{Path(path).name}`",
        "",
        f"- **date**: {_date(results)}",
        f"- **command** (redacted): `{command}`",
        *_run_file(run.get("run_file")),
        f"- **tasks**: {_named(tasks)}",
        *_model(run),
        *_settings(run),
        "- **generation settings** per task:",
        *_generation(results, tasks),
        _code(results),
        "- **data**:",
        *_data(results, tasks),
        *cost_lines(results.get("cost") or {}, tasks),
        "",
    ]


def provenance_opening(runs_by_model: Mapping[str, Sequence[tuple[str, Mapping[str, Any], list[str]]]]) -> list[str]:
    """`## Provenance`: per model (by name), each run as (results file, its contents, the tasks and groups whose
    shown values it holds)."""
    lines = [
        "## Provenance",
        "",
        "How each model's numbers were produced, as its results files record them (arguments and commands "
        "redacted). Each run below holds the newest value of the tasks it names.",
        "",
    ]
    for model, runs in sorted(runs_by_model.items()):
        lines += [f"### Runs of {model}", ""]  # not "### {model}": the model's own part is "## {model}"
        for number, (path, results, tasks) in enumerate(runs, start=1):
            lines += run_section(path, results, tasks, number, len(runs))
    return lines
