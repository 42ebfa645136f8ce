"""Two runs on one output folder: the second is refused, naming the first; a killed run's lock is gone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

SLOW_BACKEND = textwrap.dedent('''
    import sys, time
    from harness.api import Model, Response
    from harness.cli import main
    from harness.models.registry import register_model

    @register_model("slow_test")
    class Slow(Model):
        cache_responses = False

        @classmethod
        def from_args(cls, args, *, batch_size=1, max_batch_tokens=None):
            return cls()

        def generate(self, requests):
            time.sleep(0.25)
            return [Response("-1") for _ in requests]

    sys.exit(main(sys.argv[1:]))
''')


def _start(script: Path, task: str, data_dir: Path, out: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(script), "--tasks", task, "--model", "slow_test", "--data_dir",
                             str(data_dir), "--output_path", str(out), "--no_progress"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_lock(lock: Path, proc: subprocess.Popen) -> dict:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if lock.is_file() and lock.read_text().strip():
            return json.loads(lock.read_text())
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    pytest.fail("the first run never took the lock")


def test_a_second_run_on_the_same_output_is_refused(tmp_path: Path, data_dir: Path, script_env) -> None:
    script = tmp_path / "slow.py"
    script.write_text(SLOW_BACKEND)
    out = tmp_path / "out"
    first = _start(script, "mmneedle_m1_n2_k1_neg", data_dir, out, script_env)
    holder = _wait_for_lock(out / "slow_test" / "harness.lock", first)
    assert holder["pid"] == first.pid
    second = subprocess.run([sys.executable, str(script), "--tasks", "mmneedle_m1_n2_k1_neg", "--model", "slow_test",
                             "--data_dir", str(data_dir), "--output_path", str(out), "--no_progress"],
                            env=script_env, capture_output=True, text=True, timeout=120)
    assert second.returncode == 2
    (line,) = [line for line in second.stderr.splitlines() if line.startswith("harness: error")]
    assert f"is in use by another harness run (pid {first.pid} on " in line and "--output_path" in line
    _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    journal = [json.loads(line) for line in (out / "slow_test" / "journal_mmneedle_m1_n2_k1_neg.jsonl").open()]
    samples = [r["sample_id"] for r in journal[1:]]
    assert len(samples) == len(set(samples)) == 12


def test_a_killed_run_leaves_no_lock_behind(tmp_path: Path, data_dir: Path, script_env) -> None:
    script = tmp_path / "slow.py"
    script.write_text(SLOW_BACKEND)
    out = tmp_path / "out"
    first = _start(script, "mmneedle_m1_n2_k1_pos", data_dir, out, script_env)
    _wait_for_lock(out / "slow_test" / "harness.lock", first)
    os.kill(first.pid, signal.SIGKILL)
    first.communicate(timeout=60)
    again = subprocess.run([sys.executable, str(script), "--tasks", "mmneedle_m1_n2_k1_pos", "--model", "slow_test",
                            "--data_dir", str(data_dir), "--output_path", str(out), "--no_progress"],
                           env=script_env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    (results,) = (out / "slow_test").glob("results_*.json")
    assert json.loads(results.read_text())["sample_counts"]["mmneedle_m1_n2_k1_pos"]["n_scored"] == 12
