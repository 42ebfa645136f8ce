"""A `harness` command run in a process of its own and killed with SIGKILL once the test sees what it waits for (an
answer journalled, a batch submitted and polled): no handler runs, no file is closed, as when a machine goes down.
The kill and resume tests of `--batch` and `--max_cost` rerun the same command after it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.support.paths import PROJECT


def kill_when(argv: Sequence[str], ready: Callable[[], object], what: str, timeout: float = 60.0) -> None:
    """Run `python -m harness ARGV` and SIGKILL it, with every process it started (an engine's: its session), as soon
    as `ready()` holds; fails if it never holds or the command ended by itself first (it must be killed mid-run)."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    process = subprocess.Popen([sys.executable, "-m", "harness", *argv], env=env, cwd=PROJECT, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while not ready() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.02)
        assert ready(), f"{what}: never seen (the command exited {process.poll()})"
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert process.returncode == -signal.SIGKILL, f"the command ended by itself ({process.returncode}) before the kill"


def journalled(path: Path, status: str = "ok") -> list[str]:
    """The sample ids a journal holds with `status`, in the order they were written (none if it is not there yet)."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines()[1:]:  # after the header
        try:
            records.append(json.loads(line))
        except ValueError:  # a line being written as we read it
            continue
    return [r["sample_id"] for r in records if isinstance(r, dict) and r.get("status") == status]
