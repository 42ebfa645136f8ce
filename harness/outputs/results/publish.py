"""A run's results published once they are saved, to the trackers lm-eval publishes to.

`--hf_hub_log_args`: upload a run's results file (and sample logs) to a Hub dataset repo, as lm-eval's
`EvaluationTracker` does: `ORG/NAME`, one folder per model (`<model folder>/results_<date>.json`).

The arguments are checked before the run starts; an upload that fails (offline, no permission) ends the run with
one line naming the repo and the reason, after the results are saved locally.

`--wandb_args`: a run's results logged to Weights & Biases, as lm-eval's `WandbLogger` logs them: the run's
config (the task configs and the command's settings), each task's and group's metrics as `<task>/<metric>`, the
results table (`evaluation/eval_results`, `evaluation/group_eval_results`) and the results file as an artifact.

What is logged is the results as written (every secret already redacted); wandb's own collection of the command
line, the code and the git state is turned off, since a command line may hold a key. `mode=offline` (or
WANDB_MODE=offline) writes the run under WANDB_DIR to `wandb sync` later.
"""

from __future__ import annotations

import importlib.util
import json
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import UploadError, UserError, first_line, suggest

DEFAULT_REPO_NAME = "mmlongeval-results"
KEYS = (
    "hub_results_org",
    "results_repo_name",
    "details_repo_name",
    "hub_repo_name",  # lm-eval's older name for both repos (its EvaluationTracker still reads it)
    "push_results_to_hub",
    "push_samples_to_hub",
    "public_repo",
    "token",
)
# lm-eval's keys for leaderboard cards: accepted so its command lines run, with no meaning for a results upload.
IGNORED_KEYS = ("leaderboard_url", "point_of_contact", "gated")


@dataclass(frozen=True)
class HubTarget:
    repo_id: str
    push_samples: bool
    private: bool
    token: str | None  # None: huggingface_hub's own ($HF_TOKEN, `hf auth login`)

    @property
    def url(self) -> str:
        return f"https://huggingface.co/datasets/{self.repo_id}"


def _flag(args: dict[str, str], key: str, default: bool) -> bool:
    value = args.get(key)
    if value is None:
        return default
    if value.lower() in ("true", "1", "yes"):
        return True
    if value.lower() in ("false", "0", "no"):
        return False
    raise UserError(f"--hf_hub_log_args {key}={value!r}: expected True or False")


def parse_hub_target(args: dict[str, str]) -> HubTarget | None:
    """The upload `--hf_hub_log_args` (parsed: `harness.models.facts.args.parse_kv`) asks for, or None when it asks for
    none."""
    for key in args:
        if key not in KEYS + IGNORED_KEYS:
            raise UserError(f"--hf_hub_log_args: {suggest(key, set(KEYS + IGNORED_KEYS), 'key')}")
    push_results, push_samples = _flag(args, "push_results_to_hub", False), _flag(args, "push_samples_to_hub", False)
    if not (push_results or push_samples):
        return None
    org = args.get("hub_results_org")
    if not org:
        raise UserError(
            "--hf_hub_log_args: hub_results_org=ORG is needed (the user or organization the results repo belongs to)"
        )
    # One repo holds results and samples here: the first name given, results' before lm-eval's others.
    named = (args.get(key) for key in ("results_repo_name", "details_repo_name", "hub_repo_name"))
    name = next((value for value in named if value), DEFAULT_REPO_NAME)
    return HubTarget(f"{org}/{name}", push_samples, not _flag(args, "public_repo", False), args.get("token"))


def upload_results(target: HubTarget, model_dir: Path, files: list[Path]) -> str:
    """Upload `files` (results, and sample logs when asked) under the model's folder name; the repo's URL.
    A failure is an UploadError (exit 1) naming the repo, the reason and where the results are kept."""
    from huggingface_hub import HfApi

    api = HfApi(token=target.token)
    try:
        api.create_repo(target.repo_id, repo_type="dataset", private=target.private, exist_ok=True)
        for path in files:
            api.upload_file(
                path_or_fileobj=str(path),
                path_in_repo=f"{model_dir.name}/{path.name}",
                repo_id=target.repo_id,
                repo_type="dataset",
            )
    except Exception as err:  # offline, refused, unknown org: the results are safe on disk, say so in one line
        reason = first_line(err)
        raise UploadError(f"results not uploaded to {target.url}: {reason}; they are saved in {model_dir}") from None
    return target.url


TABLE_COLUMNS: list[str | int] = ["Task", "Version", "Filter", "n-shot", "Metric", "Value", "Stderr"]


def check_wandb() -> None:
    if importlib.util.find_spec("wandb") is None:
        raise UserError("--wandb_args logs to Weights & Biases, which is not installed: pip install -e '.[wandb]'")


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def metric_rows(
    entries: dict[str, dict[str, Any]], versions: Mapping[str, object], n_shot: Mapping[str, object]
) -> list[list[Any]]:
    """The results table's rows: one per task (or group) and scored metric, its stderr beside it."""
    rows = []
    for task, entry in entries.items():
        for key, value in entry.items():
            if "," not in key or key.split(",")[0].endswith("_stderr") or not _number(value):
                continue
            metric, _, filt = key.partition(",")
            stderr = entry.get(f"{metric}_stderr,{filt}")
            rows.append(
                [
                    task,
                    versions.get(task),
                    filt,
                    n_shot.get(task, 0),
                    metric,
                    value,
                    stderr if _number(stderr) else None,
                ]
            )
    return rows


def summary(results: Mapping[str, Any]) -> dict[str, float]:
    """`<task>/<metric>` for every scored metric of the tasks and groups (lm-eval drops the `,none` filter)."""
    out = {}
    for section in ("results", "groups"):
        for task, entry in results.get(section, {}).items():
            for key, value in entry.items():
                if "," in key and _number(value):
                    metric, _, filt = key.partition(",")
                    out[f"{task}/{metric}" + ("" if filt == "none" else f",{filt}")] = value
    return out


def log_results(
    results: Mapping[str, Any], init_args: dict[str, Any], config_args: dict[str, Any], saved: Path | None = None
) -> str:
    """Log `results` to a W&B run (the one already open, else one `wandb.init(**init_args)` opens); returns where
    it went (the run's folder, or its URL online). W&B's own failure (no key configured, its server out of reach,
    a project it refuses) is an UploadError (exit 1) naming the reason and `saved`, where the results already are."""
    import wandb

    try:
        return _log(wandb, results, init_args, config_args)
    except (wandb.errors.Error, OSError) as err:
        reason = first_line(err).rstrip(".")
        if saved is not None:
            kept = f"they are saved in {saved}; the same command again resumes every sample from the journal"
        else:
            kept = "they are printed above only (no --output_path)"
        raise UploadError(
            f"results not logged to Weights & Biases: {reason}; {kept}. Configure a key (`wandb login` or "
            "WANDB_API_KEY), or add mode=offline to --wandb_args and `wandb sync` the run later"
        ) from None


def _log(wandb: Any, results: Mapping[str, Any], init_args: dict[str, Any], config_args: dict[str, Any]) -> str:
    init_args = dict(init_args)
    step = init_args.pop("step", None)
    settings = wandb.Settings(x_disable_meta=True, x_disable_stats=True, disable_code=True, disable_git=True)
    run = wandb.run or wandb.init(settings=settings, **init_args)
    run.config.update(
        {"task_configs": results.get("configs", {}), "cli_configs": results.get("config", {}), **config_args},
        allow_val_change=True,
    )
    metrics = summary(results)
    tables = {
        "evaluation/eval_results": metric_rows(
            results.get("results", {}), results.get("versions", {}), results.get("n-shot", {})
        )
    }
    if results.get("groups"):
        tables["evaluation/group_eval_results"] = metric_rows(results["groups"], results.get("versions", {}), {})
    logged: dict[str, Any] = {
        **metrics,
        **{name: wandb.Table(columns=TABLE_COLUMNS, data=rows) for name, rows in tables.items()},
    }
    run.log(logged, step=int(step) if step is not None else None)
    for key, value in metrics.items():
        run.summary[key] = value
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "results.json"
        path.write_text(json.dumps(results, indent=2, default=str, ensure_ascii=False), encoding="utf-8")
        artifact = wandb.Artifact("results", type="eval_results")
        artifact.add_file(str(path))
        run.log_artifact(artifact)
        where = getattr(run, "url", None) or run.dir
        run.finish()
    return str(where)
