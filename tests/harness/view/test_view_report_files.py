"""What `harness view` leaves and serves (issue 44): it writes no file-hash cache (the run's is read, not updated), and
from the results folder it serves report.md and the figures `harness report` wrote (its manifest), nothing else."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.run.cli import main
from tests.support.results_runs import harness_run
from tests.support.view_app import view_client

TASK = "mmneedle_m1_n2_k1_pos"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


@pytest.fixture(scope="module")
def needle_results(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("view_report_files")
    harness_run(out, data_dir, TASK, "random")
    assert main(["report", str(out), "--jobs", "1"]) == 0
    return out


def test_the_viewer_writes_no_hash_cache_and_serves_only_the_reports_own_figures(
    needle_results: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.inputs.integrity import HASH_CACHE_ENV

    cache = tmp_path / "hashes" / "file_hashes.json"
    monkeypatch.setenv(HASH_CACHE_ENV, str(cache))  # empty: every build file is hashed anew
    client = view_client(needle_results)
    table = client.get("/samples", params={"model": "random", "task": TASK}).text
    sample = re.search(r'class="sample-link" href="([^"]+)"', table)
    assert sample and client.get(sample.group(1).replace("&amp;", "&")).status_code == 200
    assert 'id="data-problem"' not in table
    assert not cache.exists() and not cache.parent.exists()

    manifest = json.loads((needle_results / ".report_figures.json").read_text())
    figure = next(name for name in manifest if name.endswith(".png"))
    assert client.get(f"/report/{figure}").status_code == 200
    assert client.get(f"/report/{figure.removesuffix('.png')}.svg").status_code == 200
    (needle_results / "planted.png").write_bytes(PNG)  # a figure the report did not draw
    (needle_results / "notes.md").write_text("# not the report\n")
    try:
        assert client.get("/report/planted.png").status_code == 404
        assert client.get("/report/notes.md").status_code == 404
        assert client.get("/report/report.md").status_code == 200
    finally:
        (needle_results / "planted.png").unlink()
        (needle_results / "notes.md").unlink()
