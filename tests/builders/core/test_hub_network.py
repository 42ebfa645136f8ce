"""Every network failure of a Hub source is one line (issue 44, item 1): the README's real run, `builders build
mmlongbench --source hf://ZhaoweiWang/MMLongBench ...`, run as a user runs it (a fresh process, HF_HUB_OFFLINE
unset) against a local server standing in for the Hub (`tests.support.hub_server`) that fails each way the real
one can, or against an address nothing answers at or no name resolves to. Each failure: exit 2, one line naming
the source and the revision, why, and what to do; nothing written in --out (the folder is not even left)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.builder_fixtures import write_coco
from tests.support.hub_server import HubServer
from tests.support.paths import PROJECT

pytestmark = pytest.mark.slow  # each case is a fresh `builders` process against a local server (3-20 s)

REPO = "ZhaoweiWang/MMLongBench"
SOURCE = f"hf://{REPO}"


@pytest.fixture(scope="module")
def release_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The two files `niah_vh_single_8k` reads, as the Hub publishes them."""
    from builders.mmlongbench.fixture import write_fixture

    root = write_fixture(tmp_path_factory.mktemp("mmlb_network") / "release", archives=True)
    return {
        "0_mmlb_data.tar.gz": (root / "mmlb_data.tar.gz").read_bytes(),
        "2_vh_image.tar.gz": (root / "vh.tar.gz").read_bytes(),
    }


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed when the block ends: nothing listens there


def builders(tmp_path: Path, endpoint: str, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`builders build ARGV --out data` in a fresh process, online, against `endpoint`."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HF_", "HTTP_PROXY", "HTTPS_PROXY"))
        and k.lower() not in ("http_proxy", "https_proxy", "all_proxy")
    }
    run_env = {
        **clean,
        "HF_ENDPOINT": endpoint,
        "HF_HOME": str(tmp_path / "hf_home"),  # no stored token
        "HF_HUB_CACHE": str(tmp_path / "hub"),
        "HF_HUB_ETAG_TIMEOUT": "2",
        "HF_HUB_DOWNLOAD_TIMEOUT": "2",
        "PYTHONPATH": str(PROJECT),
        **env,
    }
    command = [sys.executable, "-m", "builders.cli", "build", *argv, "--out", "data"]
    return subprocess.run(command, cwd=tmp_path, env=run_env, capture_output=True, text=True, timeout=240)


def one_line(run: subprocess.CompletedProcess[str], tmp_path: Path, *parts: str) -> str:
    """The run failed in one line holding `parts`, and left nothing in --out."""
    err = run.stderr.strip()
    assert run.returncode == 2, err
    assert err.count("\n") == 0 and "Traceback" not in err, err
    for part in parts:
        assert part in err, err
    assert not (tmp_path / "data").exists()
    return err


MMLB = ("mmlongbench", "--source", SOURCE, "--configs", "niah_vh_single_8k")


def test_the_stand_in_hub_serves_the_readme_run(tmp_path: Path, release_files: dict[str, bytes]) -> None:
    with HubServer(REPO, release_files) as hub:
        run = builders(tmp_path, hub.url, *MMLB, "--quiet")
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "data" / "mmlongbench" / "build_manifest.json").is_file()
    assert any("/resolve/" in request for request in hub.requests)


@pytest.mark.parametrize(
    ("failure", "source", "expected"),
    [
        ("gated", SOURCE, [f"{SOURCE}@main: listing the repo failed: the repo is gated (HTTP 403)", "hf auth login"]),
        ("private", SOURCE, ["listing the repo failed: no such dataset repo, or it is private (HTTP 401)", "HF_TOKEN"]),
        (
            "revision",
            f"{SOURCE}@v9",
            [f"{SOURCE}@v9: listing the repo failed: the repo has no revision 'v9' (HTTP 404)"],
        ),
        ("unavailable", SOURCE, ["listing the repo failed: the Hub could not serve it (HTTP 503); run it again later"]),
        (
            "forbidden",
            SOURCE,
            ["downloading 0_mmlb_data.tar.gz (commit 0123456789ab) failed: the Hub refused access (HTTP 403)"],
        ),
        (
            "missing",
            SOURCE,
            ["downloading 0_mmlb_data.tar.gz (commit 0123456789ab) failed: the file is not in the repo"],
        ),
        (
            "slow",
            SOURCE,
            ["downloading 0_mmlb_data.tar.gz (commit 0123456789ab) failed: the Hub did not answer in time"],
        ),
        (
            "cut",
            SOURCE,
            ["downloading 0_mmlb_data.tar.gz (commit 0123456789ab) failed: the download was cut short", "resumes"],
        ),
    ],
)
def test_each_answer_of_a_failing_hub_is_one_line_naming_source_revision_and_what_to_do(
    tmp_path: Path, release_files: dict[str, bytes], failure: str, source: str, expected: list[str]
) -> None:
    with HubServer(REPO, release_files, failure=failure) as hub:
        run = builders(
            tmp_path, hub.url, "mmlongbench", "--source", source, "--configs", "niah_vh_single_8k", "--quiet"
        )
    one_line(run, tmp_path, *expected)


def test_without_quiet_a_failed_download_says_what_it_fetched_then_one_line(
    tmp_path: Path, release_files: dict[str, bytes]
) -> None:
    """No `huggingface_hub` retry warning or progress bar: the file it started, then why it stopped."""
    with HubServer(REPO, release_files, failure="cut") as hub:
        run = builders(tmp_path, hub.url, *MMLB)
    assert run.returncode == 2 and not (tmp_path / "data").exists()
    lines = run.stderr.strip().splitlines()
    assert lines[:-1] == [f"hub: {SOURCE}@0123456789ab: 0_mmlb_data.tar.gz"], run.stderr
    assert lines[-1].startswith(
        f"builders: error: {SOURCE}@main: downloading 0_mmlb_data.tar.gz (commit 0123456789ab) failed"
    )


@pytest.mark.parametrize("where", ["no-route", "no-dns"])
def test_no_network_is_one_line_for_every_hub_source(tmp_path: Path, where: str) -> None:
    """The README's run and MileBench's, LoCoVQA's and MMNeedle's Hub sources, with nothing at the Hub's address or
    no name to resolve it."""
    endpoint = f"http://127.0.0.1:{closed_port()}" if where == "no-route" else "http://hub.invalid"
    reason = "cannot be reached ([Errno 111] Connection refused)" if where == "no-route" else "does not resolve"
    write_coco(tmp_path / "coco", count=50)
    runs = {  # as the README runs them: without --quiet
        "mmlongbench": builders(tmp_path, endpoint, *MMLB),
        "milebench": builders(
            tmp_path,
            endpoint,
            "milebench",
            "--source",
            "hf://FreedomIntelligence/MileBench",
            "--configs",
            "action_localization",
        ),
        "locovqa": builders(
            tmp_path, endpoint, "locovqa", "--source", "mmstar=hf://Lin-Chen/MMStar", "--configs", "mmstar_cmp_9"
        ),
        "mmneedle": builders(
            tmp_path,
            endpoint,
            "mmneedle",
            "--source",
            f"coco={tmp_path / 'coco'}",
            "--official-metadata",
            "hf://Wang-ML-Lab/MMNeedle",
            "--configs",
            "m1_n2_k1",
        ),
    }
    for name, run in runs.items():
        err = one_line(run, tmp_path, "listing the repo failed: the Hub", reason, "HF_HUB_OFFLINE=1")
        assert err.startswith("builders: error: hf://") and "@" in err.split(":")[3], (name, err)


def test_a_proxy_that_refuses_is_named_with_the_proxy_settings(tmp_path: Path, release_files: dict[str, bytes]) -> None:
    with HubServer(REPO, release_files, proxy=True) as proxy:
        run = builders(tmp_path, "http://hub.invalid", *MMLB, HTTP_PROXY=proxy.url)
    one_line(
        run, tmp_path, f"{SOURCE}@main: listing the repo failed: the proxy refused the connection", "HTTP_PROXY is set"
    )
    run = builders(tmp_path, "http://hub.invalid", *MMLB, HTTP_PROXY=f"http://127.0.0.1:{closed_port()}")
    one_line(run, tmp_path, f"{SOURCE}@main: listing the repo failed:", "HTTP_PROXY is set")


def test_a_cached_blob_of_another_size_than_the_hub_lists_is_refused_before_it_is_hashed(
    tmp_path: Path, release_files: dict[str, bytes]
) -> None:
    """Online, the listing gives each file's size: a blob in the cache of another size (changed, or cut short) is
    refused from its size, before a byte of it is hashed (issue 49, item 3)."""
    from tests.support.hub_cache import fill_hub_cache

    fill_hub_cache(tmp_path / "hub", REPO, release_files)
    size = len(release_files["0_mmlb_data.tar.gz"])
    with HubServer(REPO, release_files, listed_sizes={"0_mmlb_data.tar.gz": size + 1}) as hub:
        run = builders(tmp_path, hub.url, *MMLB, "--quiet")
    one_line(run, tmp_path, f"0_mmlb_data.tar.gz: its blob holds {size:,} bytes where the Hub lists {size + 1:,}")
