"""`--data_dir hf://...` trusts the local Hub cache no more than the builders do (issue 41, item 6): the manifest
and card of a snapshot are read only as links into the repo's own blobs whose bytes hash to their names (the
shared `contract.verified_blob`); the data files are then verified against that manifest. A manifest changed in
the cache after the download, or linking out of it, is one line naming the file and what to do, exit 2."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.hub_cache import COMMIT, fill_hub_cache

pytestmark = pytest.mark.slow  # harness runs in child processes against a local Hub cache

TASK = "mmneedle_m1_n2_k1_neg"


def _cache(tmp_path: Path, data_dir: Path) -> Path:
    """acme/mmneedle at v1.0.0: the synthetic build, its small JSON and Markdown files named by git's blob hash as
    the Hub names files it keeps out of LFS."""
    build = data_dir / "mmneedle"
    files = {p.relative_to(build).as_posix(): p for p in sorted(build.rglob("*")) if p.is_file()}
    plain = {name for name in files if name.endswith((".json", ".md"))}
    return fill_hub_cache(tmp_path / "hub", "acme/mmneedle", files, revision="v1.0.0", plain=plain)


def _harness(harness_script: str, env: dict[str, str], out: Path) -> subprocess.CompletedProcess[str]:
    args = ["--tasks", TASK, "--model", "constant", "--model_args", "answer=-1", "--no_progress"]
    return subprocess.run(
        [harness_script, *args, "--data_dir", "hf://acme/mmneedle@v1.0.0", "--output_path", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_manifest_changed_in_the_cache_after_the_download_is_refused_in_one_line(
    tmp_path: Path, data_dir: Path, harness_script: str, script_env: dict[str, str]
) -> None:
    snapshot = _cache(tmp_path, data_dir)
    env = {**script_env, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}
    good = _harness(harness_script, env, tmp_path / "good")
    assert good.returncode == 0, good.stderr
    (results,) = (tmp_path / "good" / "constant").glob("results_*.json")
    assert json.loads(results.read_text())["datasets"][TASK]["commit"] == COMMIT

    manifest = (snapshot / "build_manifest.json").resolve()
    changed = json.loads(manifest.read_text())
    changed["environment"] = {"python": "0.0"}  # still a manifest naming the same files: only its hash tells
    manifest.write_text(json.dumps(changed))
    refused = _harness(harness_script, env, tmp_path / "bad")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    (line,) = [line for line in refused.stderr.splitlines() if "cannot get" in line]
    assert "cannot get hf://acme/mmneedle@v1.0.0: " in line and "build_manifest.json: its blob's bytes do not" in line
    assert "git blob hash" in line and "remove" in line
    assert not list((tmp_path / "bad").glob("*/results_*.json"))


def test_a_manifest_linking_out_of_the_cache_is_refused_in_one_line(
    tmp_path: Path, data_dir: Path, harness_script: str, script_env: dict[str, str]
) -> None:
    snapshot = _cache(tmp_path, data_dir)
    outside = tmp_path / "outside.json"
    outside.write_bytes((snapshot / "build_manifest.json").read_bytes())
    (snapshot / "build_manifest.json").unlink()
    (snapshot / "build_manifest.json").symlink_to(outside)
    env = {**script_env, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}
    refused = _harness(harness_script, env, tmp_path / "out")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    assert f"build_manifest.json: links out of the repo's cache (to {outside})" in refused.stderr


def test_a_hub_build_without_network_is_one_line_when_no_name_resolves(
    tmp_path: Path, harness_script: str, script_env: dict[str, str]
) -> None:
    """The README's run read from the Hub on a machine without network (no DNS): one line, no traceback. (A guard:
    the harness already answered this in one line; the builders did not, issue 44 item 1.)"""
    env = {k: v for k, v in script_env.items() if k != "HF_HUB_OFFLINE"}
    env |= {"HF_HUB_CACHE": str(tmp_path / "hub"), "HF_ENDPOINT": "http://hub.invalid", "HF_HUB_OFFLINE": "0"}
    run = _harness(harness_script, env, tmp_path / "out")
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    (line,) = [line for line in run.stderr.splitlines() if "cannot get" in line]
    assert "cannot get hf://acme/mmneedle@v1.0.0: the Hub cannot be reached (no network?)" in line


@pytest.mark.parametrize("planted", ["build_manifest.json", "data file"])
def test_a_fifo_planted_in_the_hub_cache_is_refused_at_once(
    tmp_path: Path, data_dir: Path, harness_script: str, script_env: dict[str, str], planted: str
) -> None:
    """A FIFO as the manifest's blob, or as a data file's: refused in one line, never waited on (issue 49, item 3:
    the blob was opened with a blocking `open` before its `fstat`)."""
    import os

    snapshot = _cache(tmp_path, data_dir)
    name = planted if planted != "data file" else sorted((snapshot / "m1_n2_k1").glob("*.parquet"))[0]
    blob = (snapshot / name).resolve()
    blob.unlink()
    os.mkfifo(blob)
    env = {**script_env, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}
    run = subprocess.run(
        [harness_script, "--tasks", TASK, "--model", "constant", "--model_args", "answer=-1", "--no_progress"]
        + ["--data_dir", "hf://acme/mmneedle@v1.0.0", "--output_path", str(tmp_path / "out")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    (line,) = [line for line in run.stderr.splitlines() if "error" in line]
    assert "a FIFO, not a regular file" in line, line
