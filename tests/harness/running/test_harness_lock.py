"""Two runs on one output folder: the second is refused, naming the first; a killed run's lock is gone; the
lock holds a pid and a redacted command line only; a run that fails to start releases its lock."""

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

from tests.support.run_setups import only_results, run_args

SLOW_BACKEND = textwrap.dedent("""
    import os, sys, time
    from harness.api import Model, ModelFacts, Response
    from harness.run.cli import main
    from harness.models.registry import register_model

    @register_model("slow_test")
    class Slow(Model):
        _facts = ModelFacts(cache_responses=False)

        @classmethod
        def from_args(cls, args, *, batch_size=1, max_batch_tokens=None):
            return cls()

        def generate(self, requests):
            hold = os.environ.get("SLOW_TEST_HOLD")  # a file: the run waits while it exists (at most 120 s)
            deadline = time.monotonic() + 120
            while hold and os.path.exists(hold) and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(float(os.environ.get("SLOW_TEST_SECONDS", "0.25")))
            return [Response("-1") for _ in requests]

    sys.exit(main(sys.argv[1:]))
""")


def _command(script: Path, task: str, data_dir: Path, out: Path, *extra: str) -> list[str]:
    """`python SCRIPT --tasks TASK --model slow_test ...`: a run of the slow backend (`SLOW_BACKEND`) into `out`."""
    argv = run_args(task, "slow_test", data_dir=data_dir, out=out)
    return [sys.executable, str(script), *argv, "--no_progress", *extra]


def _start(script: Path, task: str, data_dir: Path, out: Path, env: dict[str, str], *extra: str) -> subprocess.Popen:
    command = _command(script, task, data_dir, out, *extra)
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _run_to_end(script: Path, task: str, data_dir: Path, out: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    command = _command(script, task, data_dir, out)
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def _wait_for_lock(lock: Path, proc: subprocess.Popen) -> dict:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if lock.is_file() and lock.read_text().strip():
            return json.loads(lock.read_text())
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    pytest.fail("the first run never took the lock")


@pytest.mark.slow  # runs in child processes
def test_a_second_run_on_the_same_output_is_refused(tmp_path: Path, data_dir: Path, script_env) -> None:
    script = tmp_path / "slow.py"
    script.write_text(SLOW_BACKEND)
    out = tmp_path / "out"
    hold = (
        tmp_path / "hold"
    )  # the first run holds its lock until the second has been answered, however slow the machine
    hold.touch()
    script_env = {**script_env, "SLOW_TEST_HOLD": str(hold)}
    first = _start(script, "mmneedle_m1_n2_k1_neg", data_dir, out, script_env)
    holder = _wait_for_lock(out / "slow_test" / "harness.lock", first)
    assert holder["pid"] == first.pid
    second = _run_to_end(script, "mmneedle_m1_n2_k1_neg", data_dir, out, script_env)
    assert second.returncode == 2
    (line,) = [line for line in second.stderr.splitlines() if line.startswith("harness: error")]
    assert f"is in use by another harness run (pid {first.pid}: harness --tasks mmneedle_m1_n2_k1_neg " in line
    assert "--output_path" in line
    assert first.poll() is None  # the refusal came while the first run was still running
    hold.unlink()
    _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    journal = [json.loads(line) for line in (out / "slow_test" / "journal_mmneedle_m1_n2_k1_neg.jsonl").open()]
    samples = [r["sample_id"] for r in journal[1:]]
    assert len(samples) == len(set(samples)) == 12


@pytest.mark.slow  # runs in child processes
def test_a_killed_run_leaves_no_lock_behind(tmp_path: Path, data_dir: Path, script_env) -> None:
    script = tmp_path / "slow.py"
    script.write_text(SLOW_BACKEND)
    out = tmp_path / "out"
    first = _start(script, "mmneedle_m1_n2_k1_pos", data_dir, out, script_env)
    _wait_for_lock(out / "slow_test" / "harness.lock", first)
    os.kill(first.pid, signal.SIGKILL)
    first.communicate(timeout=60)
    again = _run_to_end(script, "mmneedle_m1_n2_k1_pos", data_dir, out, script_env)
    assert again.returncode == 0, again.stderr
    assert only_results(out / "slow_test")["sample_counts"]["mmneedle_m1_n2_k1_pos"]["n_scored"] == 12


JUDGE_KEY = "sk-judge-0123456789abcdef"


@pytest.mark.slow  # runs in child processes
def test_the_lock_holds_a_pid_and_a_redacted_command_line_even_after_kill_9(
    tmp_path: Path, data_dir: Path, script_env
) -> None:
    script = tmp_path / "slow.py"
    script.write_text(SLOW_BACKEND)
    out = tmp_path / "out"
    lock = out / "slow_test" / "harness.lock"
    script_env = {**script_env, "SLOW_TEST_SECONDS": "5"}  # still running when the second run asks
    judge = ("--judge_args", f"api_key={JUDGE_KEY},base_url=http://judge:pw-short@127.0.0.1:9/v1")
    first = _start(script, "mmneedle_m1_n2_k1_pos", data_dir, out, script_env, *judge)
    holder = _wait_for_lock(lock, first)
    assert set(holder) == {"pid", "argv"} and holder["pid"] == first.pid
    assert "api_key=<redacted>,base_url=http://judge:<redacted>@127.0.0.1:9/v1" in holder["argv"]
    # A second run (without the key: nothing of its own to scrub) is told who holds the folder, redacted.
    second = _run_to_end(script, "mmneedle_m1_n2_k1_pos", data_dir, out, script_env)
    assert second.returncode == 2 and f"pid {first.pid}: harness" in second.stderr
    os.kill(first.pid, signal.SIGKILL)
    first.communicate(timeout=60)
    left = lock.read_bytes()  # a killed run cannot remove its lock file: it must hold nothing secret
    for text in (left, second.stderr.encode()):
        assert JUDGE_KEY.encode() not in text and b"pw-short" not in text and b"<redacted>" in text


def test_an_in_use_message_redacts_a_lock_file_written_with_secrets(tmp_path: Path, needle_run) -> None:
    """A lock file from before redaction (or hand-made) holding keys: the message prints them redacted by name."""
    import fcntl

    folder = tmp_path / "out" / "random"
    folder.mkdir(parents=True)
    argv = ["harness", "--model_args", "api_key=k1", "--judge_args=token=k2,base_url=http://u:k3@h/v1"]
    with open(folder / "harness.lock", "w") as handle:
        handle.write(json.dumps({"pid": 4242, "argv": argv}))
        handle.flush()
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # held by this process: the folder is in use
        run = needle_run("mmneedle_m1_n2_k1_pos", "random", tmp_path / "out")
    assert run.code == 2
    assert (
        "(pid 4242: harness --model_args api_key=<redacted> --judge_args=token=<redacted>,"
        "base_url=http://u:<redacted>@h/v1)"
    ) in run.err
    assert not any(k in run.err for k in ("k1", "k2", "k3"))


def test_a_run_that_fails_to_start_releases_its_lock(tmp_path: Path, needle_run) -> None:
    out = tmp_path / "out"
    (out / "keep.txt").parent.mkdir(parents=True)
    (out / "keep.txt").write_text("the user's")
    failed = needle_run("mmneedle_m1_n2_k1_pos", "qwen2.5-vl", out, model_args="backend=random")
    assert failed.code == 2 and "Traceback" not in failed.err
    (line,) = [line for line in failed.err.splitlines() if "error:" in line]
    assert line.startswith("harness: error: model 'qwen2.5-vl': random backend: unknown model argument 'pretrained'")
    assert "the alias qwen2.5-vl sets pretrained=Qwen/Qwen2.5-VL-7B-Instruct" in line
    assert "backend=random passes them to random; to run random, give --model random" in line
    # Nothing is left behind: no lock file, no empty model folder; the folder the user made is kept.
    assert sorted(p.name for p in out.rglob("*")) == ["keep.txt"]
    started = needle_run("mmneedle_m1_n2_k1_pos", "random", out, "--limit", "2")
    assert started.code == 0, started.err
    assert not (out / "random" / "harness.lock").exists()  # a finished run removes its lock file too
