"""A run killed halfway (SIGKILL of the real console script) and started again finishes with the
same results as an uninterrupted run, without redoing or losing a finished sample."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

TASK = "mmneedle_m10_n1_k2_pos"


def sample_lines(journal: Path) -> list[dict]:
    if not journal.exists():
        return []
    lines = journal.read_text().splitlines()
    return [json.loads(line) for line in lines[1:] if line.endswith("}")]


@pytest.mark.slow  # two harness runs in child processes (one killed) and a third in process, a tiny LLaVA: ~46 s of CPU
def test_killed_run_resumes_to_the_uninterrupted_result(
    tmp_path: Path, data_dir: Path, tiny_llava: Path, harness_script: str, script_env: dict, harness
) -> None:
    args = [
        "--tasks",
        TASK,
        "--model",
        "hf",
        "--model_args",
        f"pretrained={tiny_llava},threads=1",
        "--data_dir",
        str(data_dir),
        "--batch_size",
        "1",
        "--gen_kwargs",
        "max_gen_toks=200",
        "--no_progress",
    ]
    name = str(tiny_llava).replace("/", "__")
    out = tmp_path / "killed"
    journal = out / name / f"journal_{TASK}.jsonl"

    proc = subprocess.Popen(
        [harness_script, *args, "--output_path", str(out)],
        env=script_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while len(sample_lines(journal)) < 4 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read()
    finished_before = {s["sample_id"] for s in sample_lines(journal)}
    assert 4 <= len(finished_before) < 12, "the kill must land in the middle of the task"
    assert not list((out / name).glob("results_*.json"))

    resumed = subprocess.run(
        [harness_script, *args, "--output_path", str(out)], env=script_env, capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    assert (
        f"{TASK}: {len(finished_before)} samples resumed from the journal, {12 - len(finished_before)} generated now"
    ) in resumed.stderr
    samples = sample_lines(journal)
    ids = [s["sample_id"] for s in samples]
    assert len(ids) == len(set(ids)) == 12  # nothing redone, nothing lost

    reference = harness(*args, "--output_path", tmp_path / "whole")
    assert reference.code == 0, reference.err
    whole = {s["sample_id"]: s for s in reference.samples(name, TASK)}
    assert {s["sample_id"]: s["response"] for s in samples} == {k: v["response"] for k, v in whole.items()}
    (killed_results,) = (out / name).glob("results_*.json")
    assert json.loads(killed_results.read_text())["results"] == reference.results(name)["results"]
