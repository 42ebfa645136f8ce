"""`--shard i/n` and `harness merge` through the `harness` command: the shards of a run, merged, give
the unsharded run's results file (every metric, count, breakdown and per-sample record)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.running.journal.prompt_store import PromptTexts
from harness.running.sharding import Shard
from tests.support.hf_runs import hf_run
from tests.support.run_setups import checkpoint_folder, only_results, run_args

RANDOM_TASKS = ["mmneedle_m1_n2_k1_pos", "mmneedle_m1_n2_k1_neg", "mmneedle_m10_n1_k2_pos", "mmneedle_m1_n2_k5_neg"]
# Everything of a results file that is about the evaluation, not about when or how it ran.
SAME = (
    "results",
    "groups",
    "group_subtasks",
    "n-samples",
    "breakdowns",
    "usage",
    "versions",
    "task_hashes",
    "higher_is_better",
    "configs",
    "datasets",
    "uncertainty",
)


def _records(model_dir: Path, task: str) -> list[dict[str, Any]]:
    lines = (model_dir / f"journal_{task}.jsonl").read_text().splitlines()
    return sorted((json.loads(line) for line in lines[1:]), key=lambda r: r["doc_id"])


def _header(model_dir: Path, task: str) -> dict[str, Any]:
    return json.loads((model_dir / f"journal_{task}.jsonl").read_text().splitlines()[0])


def _full_and_two_shards(harness, tmp_path: Path, args: tuple) -> tuple[Any, list[Path]]:
    """The unsharded run (in `full/`) and its two shards' folders (`s0/`, `s1/`), every run finished."""
    full = harness(*args, "--output_path", tmp_path / "full")
    assert full.code == 0, full.err
    shards = [tmp_path / f"s{index}" for index in (0, 1)]
    for index, shard in enumerate(shards):
        assert harness(*args, "--shard", f"{index}/2", "--output_path", shard).code == 0
    return full, shards


def _shard_then_merge(harness, tmp_path: Path, count: int, args: tuple, model: str, tasks: list[str]):
    full = harness(*args, "--output_path", tmp_path / "full")
    assert full.code == 0, full.err
    shard_dirs = []
    for index in range(count):
        run = harness(*args, "--shard", f"{index}/{count}", "--output_path", tmp_path / f"shard{index}")
        assert run.code == 0, run.err
        assert f"shard {index}/{count}: these results cover only this shard's documents" in run.err
        partial = run.results(model)
        assert partial["partial"]["shard"] == f"{index}/{count}" and partial["config"]["shard"] == f"{index}/{count}"
        for task in tasks:
            docs = full.results(model)["n-samples"][task]["effective"]
            assert partial["n-samples"][task]["effective"] == len(
                [d for d in range(docs) if Shard(index, count).contains(d)]
            )
            assert partial["partial"]["task_docs"][task] == docs
            assert all(Shard(index, count).contains(r["doc_id"]) for r in run.samples(model, task))
        shard_dirs.append(tmp_path / f"shard{index}")
    # merge takes task code only from the folders given on its own command line (issue 49): the run's own, here
    trusted = [a for i, a in enumerate(args) if i and args[i - 1] == "--include_path"]
    merged = harness(
        "merge", tmp_path / "merged", *shard_dirs, *(x for path in trusted for x in ("--include_path", path))
    )
    assert merged.code == 0, merged.err
    return full, merged


@pytest.mark.slow  # three runs and a merge
def test_merged_shards_equal_the_unsharded_run(tmp_path: Path, data_dir: Path, harness) -> None:
    seeded = ("--seed", "5", "--batch_size", "2", "--log_samples")
    args = (*run_args(",".join(RANDOM_TASKS), "random", data_dir=data_dir), *seeded)
    full, merged = _shard_then_merge(harness, tmp_path, 3, args, "random", RANDOM_TASKS)
    expected = full.results("random")
    merged_file = sorted((tmp_path / "merged" / "random").glob("results_*.json"))[-1]
    got = json.loads(merged_file.read_text())
    for key in SAME:
        assert got[key] == expected[key], key
    assert "partial" not in got and got["config"]["shard"] is None
    assert [m["shard"] for m in got["config"]["merged_from"]] == ["0/3", "1/3", "2/3"]
    # Random guesses differ per sample, so a sample merged into the wrong place would show.
    assert expected["sample_counts"]["mmneedle_m1_n2_k1_pos"]["n_scored"] == 12
    for task in RANDOM_TASKS:
        assert _records(tmp_path / "merged" / "random", task) == _records(tmp_path / "full" / "random", task)
        assert _header(tmp_path / "merged" / "random", task) == _header(tmp_path / "full" / "random", task)
        texts = PromptTexts.at(tmp_path / "merged" / "random" / f"prompts_{task}.jsonl")  # the shards' stores, merged
        assert all(texts.text(r["prompt_sha256"]) for r in _records(tmp_path / "merged" / "random", task))
    assert "merged 3 shards" in merged.err
    report = harness("report", tmp_path)  # the shards' partial results stay out of the report
    assert report.code == 0, report.err
    text = (tmp_path / "report.md").read_text()
    assert "Not shown: 3 results file(s) of `--shard` runs" in text
    assert "| mmneedle_m1_n2_k1_pos | 1.0 | 12 | 0 | existence_acc |" in text
    # The shards' sample logs, merged, are the unsharded run's, named by the merged results' date as a run names them.
    date = merged_file.stem.removeprefix("results_")
    for task in RANDOM_TASKS:
        (logged,) = (tmp_path / "full" / "random").glob(f"samples_{task}_*.jsonl")
        assert (tmp_path / "merged" / "random" / f"samples_{task}_{date}.jsonl").read_text() == logged.read_text()
    assert got["config"]["log_samples"] is True
    next((tmp_path / "shard1" / "random").glob(f"samples_{RANDOM_TASKS[0]}_*.jsonl")).unlink()
    again = harness("merge", tmp_path / "merged_again", *(tmp_path / f"shard{index}" for index in range(3)))
    assert again.code == 0, again.err
    assert (
        f"harness merge: no sample log of {RANDOM_TASKS[0]}: " in again.err
        and " is missing (run that shard" in again.err
    )
    (again_file,) = (tmp_path / "merged_again" / "random").glob("results_*.json")
    date = again_file.stem.removeprefix("results_")
    logs = {path.name for path in (tmp_path / "merged_again" / "random").glob("samples_*.jsonl")}
    assert logs == {f"samples_{task}_{date}.jsonl" for task in RANDOM_TASKS[1:]}
    assert json.loads(again_file.read_text())["config"]["log_samples"] is False


@pytest.mark.slow  # three runs and a merge
def test_merged_shards_give_a_group_the_unsharded_run_s_clustered_errors(
    tmp_path: Path, data_dir: Path, harness
) -> None:
    """Issue 48: a group's clustered error needs every member's rows; the shards' journals hold them, so the merged
    run's groups are the unsharded run's, an M=1 image shown at K=1 and K=5 counted once in both."""
    groups = tmp_path / "groups"
    groups.mkdir()
    (groups / "over_k.yaml").write_text(
        "group: m1_n2_pos_over_k\ntask: [mmneedle_m1_n2_k1_pos, mmneedle_m1_n2_k5_pos]\n"
        "aggregate_metric_list:\n  - metric: existence_acc\n    aggregation: strict_mean\n"
    )
    tasks = ["mmneedle_m1_n2_k1_pos", "mmneedle_m1_n2_k5_pos"]
    args = run_args("m1_n2_pos_over_k", "random", include_path=groups, data_dir=data_dir)
    full, _ = _shard_then_merge(harness, tmp_path, 2, args, "random", tasks)
    expected = full.results("random")
    got = only_results(tmp_path / "merged" / "random")
    assert got["groups"] == expected["groups"] and got["uncertainty"] == expected["uncertainty"]
    pooled = got["uncertainty"]["m1_n2_pos_over_k"]["existence_acc"]
    assert pooled["n"] == 24 and pooled["n_clusters"] == 12
    assert "existence_acc_stderr_clustered,none" in got["groups"]["m1_n2_pos_over_k"]


@pytest.mark.slow  # a tiny LLaVA's three runs and a merge
def test_merged_hf_shards_equal_the_unsharded_run(tmp_path: Path, data_dir: Path, tiny_llava: Path, harness) -> None:
    task = "mmneedle_m10_n1_k2_neg"
    args = (*hf_run(task, data_dir, checkpoint=tiny_llava), "--limit", "5", "--gen_kwargs", "max_gen_toks=4")
    name = checkpoint_folder(tiny_llava)
    full, _ = _shard_then_merge(harness, tmp_path, 2, args, name, [task])
    expected = full.results(name)
    got = only_results(tmp_path / "merged" / name)
    for key in SAME:
        assert got[key] == expected[key], key
    assert got["usage"][task]["completion_tokens"] > 0
    assert _records(tmp_path / "merged" / name, task) == _records(tmp_path / "full" / name, task)


def test_shard_and_merge_mistakes_are_one_line_errors(tmp_path: Path, data_dir: Path, harness) -> None:
    args = run_args("mmneedle_m1_n2_k1_neg", "constant", model_args="answer=-1", data_dir=data_dir)
    run = harness(*args, "--shard", "3/3")
    assert run.code == 2 and "0-based: the last of 3 is 2/3" in run.err and "Traceback" not in run.err
    run = harness(*args, "--shard", "half")
    assert run.code == 2 and "--shard expects 'i/n'" in run.err

    for index in (0, 1):
        assert harness(*args, "--shard", f"{index}/3", "--output_path", tmp_path / f"s{index}").code == 0
    run = harness("merge", tmp_path / "m", tmp_path / "s0", tmp_path / "s1")
    assert run.code == 2 and "missing shard(s) 2/3" in run.err
    assert harness(*args, "--output_path", tmp_path / "whole").code == 0
    run = harness("merge", tmp_path / "m", tmp_path / "s0", tmp_path / "whole")
    assert run.code == 2 and "not the results of a --shard run" in run.err
    run = harness("merge", tmp_path / "m", tmp_path / "s0", tmp_path / "nowhere")
    assert run.code == 2 and "no such folder" in run.err
    (results,) = (tmp_path / "s1").rglob("results_*.json")
    edited = json.loads(results.read_text())
    results.write_text(json.dumps({**edited, "config": {**edited["config"], "shard": "9/3"}}))
    run = harness("merge", tmp_path / "m", tmp_path / "s0", tmp_path / "s1")
    assert run.code == 2 and f"{results}: config.shard: --shard 9/3: the index must be in 0..2" in run.err
    results.write_text(json.dumps(edited))
    other = run_args("mmneedle_m1_n2_k1_neg", "constant", model_args='answer="1, 1, 1"', data_dir=data_dir)
    assert harness(*other, "--shard", "2/3", "--output_path", tmp_path / "s2").code == 0
    run = harness("merge", tmp_path / "m", tmp_path / "s0", tmp_path / "s1", tmp_path / "s2")
    assert run.code == 2 and "are not shards of one run (they differ in: model_args, model_identity)" in run.err
    # `make fuzz` found it: a shard's results whose n-samples lacks the task, once a KeyError out of the merge
    assert harness(*args, "--shard", "2/3", "--output_path", tmp_path / "s3").code == 0
    (first,) = (tmp_path / "s0").rglob("results_*.json")
    first.write_text(json.dumps({**json.loads(first.read_text()), "n-samples": {}}))
    run = harness("merge", tmp_path / "m", tmp_path / "s0", tmp_path / "s1", tmp_path / "s3")
    assert run.code == 2 and "Traceback" not in run.err
    assert f"{first}: n-samples.mmneedle_m1_n2_k1_neg.original: expected the count of the build's samples" in run.err


def test_raising_limit_resumes_and_updates_the_task_size(tmp_path: Path, data_dir: Path, harness) -> None:
    task = "mmneedle_m1_n2_k1_pos"
    args = run_args(task, "random", data_dir=data_dir, out=tmp_path)
    assert harness(*args, "--limit", "4").code == 0
    assert _header(tmp_path / "random", task)["parts"]["task_docs"] == 4
    fingerprint = _header(tmp_path / "random", task)["fingerprint"]
    run = harness(*args, "--limit", "9")
    assert run.code == 0 and f"{task}: 4 samples resumed from the journal, 5 generated now" in run.err
    header = _header(tmp_path / "random", task)
    assert header["parts"]["task_docs"] == 9 and header["fingerprint"] == fingerprint
    assert len(_records(tmp_path / "random", task)) == 9


@pytest.mark.slow  # sharded runs and merges (~2 s)
def test_merge_reports_records_of_the_wrong_shape_and_the_shard_to_run_again(
    tmp_path: Path, data_dir: Path, harness
) -> None:
    task = "mmneedle_m1_n2_k1_pos"
    args = run_args(task, "random", data_dir=data_dir)
    full, _ = _full_and_two_shards(harness, tmp_path, args)
    journal = tmp_path / "s0" / "random" / f"journal_{task}.jsonl"
    header, first, second, *rest = journal.read_bytes().splitlines(keepends=True)
    record = json.loads(first)
    record["metrics"]["exact_acc_by_cell"] = "x"
    journal.write_bytes(
        header + (json.dumps(record) + "\n").encode() + b"[" * 100_000 + b"]" * 100_000 + b"\n" + b"".join(rest)
    )
    merged = harness("merge", tmp_path / "m", tmp_path / "s0", tmp_path / "s1")
    assert merged.code == 2 and "Traceback" not in merged.err
    assert f"{journal}:2: skipped an unreadable journal line (metrics.exact_acc_by_cell is a str" in merged.err
    assert f"{journal}:3: skipped an unreadable journal line (nested too deeply to read)" in merged.err
    assert "samples missing per shard: {'0/2': 2}); finish those shards, then merge again" in merged.err
    again = harness(*args, "--shard", "0/2", "--output_path", tmp_path / "s0")  # the same command: those two run
    assert again.code == 0 and "4 samples resumed from the journal, 2 generated now" in again.err
    merged = harness("merge", tmp_path / "m", tmp_path / "s0", tmp_path / "s1")
    assert merged.code == 0, merged.err
    got = json.loads(sorted((tmp_path / "m" / "random").glob("results_*.json"))[-1].read_text())
    assert got["results"] == full.results("random")["results"]


def test_merge_reads_records_only_with_the_data_gone_and_refuses_shards_that_sent_otherwise(
    tmp_path: Path, data_dir: Path, harness
) -> None:
    """Issue 62: `harness merge` opens no build and rebuilds no request (what was sent is the records'), so it merges
    with the data gone; the shards must still agree on what they sent by (`config.input_policies`)."""
    data = tmp_path / "data"
    shutil.copytree(data_dir, data)
    task = "mmneedle_m1_n2_k1_neg"
    args = (*run_args(task, "random", data_dir=data), "--seed", "3")
    full, shards = _full_and_two_shards(harness, tmp_path, args)
    shutil.rmtree(data)
    run = harness("merge", tmp_path / "m", *shards)
    assert run.code == 0, run.err
    got = json.loads(next((tmp_path / "m").rglob("results_*.json")).read_text())
    for key in SAME:
        assert got[key] == full.results("random")[key], key
    assert got["datasets"][task]["location"] == str(data / "mmneedle")  # the build the shards recorded reading

    (path,) = shards[0].rglob("results_*.json")
    edited = json.loads(path.read_text())
    edited["config"]["input_policies"] = {task: {"image_scale": 0.5}}
    path.write_text(json.dumps(edited))
    run = harness("merge", tmp_path / "m2", *shards)
    assert run.code == 2 and "differ in: input_policies" in run.err and "Traceback" not in run.err


@pytest.mark.slow  # sharded runs and merges (~3 s)
def test_merge_says_how_to_rescore_replies_scored_otherwise_and_merges_predict_only_shards(
    tmp_path: Path, data_dir: Path, harness
) -> None:
    """Merge rescores nothing (a score needs the build's row): shards scored otherwise than the task scores now are one
    line saying how to rescore them; `--predict_only` shards merge into the unsharded `--predict_only` run's results."""
    task = "mmneedle_m1_n2_k1_pos"
    args = (*run_args(task, "random", data_dir=data_dir), "--predict_only")
    full, shards = _full_and_two_shards(harness, tmp_path, args)
    run = harness("merge", tmp_path / "m", *shards)
    assert run.code == 0, run.err
    got = json.loads(next((tmp_path / "m").rglob("results_*.json")).read_text())
    expected = full.results("random")
    for key in (*SAME, "predict_only", "groups", "sample_counts"):
        assert got.get(key) == expected.get(key), key
    assert "predict_only" in got and not got["results"][task].get("existence_acc,none")

    for shard in shards:  # the shards' journals say they were scored with a metric the task no longer has
        journal = next(shard.rglob(f"journal_{task}.jsonl"))
        header, *rest = journal.read_text().splitlines(keepends=True)
        parsed = json.loads(header)
        parsed["parts"]["scoring"]["metrics"] = ["old_acc"]
        journal.write_text(json.dumps(parsed) + "\n" + "".join(rest))
    run = harness("merge", tmp_path / "m2", *shards)
    assert run.code == 2 and "Traceback" not in run.err
    assert "stored replies were scored otherwise (the task's metrics changed (added" in run.err
    assert "removed old_acc)); run each shard again (it rescores them, generating nothing), then merge" in run.err


@pytest.mark.slow  # sharded runs and merges (~3 s)
def test_merge_says_how_to_make_cluster_keys_anew_when_the_task_declares_another(
    tmp_path: Path, data_dir: Path, harness
) -> None:
    """Merge reads the cluster keys the shards journalled (it opens no row), so keys made by a `cluster_key:` the task no
    longer declares are one line saying how to make them anew; the shard run again merges into the unsharded run's
    results, errors included."""
    task = "mmneedle_m1_n2_k1_pos"
    args = (*run_args(task, "random", data_dir=data_dir), "--seed", "4")
    full, shards = _full_and_two_shards(harness, tmp_path, args)
    (path,) = shards[1].rglob("results_*.json")  # as a shard run before the task's key was changed records it
    edited = json.loads(path.read_text())
    declared = edited["configs"][task]["cluster_key"]
    assert declared == full.results("random")["configs"][task]["cluster_key"] and declared
    edited["configs"][task]["cluster_key"] = "needle_id"
    path.write_text(json.dumps(edited))
    journal = next(shards[1].rglob(f"journal_{task}.jsonl"))  # and the keys that key made: one for all
    header, *lines = journal.read_text().splitlines()
    stale = [{**json.loads(line), "cluster": ["needle_id:same"]} for line in lines]
    journal.write_text("\n".join([header, *map(json.dumps, stale)]) + "\n")
    run = harness("merge", tmp_path / "m", *shards)
    assert run.code == 2 and "Traceback" not in run.err
    assert f'{path}: {task}\'s cluster keys were made by `cluster_key: "needle_id"` of ' in run.err
    assert "run each shard again (it makes them anew, generating nothing), then merge" in run.err
    again = harness(*args, "--shard", "1/2", "--output_path", shards[1])
    assert again.code == 0 and "0 generated now" in again.err, again.err
    run = harness("merge", tmp_path / "m", *shards)
    assert run.code == 0, run.err
    got = json.loads(next((tmp_path / "m").rglob("results_*.json")).read_text())
    for key in SAME:
        assert got[key] == full.results("random")[key], key
