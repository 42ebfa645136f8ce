"""Publish a built dataset folder to the Hugging Face Hub as a tagged version.

`create_repo(repo_type="dataset", exist_ok=True)`, then `upload_folder` (the folder is already in
the Hub's layout: README.md with `configs:`, `<config>/test-*.parquet` (and the image table's, for a
shared-storage build), build_manifest.json),
then `create_tag` on the commit the upload returned, so the tag names exactly what was uploaded.
Parquet files of an earlier version that this build does not have are deleted in the same upload,
or the README's `<config>/test-*` globs would pick them up.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from builders.core.contract import MANIFEST_NAME, data_files
from builders.core.errors import BuildError
from builders.core.estimate import human_bytes
from builders.core.release_paths import release_path
from builders.core.staging import read_manifest

SEMVER_TAG = re.compile(r"^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
STALE_PATTERNS = ["*.parquet"]


@dataclass(frozen=True)
class PushPlan:
    folder: Path
    repo: str
    tag: str
    private: bool
    files: list[tuple[str, int]]  # path in repo, bytes
    commit_message: str
    caveats: dict[str, str] = field(default_factory=dict)  # the manifest's: synthetic, limited, ...

    @property
    def total_bytes(self) -> int:
        return sum(size for _, size in self.files)


def plan_push(folder: str | Path, repo: str, tag: str, private: bool = False) -> PushPlan:
    """Validate the arguments and the folder; list what would be uploaded. No network."""
    folder = Path(folder)
    if not REPO_ID.match(repo):
        raise BuildError(f"bad --repo {repo!r}: expected ORG/NAME")
    if not SEMVER_TAG.match(tag):
        raise BuildError(f"bad --tag {tag!r}: expected a semantic version such as v1.0.0")
    if not folder.is_dir():
        raise BuildError(f"dataset folder not found: {folder}")
    manifest = read_manifest(folder)
    if manifest is None:
        raise BuildError(f"{folder} is not a complete build: {MANIFEST_NAME} is missing")
    if not (folder / "README.md").is_file():
        raise BuildError(f"{folder} is not a complete build: README.md is missing")
    # Every file that would be uploaded is inside the folder: a link in a build made elsewhere must not publish
    # a file of this machine.
    where = f"{folder / MANIFEST_NAME}: file"
    files: list[tuple[str, int]] = [("README.md", release_path(folder, "README.md", where).stat().st_size)]
    for entry in data_files(manifest):
        path = release_path(folder, entry.get("path"), where)
        if not path.is_file():
            raise BuildError(f"{folder} is not a complete build: {entry['path']} is missing")
        if path.stat().st_size != entry["num_bytes"]:
            raise BuildError(
                f"{folder} is not a complete build: {entry['path']} has {path.stat().st_size} bytes, "
                f"the manifest says {entry['num_bytes']}"
            )
        files.append((entry["path"], entry["num_bytes"]))
    files.append((MANIFEST_NAME, release_path(folder, MANIFEST_NAME, where).stat().st_size))
    message = f"{manifest.get('benchmark', 'dataset')} {tag} (builder {manifest.get('builder_version', '?')}, content {manifest.get('content_hash', '?')[:19]})"
    caveats = manifest.get("caveats")
    return PushPlan(folder, repo, tag, private, files, message, dict(caveats) if isinstance(caveats, dict) else {})


def describe_plan(plan: PushPlan) -> list[str]:
    from huggingface_hub import constants

    visibility = "private" if plan.private else "public"
    lines = [
        f"would push {plan.folder} to {constants.ENDPOINT}/datasets/{plan.repo} ({visibility}), then tag {plan.tag}"
    ]
    width = max(len(path) for path, _ in plan.files)
    lines += [f"  {path:<{width}}  {human_bytes(size):>10}" for path, size in plan.files]
    lines.append(f"{len(plan.files)} files, {human_bytes(plan.total_bytes)}; commit message: {plan.commit_message!r}")
    lines.append(f"remote files matching {STALE_PATTERNS} that this build does not have would be deleted")
    return lines


def caveat_warnings(plan: PushPlan) -> list[str]:
    """What a version tag would hide: a synthetic or limited build (its manifest's `caveats`) is not the paper's
    data, and whoever loads the tag should know it before citing numbers on it."""
    if not plan.caveats:
        return []
    lines = [
        f"warning: {plan.folder} is a {' and '.join(plan.caveats)} build; tagging it {plan.tag} publishes data "
        "whose scores are not comparable with the paper's:"
    ]
    lines += [f"warning:   {kind}: {text}" for kind, text in plan.caveats.items()]
    lines.append("warning: its card says so at the top and in its YAML (`caveats`, tags)")
    return lines


def push_failure(repo: str, exc: BaseException) -> BuildError:
    """One line for a push the Hub did not take, saying why and what to do, as a Hub source's failure says it
    (`builders.core.hub_errors`); nothing was tagged."""
    from huggingface_hub import constants

    from builders.core.hub_errors import NO_NETWORK, explain, root_cause

    if constants.HF_HUB_OFFLINE:
        return BuildError(
            f"push to {repo} failed: HF_HUB_OFFLINE=1 forbids talking to the Hub; unset it and push again"
        )
    reason, todo = explain(root_cause(exc), repo, "main")
    if todo == NO_NETWORK or "run it again" in todo:
        todo = "connect to the network (or point HF_ENDPOINT at a mirror) and push again"
    return BuildError(f"push to {repo} failed: {reason}; {todo} (nothing was tagged)")


def push(
    folder: str | Path,
    repo: str,
    tag: str,
    private: bool = False,
    dry_run: bool = False,
    token: str | None = None,
    echo: Callable[[str], None] = print,
    warn: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> PushPlan:
    plan = plan_push(folder, repo, tag, private)
    for line in caveat_warnings(plan):
        warn(line)
    if dry_run:  # the plan is the output; a push says what it pushed once the Hub took it, or why not in one line
        for line in describe_plan(plan):
            echo(line)
        return plan
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.utils import httpx as hub_httpx

    api = HfApi(token=token)
    try:
        api.create_repo(repo, repo_type="dataset", private=private, exist_ok=True)
        commit = api.upload_folder(
            repo_id=repo,
            repo_type="dataset",
            folder_path=plan.folder,
            allow_patterns=[path for path, _ in plan.files],
            delete_patterns=STALE_PATTERNS,
            commit_message=plan.commit_message,
        )
        api.create_tag(repo, tag=tag, revision=commit.oid, repo_type="dataset", tag_message=plan.commit_message)
    except (OSError, hub_httpx.HTTPError, HfHubHTTPError) as exc:  # HTTP errors, offline mode, no connection
        raise push_failure(repo, exc) from None
    echo(
        f"pushed {repo} at commit {commit.oid}, tagged {tag}: {len(plan.files)} files, {human_bytes(plan.total_bytes)}"
    )
    return plan
