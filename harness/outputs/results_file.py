"""The results file, `results_<date>.json`: its keys (`ResultsFile`, lm-eval's shape: `lm_eval/result_schema.py`)
and the one place it is written (`write_results`, by a run and by `harness merge`) and read (`read_results_file`, by
`harness report`, `harness view` and `harness merge`). What each key holds is `harness.outputs.results`'s to say
(it builds them); what a reader may rely on is checked by `harness.outputs.results_shape`.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from builders.core import contract
from harness.errors import UserError
from harness.file_writing import write_text
from harness.outputs.results_shape import results_file_problem
from harness.redact import dumps

RESULTS_GLOB = "results_*.json"


class RunConfig(TypedDict, total=False):
    """The results' `config`: what the run ran and how (`harness.run_config.run_config` makes it; `harness merge`
    makes a merged run's from its shards'), every secret redacted."""

    model: str  # the backend
    alias: str | None
    alias_info: dict[str, Any] | None
    model_name: str
    model_name_sanitized: str
    model_args: dict[str, str]
    model_identity: dict[str, Any]
    batch_size: int | str  # "auto": searched, the size that fit in `batch_sizes`
    max_batch_tokens: int | None
    limit: float | None
    seed: int
    shard: str | None
    gen_kwargs: dict[str, Any]
    metadata: dict[str, Any]
    data_dir: str | None
    trust_unverified_data: bool
    include_path: list[str]
    log_samples: bool
    predict_only: bool
    system_instruction: str | None
    random_seed: int | None  # lm-eval's four seeds, and its other flags (`harness.lm_eval_flags.CompatFlags`)
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
    judge: dict[str, Any]
    argv: list[str]  # the command line, redacted
    merged_from: list[dict[str, Any]]  # `harness merge`: each shard's folder, results file and command line


# Functional syntax: lm-eval's `n-shot` and `n-samples` are no Python names.
ResultsFile = TypedDict(
    "ResultsFile",
    {
        "results": dict[str, dict[str, Any]],  # task -> alias and "<metric>,none" / "<metric>_stderr,none" values
        "groups": dict[str, dict[str, Any]],
        "group_subtasks": dict[str, list[str]],
        "sample_counts": dict[str, dict[str, int]],  # task -> sample_len, n_scored, n_<status>, ...
        "group_aggregation": dict[str, dict[str, Any]],  # group -> the rule of each aggregate, members used and missed
        "configs": dict[str, dict[str, Any]],  # task -> its YAML config, metadata and generation settings
        "versions": dict[str, Any],
        "n-shot": dict[str, int],
        "higher_is_better": dict[str, dict[str, bool]],
        "n-samples": dict[str, dict[str, int]],  # task -> original, effective
        "breakdowns": dict[str, Any],  # task -> per cell, per depth, ...
        "references": dict[str, dict[str, float | str]],  # task -> levels to compare with (its chance)
        "usage": dict[str, dict[str, int]],
        "datasets": dict[str, dict[str, Any]],  # task -> the data it ran on
        "task_hashes": dict[str, str],
        "config": RunConfig,
        "model_name": str | None,
        "model_name_sanitized": str | None,
        "chat_template": str | None,
        "chat_template_sha": str | None,
        "package_versions": dict[str, str | None],
        "git_hash": str | None,
        "date": float,
        "total_evaluation_time_seconds": str,
        "start_time": float,
        "end_time": float,
        "model_source": str | None,
        "system_instruction": str | None,
        "system_instruction_sha": str | None,
        "fewshot_as_multiturn": bool,
        "failed_samples": NotRequired[dict[str, int]],  # task -> samples that failed with errors
        "partial": NotRequired[dict[str, Any]],  # a --shard run's: which shard, and the tasks' documents
        "predict_only": NotRequired[str],  # a --predict_only run's note
    },
)


def strict_number(value: float) -> float | str:
    """NaN as "N/A" (lm-eval's habit), an infinity as "inf" / "-inf": the file stays strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return "N/A" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def _strict(value: Any) -> Any:
    """`value` with every NaN or infinity (a breakdown's, a group's) written as `strict_number` writes it."""
    if isinstance(value, float):
        return strict_number(value)
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_strict(v) for v in value]
    return value


def write_results(results: ResultsFile, model_dir: Path, date_id: str | None = None) -> Path:
    """`results_<date_id>.json` (the date names the run's sample logs too, as lm-eval's): strict JSON, which
    every reader parses (no NaN or Infinity tokens)."""
    stamp = date_id or datetime.now().isoformat().replace(":", "-")
    return write_text(model_dir / f"results_{stamp}.json", dumps(_strict(results), indent=2, ensure_ascii=False))


def read_results_file(path: Path) -> ResultsFile:
    """A results file, parsed and checked to have the shape the report reads (`results_shape`), or a
    `UserError` naming the file and what was expected."""
    try:
        data = contract.loads_json(path.read_bytes().decode("utf-8"))
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
    if problem:
        raise UserError(f"{path}: not a results file the report can read: {problem}")
    return data  # its shape checked by results_file_problem
