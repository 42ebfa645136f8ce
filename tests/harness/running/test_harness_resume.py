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


def _damaged(store: Path, how: str) -> None:
    """`store` (a prompt store) damaged as a hostile hand would: every chunk a zlib bomb, every chunk gone, every
    text naming `../` chunks, or the whole file gone."""
    import base64
    import zlib

    if how == "deleted":
        store.unlink()
        return
    bomb = base64.b64encode(zlib.compress(b"\0" * (64 << 20))).decode()
    lines = []
    for value in map(json.loads, store.read_text().splitlines()):
        if "chunk" in value and how == "missing":
            continue
        if "chunk" in value and how == "bombed":
            value["zlib"] = bomb
        if "chunks" in value and how == "dot-dot":
            value["chunks"] = [f"../{name}" for name in value["chunks"]]
        lines.append(json.dumps(value))
    store.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("how", ["bombed", "missing", "dot-dot", "deleted"])
def test_a_resume_over_a_damaged_prompt_store_mends_its_finished_samples_texts(
    needle_run, tmp_path: Path, how: str
) -> None:
    """Finished samples whose stored texts fail their check (a chunk bombed, missing, named `../`; the store gone)
    are not sent again: their texts are rendered again from their requests and stored, one line says how many, and
    the sample log holds each prompt as first sent, never '' (issue 77, item 1)."""
    from harness.running.journal.prompt_store import PromptTexts
    from harness.running.journal.sample_log import read_sample_log

    task, out = "mmneedle_m1_n2_k1_pos", tmp_path / "out"
    args = ("--limit", "3", "--gen_kwargs", "max_gen_toks=2")
    first = needle_run(task, "constant", out, *args, model_args="answer=-1")
    assert first.code == 0, first.err
    sent = {s["sample_id"]: s["prompt"] for s in first.samples("constant", task)}
    assert len(sent) == 3 and all(sent.values())
    store = out / "constant" / f"prompts_{task}.jsonl"
    _damaged(store, how)
    assert not any(PromptTexts.at(store).text(d) for d in PromptTexts.at(store).texts)
    again = needle_run(task, "constant", out, *args, "--log_samples", model_args="answer=-1")
    assert again.code == 0 and "3 samples resumed from the journal, 0 generated now" in again.err, again.err
    (log,) = (out / "constant").glob(f"samples_{task}_*.jsonl")
    assert {line["sample_id"]: line["arguments"]["gen_args_0"]["arg_0"] for line in read_sample_log(log)} == sent
    assert {s["sample_id"]: s["prompt"] for s in again.samples("constant", task)} == sent  # the store reads whole
    said = [line for line in again.err.splitlines() if str(store) in line]
    assert len(said) == 1 and ("3 mended from" in said[0] or "3 prompt texts" in said[0]), again.err
    third = needle_run(task, "constant", out, *args, model_args="answer=-1")
    assert third.code == 0 and str(store) not in third.err, third.err  # whole again: nothing to say
