"""`cluster_key:` in a task's YAML: its three forms read and written back, a bad value one line naming the file and
line, the keys a row gets (namespaced by the benchmark, merged across its tasks), and each benchmark's declared key
found in the rows its builder writes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness.config.cluster_key import ClusterKey, parse_cluster_key
from harness.config.task_index import TaskIndex
from harness.errors import TaskConfigError


def _task(tmp_path: Path, cluster_key: str) -> Path:
    path = tmp_path / "t.yaml"
    text = f"task: t\ndataset_path: bench\ndoc_to_text: prompt\n{textwrap.dedent(cluster_key).strip()}\n"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("written", "columns", "overlap", "back"),
    [
        ("cluster_key: source_id", ("source_id",), (), "source_id"),
        ("cluster_key: [dataset, source_id]", ("dataset", "source_id"), (), ["dataset", "source_id"]),
        ("cluster_key:\n  overlap: image_sha256", (), ("image_sha256",), {"overlap": ["image_sha256"]}),
        (
            "cluster_key:\n  key: [subset, sample_id]\n  overlap: [image_sha256, haystack_ids]",
            ("subset", "sample_id"),
            ("image_sha256", "haystack_ids"),
            {"key": ["subset", "sample_id"], "overlap": ["image_sha256", "haystack_ids"]},
        ),
    ],
)
def test_the_three_forms_are_read_and_recorded_as_written(
    tmp_path: Path, written: str, columns: tuple[str, ...], overlap: tuple[str, ...], back: object
) -> None:
    config = TaskIndex([_task(tmp_path, written)], include_defaults=False).tasks["t"]
    assert config.cluster_key is not None
    assert (config.cluster_key.columns, config.cluster_key.overlap) == (columns, overlap)
    assert config.to_dict()["cluster_key"] == back  # what the results' `configs` record


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ("cluster_key: 3", "`cluster_key` must be a column name, a list of column names, or a mapping"),
        ("cluster_key: []", "`cluster_key` must be a column name"),
        ("cluster_key: [a, a]", "names a column twice"),
        ("cluster_key: [a, 1]", "`cluster_key` must be a column name"),
        ("cluster_key:\n  keys: a", "takes `key:` and `overlap:` only, not keys"),
        ("cluster_key: {}", "and neither is given"),
        ("cluster_key:\n  key: a\n  overlap: a", "as a key and an overlap"),
        ("cluster_key:\n  overlap: ''", "`cluster_key`.overlap must be"),
    ],
)
def test_a_bad_cluster_key_is_one_line_naming_the_file_and_line(tmp_path: Path, written: str, said: str) -> None:
    path = _task(tmp_path, written)
    with pytest.raises(TaskConfigError, match=rf"^{path}:4: .*") as err:
        TaskIndex([path], include_defaults=False)
    assert said in str(err.value) and "\n" not in str(err.value)


def test_a_row_s_keys_are_namespaced_and_the_same_item_merges_across_tasks() -> None:
    key = ClusterKey(("dataset", "source_id"), (), "x.yaml:3")
    at_8k = key.keys("mmlongbench", {"dataset": "viquae", "source_id": "viquae_0", "length": 8192})
    at_128k = key.keys("mmlongbench", {"dataset": "viquae", "source_id": "viquae_0", "length": 131072})
    assert at_8k == at_128k == ['mmlongbench:{"dataset":"viquae","source_id":"viquae_0"}']
    other_dataset = key.keys("mmlongbench", {"dataset": "food101", "source_id": "viquae_0"})
    other_benchmark = key.keys("milebench", {"dataset": "viquae", "source_id": "viquae_0"})
    assert len({*at_8k, *other_dataset, *other_benchmark}) == 3
    assert key.keys("mmlongbench", {"dataset": "viquae", "source_id": None}) == []  # no key: the row stands alone
    overlap = ClusterKey(("subset", "sample_id"), ("image_sha256",), "x.yaml:3")
    keys = overlap.keys("milebench", {"subset": "ALFRED", "sample_id": 0, "image_sha256": ["a", "b", "a"]})
    assert keys == [
        'milebench:{"sample_id":0,"subset":"ALFRED"}',
        'milebench:{"image_sha256":"a"}',
        'milebench:{"image_sha256":"b"}',
    ]
    with pytest.raises(TaskConfigError, match=r"^x\.yaml:3: `cluster_key` names 'sample_id', which the task's rows"):
        overlap.keys("milebench", {"subset": "ALFRED", "image_sha256": []})
    assert parse_cluster_key(None, "x.yaml:3") is None


def test_every_benchmark_declares_a_cluster_key_its_templates_give_every_task() -> None:
    """The papers' benchmarks each declare one in their template; for a new benchmark it is optional (without it each
    row stands alone, docs/ADDING_A_BENCHMARK.md)."""
    index = TaskIndex()
    expected = {
        "mmneedle_m1_n2_k1_pos": ((), ("image_sha256",)),
        "mmlongbench_vrag_viquae_8k": (("dataset", "source_id"), ()),
        "mmlongbench_docvqa_slidevqa_8k": (("dataset", "doc_name"), ()),
        "mmlongbench_ablation_text_doc_8k": (("dataset", "doc_name"), ()),
        "mmlongbench_v1_1_docvqa_slidevqa_8k": (("dataset", "doc_name"), ()),
        "milebench_text_needle": (("subset", "sample_id"), ("image_sha256",)),
        "milebench_text_needle_combined": (("subset", "sample_id"), ("image_sha256",)),
        "locovqa_mmstar_cmp_4": (("task", "item_id"), ()),
        "locovqa_needle_int_4": (("task", "answer"), ()),
    }
    declaring = {index.tasks[task].dataset_path for task in expected}
    for name, config in index.tasks.items():
        assert config.dataset_path not in declaring or config.cluster_key is not None, f"{name} declares no cluster_key"
    for task, (columns, overlap) in expected.items():
        key = index.tasks[task].cluster_key
        assert key is not None and (key.columns, key.overlap) == (columns, overlap), task
