"""The runner through the `harness` command with the baseline models: exact known scores,
per-sample statuses, the sample journal, and the results file's lm-eval shape."""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from pathlib import Path

import pytest

from harness.api import ImagePart, TextPart
from harness.config.task_index import TaskIndex
from harness.inputs.prompts import prompt_text
from harness.running.task.task import Task
from tests.support.run_setups import needle_task_yaml, registered_model

K1 = "mmneedle_m1_n2_k1"


def test_constant_minus_one_gives_the_known_scores(tmp_path: Path, needle_run) -> None:
    run = needle_run(f"{K1}_pos,{K1}_neg,mmneedle_m10_n1_k2_neg", "constant", tmp_path, model_args="answer=-1")
    assert run.code == 0, run.err
    data = run.results("constant")
    results = data["results"]
    pos, neg, neg2 = results[f"{K1}_pos"], results[f"{K1}_neg"], results["mmneedle_m10_n1_k2_neg"]
    assert pos["existence_acc,none"] == 0.0 and pos["index_acc,none"] == 0.0 and pos["exact_acc,none"] == 0.0
    assert neg["existence_acc,none"] == 1.0 and neg["hallucination_rate,none"] == 0.0
    assert neg2["existence_acc,none"] == 1.0  # "-1" is one of the five accepted K>1 negatives
    counts = data["sample_counts"][f"{K1}_pos"]  # bookkeeping beside lm-eval's results, not inside them
    assert counts["n_scored"] == counts["sample_len"] == 12 and pos["existence_acc_stderr,none"] == 0.0
    assert set(pos) == {"alias"} | {k for k in pos if "," in k}
    assert "| mmneedle_m1_n2_k1_pos" in run.out and "existence_acc" in run.out


def test_constant_answer_scores_the_rows_it_matches(tmp_path: Path, rows, needle_run) -> None:
    answers = [r["answer"] for r in rows("m1_n2_k1") if r["is_positive"]]
    guess = answers[0]
    expected = sum(a == guess for a in answers) / len(answers)
    run = needle_run(f"{K1}_pos", "constant", tmp_path, model_args=f'answer="{guess}"')
    entry = run.results("constant")["results"][f"{K1}_pos"]
    assert entry["exact_acc,none"] == pytest.approx(expected)
    # the sample variance, n - 1, as lm-eval, lmms-eval and inspect_ai (before issue 48: p(1-p)/n)
    n = len(answers)
    assert entry["exact_acc_stderr,none"] == pytest.approx(math.sqrt(expected * (1 - expected) / (n - 1)))
    # every M=1 row its own stitched image in one config: each its own cluster, the clustered error the plain one
    assert entry["exact_acc_stderr_clustered,none"] == pytest.approx(entry["exact_acc_stderr,none"])
    assert run.results("constant")["uncertainty"][f"{K1}_pos"]["exact_acc"]["n_clusters"] == n
    index_expected = sum(a.split(", ")[0] == guess.split(", ")[0] for a in answers) / len(answers)
    assert entry["index_acc,none"] == pytest.approx(index_expected)


def test_results_file_has_the_lm_eval_shape(tmp_path: Path, data_dir: Path, needle_run) -> None:
    run = needle_run("mmneedle_m10_n1_k2_pos", "random", tmp_path, "--limit", "5", "--seed", "3", "--batch_size", "2")
    data = run.results("random")
    task = "mmneedle_m10_n1_k2_pos"
    for key in (
        "results",
        "groups",
        "group_subtasks",
        "configs",
        "versions",
        "n-samples",
        "higher_is_better",
        "config",
        "package_versions",
        "date",
        "total_evaluation_time_seconds",
        "datasets",
        "breakdowns",
    ):
        assert key in data, key
    entry = data["results"][task]
    assert {"individual_exact_acc,none", "individual_exact_acc_stderr,none", "exact_acc,none"} <= set(entry)
    assert data["n-samples"][task] == {"original": 12, "effective": 5}
    assert data["higher_is_better"][task]["exact_acc"] is True
    assert data["versions"][task] == 1.0
    assert data["config"]["batch_size"] == 2 and data["config"]["seed"] == 3 and data["config"]["limit"] == 5
    assert data["configs"][task]["generation_settings"]["max_gen_toks"] == 300
    dataset = data["datasets"][task]
    manifest = json.loads((data_dir / "mmneedle" / "build_manifest.json").read_text())
    assert dataset["content_hash"] == manifest["content_hash"]
    # What was read: the files' own sha256s, not the manifest's content hash (issue 99)
    read = hashlib.sha256(" ".join(f["sha256"] for f in manifest["configs"]["m10_n1_k2"]["files"]).encode())
    assert dataset["fingerprint"] == "files:" + read.hexdigest() == "files:" + dataset["config"]["content_sha256"]
    assert set(data["breakdowns"][task]) == {"exact_acc_by_cell", "exact_acc_by_depth"}
    assert data["package_versions"]["datasets"]


def test_random_baseline_is_seeded_per_sample_and_stays_in_the_answer_space(tmp_path: Path, needle_run) -> None:
    task = "mmneedle_m10_n1_k2_pos"

    def guesses(out: Path, *extra: str) -> dict[str, str]:
        run = needle_run(task, "random", out, *extra)
        assert run.code == 0, run.err
        return {s["sample_id"]: s["response"] for s in run.samples("random", task)}

    first = guesses(tmp_path / "a")
    again = guesses(tmp_path / "b", "--batch_size", "5")
    other = guesses(tmp_path / "c", "--seed", "1")
    assert first == again and first != other
    choices = {f"{m}, 1, 1" for m in range(1, 11)} | {"-1"}
    for guess in first.values():
        parts = guess.split("; ")
        assert len(parts) == 2 and set(parts) <= choices


def test_random_without_answer_space_fails_per_sample(tmp_path: Path, needle_run) -> None:
    (tmp_path / "t.yaml").write_text(needle_task_yaml("no_space"))
    run = needle_run("no_space", "random", tmp_path / "out", "--limit", "3", include_path=tmp_path / "t.yaml")
    assert run.code == 1 and "no sample of this run was scored (3 error)" in run.err, run.err
    # the console says why at once (issue 89: it said only "see the error fields of the journals")
    (line,) = [line for line in run.err.splitlines() if "no sample of this run was scored" in line]
    assert re.search(
        r"\(3 error\); the first \(no_space, sample \S+\): .*defines no answer space.*; every sample's", line
    )
    data = run.results("random")
    entry = {**data["results"]["no_space"], **data["sample_counts"]["no_space"]}
    assert entry["n_error"] == 3 and entry["n_scored"] == 0 and entry["exact_match,none"] == "N/A"
    assert all("defines no answer space" in s["error"] for s in run.samples("random", "no_space"))


def test_empty_and_enormous_outputs(tmp_path: Path, needle_run) -> None:
    run = needle_run(f"{K1}_pos", "constant", tmp_path / "empty", model_args="answer=")
    data = run.results("constant")
    entry = {**data["results"][f"{K1}_pos"], **data["sample_counts"][f"{K1}_pos"]}
    # An empty answer is scored as the official code scores it: existence-correct on a positive.
    assert entry["n_empty"] == 12 and entry["n_scored"] == 12 and entry["existence_acc,none"] == 1.0
    huge = "1" * 30000  # > 64 * max_gen_toks + 1024 characters
    run = needle_run(f"{K1}_pos", "constant", tmp_path / "huge", "--limit", "2", model_args=f"answer={huge}")
    entry = run.results("constant")["sample_counts"][f"{K1}_pos"]
    assert entry["n_error"] == 2 and entry["n_scored"] == 0
    assert "enormous output: 30000 characters" in run.samples("constant", f"{K1}_pos")[0]["error"]


def test_placeholder_mismatch_is_recorded_per_row(tmp_path: Path, needle_run) -> None:
    (tmp_path / "t.yaml").write_text(
        "include: " + str(TaskIndex().tasks[f"{K1}_neg"].source) + "\n"
        'task: extra_placeholder\ndoc_to_text: "{{prompt}}<image>"\n'
    )
    run = needle_run(
        "extra_placeholder", "constant", tmp_path / "o", model_args="answer=-1", include_path=tmp_path / "t.yaml"
    )
    assert run.code == 1 and "no sample of this run was scored (12 invalid_input)" in run.err, run.err
    samples = run.samples("constant", "extra_placeholder")
    assert len(samples) == 12 and all(s["status"] == "invalid_input" for s in samples)
    assert (
        samples[0]["error"]
        == f"row {samples[0]['sample_id']}: prompt has 2 <image> placeholders but the row has 1 images"
    )


def test_requests_interleave_images_lazily_in_prompt_order(data_dir: Path, rows) -> None:
    task = Task(TaskIndex().tasks["mmneedle_m10_n1_k2_pos"])
    task.load(data_dir, limit=3)
    settings = task.generation_settings()
    source = rows("m10_n1_k2")
    for doc_id, doc in task.iter_docs():
        assert "images" not in doc  # documents are read without their image bytes
        request = task.build_request(doc_id, doc, settings)
        (message,) = request.messages
        assert message.role == "user"
        assert [type(p) for p in message.content] == [ImagePart] * 10 + [TextPart]
        assert prompt_text(request.messages) == doc["prompt"]
        assert request.sample_id == doc["id"] and len(request.random_answer(random.Random(0)).split("; ")) == 2
        assert request.text_tokens == doc["text_tokens"] and list(request.image_tokens) == doc["image_tokens"]
        row = source[doc_id]
        for i, image in enumerate(request.images):
            data = image.data()
            assert hashlib.sha256(data).hexdigest() == image.sha256 == row["image_sha256"][i]
            assert [image.width, image.height] == row["image_sizes"][i]
            assert image.pil().size == tuple(row["image_sizes"][i])


def test_paper_prompt_style_through_metadata(tmp_path: Path, rows, needle_run) -> None:
    paper = ("--metadata", '{"prompt_style": "paper"}')
    run = needle_run(f"{K1}_pos", "constant", tmp_path, "--limit", "1", "--log_samples", *paper, model_args="answer=-1")
    sample = run.samples("constant", f"{K1}_pos")[0]
    assert sample["prompt"] == rows("m1_n2_k1")[0]["prompt_paper"]
    assert run.results("constant")["configs"][f"{K1}_pos"]["metadata"]["prompt_style"] == "paper"


def test_log_samples_records_hashes_not_pixels(tmp_path: Path, rows, needle_run) -> None:
    run = needle_run("mmneedle_m10_n1_k2_pos", "constant", tmp_path, "--log_samples", model_args="answer=-1")
    samples = run.samples("constant", "mmneedle_m10_n1_k2_pos")
    source = {r["id"]: r for r in rows("m10_n1_k2")}
    for sample in samples:
        row = source[sample["sample_id"]]
        assert sample["prompt"] == row["prompt"] and sample["prompt"].count("<image>") == 10
        assert sample["image_sha256"] == row["image_sha256"] and sample["target"] == row["answer"]
        assert sample["response"] == "-1" and sample["status"] == "ok"
        assert set(sample["metrics"]) >= {"exact_acc", "individual_exact_acc"}
        assert sample["token_count"] == row["text_tokens"] + sum(row["image_tokens"])
    journal = tmp_path / "constant" / "journal_mmneedle_m10_n1_k2_pos.jsonl"
    # text only, no image bytes: each of the 10 images is three hashes (as sent, as scored, its cluster key)
    assert journal.stat().st_size < 8000 * len(samples)


def test_a_different_run_in_the_same_folder_is_refused(tmp_path: Path, needle_run) -> None:
    assert needle_run(f"{K1}_neg", "constant", tmp_path, model_args="answer=-1").code == 0
    run = needle_run(f"{K1}_neg", "constant", tmp_path, model_args="answer=1, 1, 1")
    assert run.code == 2 and "quote values holding commas" in run.err
    run = needle_run(f"{K1}_neg", "constant", tmp_path, model_args='answer="1, 1, 1"')
    assert run.code == 2
    assert "holds samples of a different run (differs in: model)" in run.err
    run = needle_run(f"{K1}_neg", "constant", tmp_path, "--gen_kwargs", "max_gen_toks=20", model_args="answer=-1")
    assert run.code == 2 and "differs in: generation" in run.err
    rerun = needle_run(f"{K1}_neg", "constant", tmp_path, model_args="answer=-1")  # the same run again: all resumed
    assert rerun.code == 0 and "12 samples resumed from the journal, 0 generated now" in rerun.err


def test_a_fatal_backend_error_stops_the_run_and_keeps_finished_samples(tmp_path: Path, needle_run) -> None:
    from harness.api import BackendFatalError, Model, Response

    class FailsAfterTwoBatches(Model):
        calls = 0

        @classmethod
        def from_args(cls, args, *, batch_size=1, max_batch_tokens=None):
            return cls()

        def generate(self, requests):
            type(self).calls += 1
            if type(self).calls > 2:
                raise BackendFatalError("401 invalid API key")
            return [Response("-1") for _ in requests]

    with registered_model("test_fails_after_two_batches", FailsAfterTwoBatches):
        run = needle_run(f"{K1}_neg", "test_fails_after_two_batches", tmp_path)
    assert run.code == 1
    assert "the model backend stopped: 401 invalid API key" in run.err and "run the same command to resume" in run.err
    samples = run.samples("test_fails_after_two_batches", f"{K1}_neg")
    assert [s["status"] for s in samples] == ["ok", "ok"]  # two batches done, nothing recorded against the rest
    assert FailsAfterTwoBatches.calls == 3
