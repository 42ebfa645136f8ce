"""`--shard i/n` partitions exactly; merging shard journals gives the unsharded run's journals."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from harness.outputs.merge.journals import MergeError, merge_dirs, read_journal
from harness.running.journal.journal_file import journal_name
from harness.running.journal.prompt_store import prompts_name
from harness.running.journal.sample_store import SampleStore
from harness.running.sharding import Shard, parse_shard, shard_sizes


def test_parse_shard():
    assert parse_shard("0/4") == Shard(0, 4) and parse_shard(" 3 / 4 ") == Shard(3, 4)
    assert parse_shard(None) is None and parse_shard("") is None
    assert str(parse_shard("2/5")) == "2/5"
    with pytest.raises(ValueError, match="0-based: the last of 4 is 3/4"):
        parse_shard("4/4")
    with pytest.raises(ValueError, match="expects 'i/n'"):
        parse_shard("1of4")
    with pytest.raises(ValueError, match="at least 1"):
        parse_shard("0/0")
    with pytest.raises(ValueError, match="expects 'i/n'"):
        parse_shard("-1/4")


def test_shards_partition_every_task_exactly():
    rng = random.Random(5)
    for _ in range(200):
        num_docs, count = rng.randint(0, 300), rng.randint(1, 17)
        docs = list(range(num_docs))
        parts = [_select(Shard(i, count), docs) for i in range(count)]
        assert sorted(d for p in parts for d in p) == docs
        assert [len(p) for p in parts] == shard_sizes(num_docs, count)
        assert max(map(len, parts)) - min(map(len, parts)) <= 1
        assert parts == [_select(Shard(i, count), docs) for i in range(count)]  # deterministic
        # A document's shard does not depend on how many documents the task has (--limit).
        limit = rng.randint(0, num_docs)
        assert [_select(Shard(i, count), docs[:limit]) for i in range(count)] == [
            [d for d in p if d < limit] for p in parts
        ]


def _select(shard: Shard, doc_ids) -> list[int]:
    """The documents a shard runs, as the runner picks them."""
    return [d for d in doc_ids if shard.contains(d)]


# --- merge ------------------------------------------------------------------------------------------

TASKS = {"mmneedle_m1_n2_k1": 11, "mmneedle_m10_n1_k1": 7}
PARTS = {"model": {"model": "counting"}, "settings": {"max_gen_toks": 32}, "dataset_hash": "abc123"}


def _record(task: str, doc_id: int) -> dict:
    return {
        "doc_id": doc_id,
        "sample_id": f"{task}-{doc_id:05d}",
        "status": "ok",
        "response": f"answer {doc_id}",
        "metrics": {"exact": doc_id % 3 == 0},
    }


def _run(out: Path, shard: Shard | None, *, tasks=TASKS, parts=PARTS, resume_errors=False) -> Path:
    """Write the journals a run (or one shard of it) would write."""
    for task, num_docs in tasks.items():
        run_parts = {**parts, "task_docs": num_docs}
        if shard is not None:
            run_parts["shard"] = str(shard)
        store = SampleStore(out / "counting" / journal_name(task), task, run_parts)
        docs = _select(shard, range(num_docs)) if shard else list(range(num_docs))
        if resume_errors:  # a first attempt that failed, superseded by a later record of the same sample
            store.add([{**_record(task, d), "status": "error", "response": None} for d in docs[:2]])
        store.add([_record(task, d) for d in docs])
        store.close()
    return out


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_merged_shards_equal_the_unsharded_run(tmp_path):
    unsharded = _run(tmp_path / "full", None)
    shard_dirs = [_run(tmp_path / f"s{i}", Shard(i, 3), resume_errors=(i == 1)) for i in range(3)]
    report = merge_dirs(shard_dirs, tmp_path / "merged")
    assert {t: len(j.records) for t, j in report.journals.items()} == TASKS and report.shards == 3
    for task in TASKS:
        merged = _lines(tmp_path / "merged" / "counting" / journal_name(task))
        full = _lines(unsharded / "counting" / journal_name(task))
        assert merged[0] == full[0]  # same header: same parts, same fingerprint
        assert merged[1:] == sorted(full[1:], key=lambda r: r["doc_id"])
        # The runner's journal reader accepts the merged file as a finished unsharded run.
        store = SampleStore(
            tmp_path / "merged" / "counting" / journal_name(task), task, {**PARTS, "task_docs": TASKS[task]}
        )
        assert all(store.is_done(f"{task}-{d:05d}") for d in range(TASKS[task]))
        store.close()


def test_merge_refuses_what_is_not_one_complete_run(tmp_path):
    shards = [_run(tmp_path / f"s{i}", Shard(i, 3)) for i in range(3)]
    with pytest.raises(MergeError, match=r"missing shard\(s\) 2/3"):
        merge_dirs(shards[:2], tmp_path / "m1")
    with pytest.raises(MergeError, match="shard 1/3 given twice"):
        merge_dirs([shards[0], shards[1], shards[1]], tmp_path / "m2")
    other = _run(tmp_path / "other", Shard(2, 3), parts={**PARTS, "dataset_hash": "zzz"})
    with pytest.raises(MergeError, match="not shards of the same run .*dataset_hash"):
        merge_dirs([shards[0], shards[1], other], tmp_path / "m3")
    four = _run(tmp_path / "four", Shard(2, 4))
    with pytest.raises(MergeError, match="shard 2/4 of 4, but other shards are of 3"):
        merge_dirs([shards[0], shards[1], four], tmp_path / "m4")
    unsharded = _run(tmp_path / "full", None)
    with pytest.raises(MergeError, match="not a sharded run"):
        merge_dirs([shards[0], unsharded], tmp_path / "m5")
    with pytest.raises(MergeError, match="must not be one of the shard folders"):
        merge_dirs(shards, shards[0])


def test_merge_detects_misplaced_duplicate_and_missing_samples(tmp_path, capsys):
    task = "mmneedle_m1_n2_k1"
    shards = [_run(tmp_path / f"s{i}", Shard(i, 2), tasks={task: 6}) for i in range(2)]
    journal = shards[1] / "counting" / journal_name(task)
    original = journal.read_text()

    lines = original.splitlines()
    misplaced = json.loads(lines[1]) | {"doc_id": 2, "sample_id": f"{task}-00002"}
    journal.write_text("\n".join([*lines, json.dumps(misplaced)]) + "\n")
    with pytest.raises(MergeError, match="doc_id 2.*does not belong to shard 1/2"):
        merge_dirs(shards, tmp_path / "m1")

    duplicate = json.loads(lines[1]) | {"sample_id": f"{task}-00000"}
    journal.write_text("\n".join([*lines, json.dumps(duplicate)]) + "\n")
    with pytest.raises(MergeError, match=f"sample {task}-00000 appears in"):
        merge_dirs(shards, tmp_path / "m2")

    journal.write_text("\n".join(lines[:-1]) + "\n")  # shard 1 never finished doc 5
    with pytest.raises(MergeError, match=r"hold 5 samples, the task has 6 \(samples missing per shard: \{'1/2': 1\}\)"):
        merge_dirs(shards, tmp_path / "m3")

    # A record cut short by a kill is reported with its file:line and left out (its sample would run again).
    journal.write_text(original + '{"doc_id": 7, "sample_')
    assert {t: len(j.records) for t, j in merge_dirs(shards, tmp_path / "m4").journals.items()} == {task: 6}
    assert f"{journal}:5: skipped an unreadable journal line (not JSON" in capsys.readouterr().err
    journal.write_text(original.replace('"status": "ok"', '"status": "ok", "usage": "many"', 1))
    with pytest.raises(MergeError, match=r"hold 5 samples, the task has 6 \(samples missing per shard: \{'1/2': 1\}\)"):
        merge_dirs(shards, tmp_path / "m5")
    assert f"{journal}:2: skipped an unreadable journal line (usage is a str, not an object" in capsys.readouterr().err


def test_merge_needs_journals(tmp_path):
    (tmp_path / "a").mkdir()
    with pytest.raises(MergeError, match="no per-sample journals"):
        merge_dirs([tmp_path / "a"], tmp_path / "m")
    with pytest.raises(MergeError, match="no such folder"):
        merge_dirs([tmp_path / "missing"], tmp_path / "m")
    one = _run(tmp_path / "one", Shard(0, 2), tasks={"t1": 3})
    two = _run(tmp_path / "two", Shard(1, 2), tasks={"t2": 3})
    with pytest.raises(MergeError, match="task 't1': no journal in"):
        merge_dirs([one, two], tmp_path / "m2")
    journal = read_journal(one / "counting" / journal_name("t1"))
    assert journal.parts["shard"] == "0/2" and [r["doc_id"] for r in journal.records] == [0, 2]


def test_merge_reads_no_journal_or_store_through_a_link(tmp_path):
    """A shard's journal or prompt store that is a link to a file elsewhere is refused, naming it (issue 77)."""
    one, two = (_run(tmp_path / name, Shard(k, 2), tasks={"t1": 3}) for k, name in enumerate(("one", "two")))
    journal = two / "counting" / journal_name("t1")
    journal.rename(tmp_path / "planted.jsonl")
    journal.symlink_to(tmp_path / "planted.jsonl")
    with pytest.raises(MergeError, match=f"{journal}: a link, or outside the shard's folder"):
        merge_dirs([one, two], tmp_path / "m")
    journal.unlink()
    (tmp_path / "planted.jsonl").rename(journal)
    store = two / "counting" / prompts_name(journal_name("t1"))
    store.symlink_to(tmp_path / "elsewhere.jsonl")
    with pytest.raises(MergeError, match=f"{store}: a link, or outside the shard's folder"):
        merge_dirs([one, two], tmp_path / "m")


def test_merged_journals_reaggregate_to_the_unsharded_results(mmneedle_dir, tmp_path, capsys):
    """The route `harness merge` takes: shard journals -> merge_dirs -> each task aggregated from the merged
    journal's records alone, its data never loaded (nothing generated) -> the unsharded run's metrics and counts."""
    from harness.config.task_index import TaskIndex
    from harness.outputs.merge.journals import write_journal
    from harness.outputs.merge.runs import _merged_task
    from harness.run.cli import main
    from harness.running.task.task import Task

    names = ["mmneedle_m1_n2_k1_pos", "mmneedle_m1_n2_k1_neg"]
    full = tmp_path / "full"
    assert (
        main(
            [
                "--tasks",
                ",".join(names),
                "--model",
                "constant",
                "--model_args",
                'answer="1, 1, 2"',
                "--data_dir",
                str(mmneedle_dir),
                "--output_path",
                str(full),
                "--no_progress",
            ]
        )
        == 0
    )
    capsys.readouterr()
    (results_file,) = full.rglob("results_*.json")
    full_results = json.loads(results_file.read_text())
    expected = {
        task: {**entry, **full_results["sample_counts"][task]} for task, entry in full_results["results"].items()
    }

    # What three shard runs write, per the wiring: the same journal, split by doc_id % 3, "shard" in parts.
    shard_dirs = []
    for index in range(3):
        for journal_path in full.rglob("journal_*.jsonl"):
            journal = read_journal(journal_path)
            records = [r for r in journal.records if Shard(index, 3).contains(r["doc_id"])]
            target = tmp_path / f"shard{index}" / journal_path.relative_to(full)
            write_journal(target, journal.task, {**journal.parts, "shard": f"{index}/3"}, records)
        shard_dirs.append(tmp_path / f"shard{index}")
    merged = tmp_path / "merged"
    merge_dirs(shard_dirs, merged)

    index = TaskIndex([])
    (model_dir,) = {p.parent for p in merged.rglob("journal_*.jsonl")}
    tasks = [Task(index.tasks[name], {}) for name in names]
    results = [_merged_task(t, read_journal(model_dir / journal_name(t.name)), {}, 0.0, None) for t in tasks]
    assert all(task.docs is None for task in tasks)  # the merge read records only
    for result in results:
        assert result.generated == 0 and result.resumed == result.n_effective
        want = expected[result.task.name]
        assert {f"{k},none": v for k, v in result.values.items()} == {
            k: v for k, v in want.items() if k.endswith(",none") and "_stderr" not in k
        }
        assert {f"n_{k}": v for k, v in result.counts.items()} == {
            k: v for k, v in want.items() if k.startswith("n_") and k != "n_scored"
        }
