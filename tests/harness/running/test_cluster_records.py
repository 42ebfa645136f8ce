"""Each sample's cluster keys are recorded where later commands read them without the data (the journal's `cluster`,
the sample log's `cluster`), a journal from before the keys were recorded resumes without generating anything and
gets them when the task finishes, and `cluster_key:` is no part of a task's identity."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from harness.config.cluster_key import ClusterKey
from harness.config.task_index import TaskIndex
from harness.running.journal.journal_file import journal_name
from harness.running.task.task import Task

K1_M1 = "mmneedle_m1_n2_k1_pos"
K5_M1 = "mmneedle_m1_n2_k5_pos"


def _records(folder: Path, task: str) -> list[dict[str, object]]:
    header, *lines = (folder / journal_name(task)).read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_the_journal_and_the_sample_log_hold_each_row_s_keys_and_one_image_merges_across_k(
    tmp_path: Path, data_dir: Path, harness
) -> None:
    run = harness(
        "--tasks", f"{K1_M1},{K5_M1}", "--model", "random", "--data_dir", data_dir, "--output_path", tmp_path,
        "--log_samples",
    )  # fmt: skip
    assert run.code == 0, run.err
    folder = tmp_path / "random"
    at_k1 = {r["sample_id"]: r["cluster"] for r in _records(folder, K1_M1)}
    at_k5 = {r["sample_id"]: r["cluster"] for r in _records(folder, K5_M1)}
    first_k1, first_k5 = at_k1["m1_n2_k1-00000"], at_k5["m1_n2_k5-00000"]
    assert len(first_k1) == 1 and first_k1[0].startswith('mmneedle:{"image_sha256":')
    assert first_k1 == first_k5  # the M=1 sample shows one stitched image at K=1 and K=5: one item
    assert len({k for keys in at_k1.values() for k in keys}) == len(at_k1)  # and a different one per sample
    (log,) = folder.glob(f"samples_{K1_M1}_*.jsonl")
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert all(line["cluster"] == at_k1[line["sample_id"]] for line in logged)


def test_a_journal_from_before_resumes_and_gets_its_keys_when_the_task_finishes(
    tmp_path: Path, data_dir: Path, harness
) -> None:
    args = ("--tasks", K1_M1, "--model", "random", "--data_dir", data_dir, "--output_path", tmp_path)
    assert harness(*args).code == 0
    journal = tmp_path / "random" / journal_name(K1_M1)
    header, *lines = journal.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    keys = {r["sample_id"]: r.pop("cluster") for r in records}  # as a journal written before issue 48
    journal.write_text("\n".join([header, *map(json.dumps, records)]) + "\n")
    first = json.loads(next((tmp_path / "random").glob("results_*.json")).read_text())

    again = harness(*args)
    assert again.code == 0, again.err
    assert f"{len(records)} samples resumed from the journal, 0 generated now" in again.err
    assert {r["sample_id"]: r["cluster"] for r in _records(tmp_path / "random", K1_M1)} == keys
    assert journal.read_text().splitlines()[0] == header  # the same run: its fingerprint unchanged
    assert len(journal.read_text().splitlines()) == len(records) + 1  # compacted: one line per sample
    latest = sorted((tmp_path / "random").glob("results_*.json"))[-1]
    assert json.loads(latest.read_text())["results"] == first["results"]


def test_cluster_key_is_no_part_of_a_task_s_identity() -> None:
    config = TaskIndex().tasks[K1_M1]
    other = replace(config, cluster_key=ClusterKey(("sample_id",), (), "x.yaml:1"))
    none = replace(config, cluster_key=None)
    assert Task(config).identity() == Task(other).identity() == Task(none).identity()
