"""A pushed build read from the Hub, with no YAML edit: `--data_dir hf://ORG/NAME@REVISION`, or the task's
`metadata.hub_repo` / `hub_revision`. No network here: the Hub cache holds the snapshot as
`snapshot_download` writes it (`datasets--ORG--NAME/snapshots/<commit>/`, `refs/<revision>`), read with
`HF_HUB_OFFLINE=1`, which is exactly what a machine that downloaded it once sees."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.hub_cache import fill_hub_cache
from tests.support.run_setups import needle_task_yaml, only_results, run_args

pytestmark = pytest.mark.slow  # harness runs in child processes against a local Hub

COMMIT = "0123456789abcdef0123456789abcdef01234567"
TASK = "mmneedle_m1_n2_k1_neg"


@pytest.fixture
def hub_cache(tmp_path: Path, data_dir: Path) -> Path:
    """A Hub cache holding acme/mmneedle at tag v1.0.0: the synthetic build as `builders push` uploads it, laid out
    as `snapshot_download` writes it."""
    cache = tmp_path / "hub"
    _linked_snapshot(cache, data_dir / "mmneedle", "mmneedle")
    return cache


def _harness(harness_script: str, env: dict[str, str], *args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [harness_script, *map(str, args), "--no_progress"], env=env, capture_output=True, text=True, timeout=300
    )


def test_data_dir_names_a_hub_repo_and_revision(
    tmp_path: Path, hub_cache: Path, harness_script: str, script_env
) -> None:
    env = {**script_env, "HF_HUB_CACHE": str(hub_cache), "HF_HUB_OFFLINE": "1"}
    run = _harness(harness_script, env, *_minus_one(TASK, "hf://acme/mmneedle@v1.0.0", out=tmp_path / "out"))
    assert run.returncode == 0, run.stderr
    results = only_results(tmp_path / "out" / "constant")
    data = results["datasets"][TASK]
    assert (data["location"], data["revision"], data["commit"]) == ("hf://acme/mmneedle@v1.0.0", "v1.0.0", COMMIT)
    assert data["verified_files"] and results["config"]["data_dir"] == "hf://acme/mmneedle@v1.0.0"
    assert results["results"][TASK]["existence_acc,none"] == 1.0

    absent = _harness(harness_script, env, *_minus_one(TASK, "hf://acme/mmneedle@v9.9.9"))
    assert absent.returncode == 2 and "cannot get hf://acme/mmneedle@v9.9.9" in absent.stderr
    assert "Traceback" not in absent.stderr
    other = _harness(harness_script, env, *_minus_one(TASK, "hf://acme/mmlongbench"))
    assert other.returncode == 2 and "holds dataset 'mmlongbench', the task reads 'mmneedle'" in other.stderr


def test_a_tasks_hub_repo_is_used_without_local_data(
    tmp_path: Path, hub_cache: Path, harness_script: str, script_env
) -> None:
    tasks = tmp_path / "t"
    tasks.mkdir()
    (tasks / "t.yaml").write_text(
        needle_task_yaml("from_hub", "metadata:\n  hub_repo: acme/mmneedle\n  hub_revision: v1.0.0\n")
    )
    env = {**script_env, "HF_HUB_CACHE": str(hub_cache), "HF_HUB_OFFLINE": "1", "HOME": str(tmp_path / "home")}
    run = _harness(
        harness_script, env, *_minus_one("from_hub", None, include_path=tasks, out=tmp_path / "out"), "--limit", "20"
    )
    assert run.returncode == 0, run.stderr
    results = only_results(tmp_path / "out" / "constant")
    assert results["results"]["from_hub"]["exact_match,none"] == 8 / 20  # 12 positives, then 8 negatives
    assert results["datasets"]["from_hub"]["location"] == "hf://acme/mmneedle@v1.0.0"
    assert results["datasets"]["from_hub"]["commit"] == COMMIT


def _minus_one(tasks: str, data_dir: str | None, **flags: Path) -> tuple[str, ...]:
    """The arguments of a run of `tasks` by the constant model answering -1, on `data_dir` (`flags`: `run_args`')."""
    return run_args(tasks, "constant", model_args="answer=-1", data_dir=data_dir, **flags)


def _linked_snapshot(cache: Path, build: Path, repo: str) -> Path:
    """A Hub cache holding the build `build` as acme/REPO at tag v1.0.0, laid out as `snapshot_download` writes it:
    each file a link into the repo's `blobs/`."""
    files = {str(p.relative_to(build)): p for p in sorted(build.rglob("*")) if p.is_file()}
    return fill_hub_cache(cache, f"acme/{repo}", files, revision="v1.0.0", commit=COMMIT)


def test_a_hub_snapshot_is_verified_through_its_links_and_one_without_a_manifest_is_refused(
    tmp_path: Path, data_dir: Path, harness_script: str, script_env
) -> None:
    cache = tmp_path / "hub"
    _linked_snapshot(cache, data_dir / "mmneedle", "mmneedle")
    unbuilt = tmp_path / "unbuilt"
    shutil.copytree(data_dir / "mmneedle", unbuilt)
    (unbuilt / "build_manifest.json").unlink()  # a Hub dataset that is not one of our builds
    _linked_snapshot(cache, unbuilt, "mmneedle2")
    env = {**script_env, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    run = _harness(harness_script, env, *_minus_one(TASK, "hf://acme/mmneedle@v1.0.0", out=tmp_path / "out"))
    assert run.returncode == 0, run.stderr
    data = only_results(tmp_path / "out" / "constant")["datasets"][TASK]
    manifest = json.loads((data_dir / "mmneedle" / "build_manifest.json").read_text())
    assert data["verification"] == "verified" and data["verified_files"] == [
        {"path": f["path"], "sha256": f["sha256"]} for f in manifest["configs"]["m1_n2_k1"]["files"]
    ]

    tasks = tmp_path / "t"
    tasks.mkdir()
    (tasks / "t.yaml").write_text(needle_task_yaml("other_hub", dataset="mmneedle2"))
    other = _minus_one("other_hub", "hf://acme/mmneedle2@v1.0.0", include_path=tasks)
    refused = _harness(harness_script, env, *other)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "hf://acme/mmneedle2@v1.0.0: cannot verify this data: no build manifest" in refused.stderr
    trusted = _harness(harness_script, env, *other, "--trust_unverified_data", "--output_path", tmp_path / "out2")
    assert trusted.returncode == 0, trusted.stderr
    assert only_results(tmp_path / "out2" / "constant")["datasets"]["other_hub"]["verification"] == "unverified"


def test_a_hub_build_that_cannot_be_had_is_named_once_with_a_hint_that_fits(
    tmp_path: Path, harness_script: str, script_env
) -> None:
    """Offline (HF_HUB_OFFLINE=1) or without network, with an empty Hub cache: one message for the run, whatever
    the number of tasks, saying why and how to build the data here instead (never `--out hf://...`)."""
    empty = {**script_env, "HF_HUB_CACHE": str(tmp_path / "empty_hub")}
    args = run_args("mmneedle_k1", "random", data_dir="hf://acme/mmneedle@v1.0.0")
    offline = _harness(harness_script, empty, *args)
    assert offline.returncode == 2 and "Traceback" not in offline.stderr
    assert offline.stderr.count("cannot get hf://acme/mmneedle@v1.0.0") == 1
    assert "(read by 14 tasks)" in offline.stderr and "HF_HUB_OFFLINE" in offline.stderr
    assert "--out hf://" not in offline.stderr and "tasks have no data" not in offline.stderr
    (hint,) = [line for line in offline.stderr.splitlines() if "builders build" in line]
    assert hint.startswith("or build them here: builders build mmneedle ") and "--configs m1_n2_k1 m1_n4_k1" in hint
    assert hint.endswith("--out data (or --source synthetic for the offline stand-in), and pass --data_dir data")

    # No network: a Hub address nothing answers at (a closed local port), offline mode off.
    unreachable = {**empty, "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": "http://127.0.0.1:9"}
    one_task = _harness(harness_script, unreachable, *run_args(TASK, "random", data_dir="hf://acme/mmneedle@v1.0.0"))
    assert one_task.returncode == 2 and "Traceback" not in one_task.stderr
    assert "cannot get hf://acme/mmneedle@v1.0.0: the Hub cannot be reached (no network?)" in one_task.stderr
    assert "HF_HUB_OFFLINE=1 forbids" not in one_task.stderr
    assert (
        "or build it here: builders build mmneedle --source coco=COCO_DIR --configs m1_n2_k1 --out data"
        in one_task.stderr
        and "--out hf://" not in one_task.stderr
    )


def test_a_data_dir_that_looks_like_a_repo_id_is_answered_with_hf_prefix(
    tmp_path: Path, harness_script: str, script_env
) -> None:
    args = [harness_script, *run_args("mmneedle_k1", "random", data_dir="acme/mmneedle"), "--no_progress"]
    run = subprocess.run(args, env=script_env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.count("write --data_dir hf://acme/mmneedle") == 1 and "no such folder" in run.stderr
    # A folder that is there is a folder: no Hub hint, the usual missing-data message.
    (tmp_path / "acme" / "mmneedle").mkdir(parents=True)
    local = subprocess.run(args, env=script_env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert local.returncode == 2 and "hf://" not in local.stderr
    assert "dataset 'mmneedle' not found; looked in acme/mmneedle/mmneedle (read by 14 tasks)" in local.stderr
