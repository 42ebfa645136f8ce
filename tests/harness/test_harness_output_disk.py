"""An output disk that refuses to be written (full, over `ulimit -f`, read-only): one line naming the file and
the system's reason, exit 1, no temporary file left behind, and what was finished resumes.

Tests run as root here, where a folder's permissions stop nothing. A full disk is a file size limit
(`RLIMIT_FSIZE`, with SIGXFSZ ignored as Python does, so a write past it fails with EFBIG); a read-only disk
is a read-only tmpfs mounted over the output folder in a mount namespace of its own (`unshare`), where the
system allows one."""

from __future__ import annotations

import json
import resource
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.run_setups import run_args

TASK = "mmneedle_m1_n2_k1_pos"


def _file_size_limit(size: int) -> Callable[[], None]:
    def apply() -> None:  # in the child, before it runs
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return apply


def _harness(
    data_dir: Path, out: Path, env: dict[str, str], *, limit: int | None = None, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    run = [sys.executable, "-m", "harness.run.cli", *run_args(TASK, "random", data_dir=data_dir, out=out)]
    argv = [*prefix, *run, "--log_samples", "--no_progress"]
    return subprocess.run(
        argv,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_file_size_limit(limit) if limit else None,
    )


def _error_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith("harness: error")]


@pytest.mark.slow
def test_a_full_disk_stops_the_run_with_one_line_and_finished_samples_resume(
    tmp_path: Path, data_dir: Path, script_env
) -> None:
    # A run with room to spare: its file sizes (and the datasets cache the others reuse without writing).
    roomy = _harness(data_dir, tmp_path / "roomy", script_env)
    assert roomy.returncode == 0, roomy.stderr
    folder = tmp_path / "roomy" / "random"
    journal_size = (folder / f"journal_{TASK}.jsonl").stat().st_size
    header, first_record = (folder / f"journal_{TASK}.jsonl").read_bytes().splitlines(keepends=True)[:2]
    assert next(folder.glob("samples_*.jsonl")).stat().st_size > journal_size  # so the sample log hits the limit

    out = tmp_path / "out"
    model_dir = out / "random"
    # 1. The disk fills while the journal grows: it stops at the record that did not fit.
    cut = _harness(data_dir, out, script_env, limit=len(header) + 3 * len(first_record))
    assert cut.returncode == 1
    assert _error_lines(cut.stderr) == [
        f"harness: error: cannot write {model_dir / f'journal_{TASK}.jsonl'}: File too large"
    ]
    # 2. Room for the journal, none for the sample log: it fails whole, its temporary file removed.
    full = _harness(data_dir, out, script_env, limit=journal_size + 64)
    assert full.returncode == 1
    (line,) = _error_lines(full.stderr)
    assert line.startswith(f"harness: error: cannot write {model_dir}/samples_{TASK}_") and line.endswith(
        ".jsonl.tmp: File too large"
    )
    assert sorted(p.name for p in model_dir.iterdir()) == [
        f"journal_{TASK}.jsonl",
        f"prompts_{TASK}.jsonl",
    ]  # no *.tmp, no lock file
    # 3. With room again, the same command finishes from the journal: nothing finished runs twice.
    done = _harness(data_dir, out, script_env)
    assert done.returncode == 0, done.stderr
    assert "12 samples resumed from the journal, 0 generated now" in done.stderr
    results = json.loads(next(model_dir.glob("results_*.json")).read_text())
    expected = json.loads(next(folder.glob("results_*.json")).read_text())
    assert results["results"] == expected["results"]


def _read_only_mounts_work(where: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o ro none '{where}' && ! touch '{where}/x'"],
        capture_output=True,
        timeout=30,
    )
    return probe.returncode == 0


@pytest.mark.slow
def test_a_read_only_output_folder_is_one_line_naming_it(tmp_path: Path, data_dir: Path, script_env) -> None:
    out = tmp_path / "out"
    out.mkdir()
    if not _read_only_mounts_work(out):
        pytest.skip("this system allows no mount namespace (unshare -rm) to mount a read-only folder in")
    script = f"mount -t tmpfs -o ro none '{out}' && exec \"$@\""
    run = _harness(data_dir, out, script_env, prefix=("unshare", "-rm", "sh", "-c", script, "sh"))
    assert run.returncode == 1
    assert _error_lines(run.stderr) == [f"harness: error: cannot write {out / 'random'}: Read-only file system"]


@pytest.mark.slow
def test_a_response_cache_that_cannot_be_written_is_one_line(tmp_path: Path, data_dir: Path, script_env) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    warm = _harness(data_dir, tmp_path / "warm", script_env)  # fills the datasets cache, which the limit would stop
    assert warm.returncode == 0, warm.stderr
    nowhere = "model=m,base_url=http://127.0.0.1:9/v1"
    unreachable = run_args(TASK, "openai", model_args=nowhere, data_dir=data_dir, out=out)
    argv = [sys.executable, "-m", "harness.run.cli", *unreachable, "--cache_dir", str(cache), "--no_progress"]
    run = subprocess.run(
        argv, env=script_env, capture_output=True, text=True, timeout=300, preexec_fn=_file_size_limit(6000)
    )  # not even the cache's second page fits
    assert run.returncode == 1
    (line,) = _error_lines(run.stderr)
    assert line.startswith(f"harness: error: cannot write {cache / 'cache.sqlite3'}: ")  # then SQLite's reason
    assert not out.exists()  # the run never started: its lock and the folders it made are gone


def test_a_hash_cache_that_cannot_be_written_leaves_no_temporary_file(tmp_path: Path) -> None:
    cache = tmp_path / "hashes" / "file_hashes.json"
    entries = {f"/data/file-{i}.parquet|1|2|3|4|5": "0" * 64 for i in range(100)}  # ~10 KB, past the limit below
    script = (
        "import sys; from pathlib import Path; from harness.inputs.integrity import _save_hashes; "
        f"_save_hashes(Path({str(cache)!r}), {entries!r}); print('saved')"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], preexec_fn=_file_size_limit(1024), capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0 and run.stdout.strip() == "saved", run.stderr  # a cache it cannot keep is no error
    assert sorted(p.name for p in cache.parent.iterdir()) == []  # neither the cache nor a half-written temporary
    again = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and json.loads(cache.read_text()) == entries
