"""`--hf_hub_log_args`: upload a run's results file (and sample logs) to a Hub dataset repo, as lm-eval's
`EvaluationTracker` does: `ORG/NAME`, one folder per model (`<model folder>/results_<date>.json`).

The arguments are checked before the run starts; an upload that fails (offline, no permission) ends the run with
one line naming the repo and the reason, after the results are saved locally.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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
    """The upload `--hf_hub_log_args` (parsed: `harness.models.args.parse_kv`) asks for, or None when it asks for
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
