"""The results' `config` (lm-eval's key): what a run ran, and how, from its plan (`harness.run.plan`) and what its
model said of itself, with every secret redacted."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from builders.core import contract

if TYPE_CHECKING:
    from harness.api import Model
    from harness.config.benchmark import BenchmarkDeclaration
    from harness.outputs.results.results_file import RunConfig
    from harness.run.plan import RunPlan


def cache_stats(model: Model) -> dict[str, Any]:
    """Where the response cache in front of `model` lives and what it spared (`cache: None` without one)."""
    from harness.running.cache import CachingModel

    if not isinstance(model, CachingModel):
        return {"cache": None}
    return {
        "cache": str(model.cache.path),
        "cache_hits": model.cache_hits,
        "model_calls": model.model_calls,
        "requests_sent": model.requests_sent,
    }


def _data_dir_label(data_dir: str | None) -> str | None:
    """--data_dir as the results record it: a local folder made absolute, a Hub location as given."""
    if data_dir is None or str(data_dir).startswith(contract.HUB_PREFIX):
        return data_dir
    try:
        return str(contract.expanded(data_dir).resolve())
    except ValueError:  # said by the data's own lookup: recorded as given
        return data_dir


def run_config(plan: RunPlan, identity: dict[str, Any], stats: dict[str, Any]) -> RunConfig:
    """The results' `config`: what was run, and how, with every secret redacted."""
    from harness.models.aliases import alias_benchmarks
    from harness.outputs.results.results import sanitize_model_name
    from harness.redact import redact_mapping

    model_args = plan.model.args
    checkpoint = model_args.get("pretrained") or model_args.get("model") or plan.model.backend  # or served model
    return {
        "model": plan.model.backend,
        "alias": plan.model.alias,
        "alias_info": alias_info(
            plan.model.alias, alias_benchmarks(plan.model.alias, plan.selection.tasks, plan.index), model_args
        ),
        "model_name": plan.model.alias or checkpoint,
        "model_name_sanitized": sanitize_model_name(checkpoint),  # lm-eval's: the checkpoint's name as a folder
        "model_args": redact_mapping(model_args),
        "model_identity": redact_mapping(identity),
        "batch_size": plan.starting_batch_size,
        "max_batch_tokens": plan.options.max_batch_tokens,
        "limit": plan.options.limit,
        "seed": plan.options.sampling_seed,
        "shard": str(plan.options.shard) if plan.options.shard else None,
        "gen_kwargs": plan.options.gen_kwargs,
        "metadata": plan.options.metadata,
        "data_dir": _data_dir_label(plan.options.data_dir),
        "trust_unverified_data": plan.options.trust_unverified_data,
        "include_path": [str(p.resolve()) for p in plan.include_paths],
        "log_samples": plan.sample_logs,
        # the lm-eval settings and the model's statistics: keys RunConfig declares, built as plain dicts
        **_lm_eval_settings(plan, stats.get("backend_stats") or {}),  # type: ignore[typeddict-item]
        **stats,
        "argv": plan.command(),
        "run_file": plan.run_file,
    }


def _lm_eval_settings(plan: RunPlan, backend_stats: dict[str, Any]) -> dict[str, Any]:
    """What lm-eval's flags did: `batch_size: auto` with the size that fit (`batch_sizes`, as lm-eval records it),
    `predict_only`, the system instruction."""
    from harness.run.lm_eval_flags import recorded_flags

    options = plan.options
    searched = backend_stats.get("auto_batch") if options.auto_batch else None
    settings: dict[str, Any] = {
        "predict_only": options.predict_only,
        "system_instruction": options.system_instruction,
        **recorded_flags(options, options.seeds),
    }
    if options.auto_batch:
        settings.update(
            batch_size="auto",
            max_batch_size=options.max_batch_size,
            batch_sizes=[searched["chosen"]] if searched else [],
        )
    return settings


def alias_info(
    alias: str | None, benchmarks: Sequence[BenchmarkDeclaration] = (), args: Mapping[str, str] | None = None
) -> dict[str, Any] | None:
    """What the alias says of the model beyond its arguments (its training window, its wrapper's rules), with the
    paper models it runs in these benchmarks (the run's) and how, and the prompt style its resolved `args` name."""
    from harness.models.aliases import ALIASES
    from harness.models.aliases import alias_info as described

    return described(alias, benchmarks, args) if alias is not None and alias in ALIASES else None
