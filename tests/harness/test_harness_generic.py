"""The harness on the benchmark-neutral toy task (`toy_benchmark`): scoring, the random baseline's hook,
group aggregation rules, and reading a build whose images are stored once."""

from __future__ import annotations

import io
import math
import textwrap
from pathlib import Path

import datasets
import pytest
from PIL import Image

from builders.core import contract
from harness.api import Model, ModelFacts, Response
from harness.config.group_rules import MemberScore, strict_mean
from harness.config.task_config import GroupConfig
from harness.config.task_index import TaskIndex
from harness.errors import TaskConfigError
from harness.outputs.results.groups import group_entries
from tests.support.hf_runs import hf_run
from tests.support.run_setups import checkpoint_folder, registered_model, run_args


def test_toy_task_scores_without_any_benchmark(tmp_path: Path, toy_dir: Path, toy_tasks: Path, harness) -> None:
    toy = {"include_path": toy_tasks, "data_dir": toy_dir, "out": tmp_path}
    run = harness(*run_args("toy_colors,toy_pairs", "constant", model_args="answer=red", **toy))
    assert run.code == 0, run.err
    results = run.results("constant")["results"]
    # Colours of the six rows: blue, green, red, yellow, blue, green.
    assert results["toy_colors"]["acc,none"] == pytest.approx(1 / 6)
    assert run.results("constant")["sample_counts"]["toy_colors"]["n_scored"] == 6
    assert results["toy_pairs"]["acc,none"] == 0.0

    run = harness(*run_args("toy_colors,toy_pairs", "random", **toy))
    assert run.code == 0, run.err
    guesses = {
        s["sample_id"]: s["response"] for task in ("toy_colors", "toy_pairs") for s in run.samples("random", task)
    }
    assert {guesses[f"colors-{i}"] for i in range(6)} <= {"red", "green", "blue", "yellow"}
    assert {guesses[f"pairs-{i}"] for i in range(6)} <= {"yes", "no"}


class OneImageConstant(Model):
    """The constant answer "no" from a model that takes one image per prompt: every two-image row of the
    toy's `pairs` is screened out as too_many_images, so that task has no score."""

    _facts = ModelFacts(max_images=1, cache_responses=False)

    @classmethod
    def from_args(cls, args, *, batch_size=1, max_batch_tokens=None):
        return cls()

    def generate(self, requests):
        return [Response("no") for _ in requests]


def test_groups_strict_mean_propagates_na_and_mean_leaves_it_out(tmp_path, toy_dir, toy_tasks, harness) -> None:
    toy = {"include_path": toy_tasks, "data_dir": toy_dir}
    run = harness(*run_args("toy,toy_lenient", "constant", model_args="answer=no", out=tmp_path / "a", **toy))
    assert run.code == 0, run.err
    groups = run.results("constant")["groups"]
    # colors: 0/6 say "no"; pairs: 5 of 6 pairs differ.
    assert groups["toy"]["acc,none"] == pytest.approx((0 + 5 / 6) / 2)
    assert run.results("constant")["group_aggregation"]["toy"]["rules"]["acc"] == {
        "rule": "strict_mean",
        "used": ["toy_colors", "toy_pairs"],
        "missing": [],
    }

    with registered_model("test_one_image", OneImageConstant):
        run = harness(*run_args("toy,toy_lenient", "test_one_image", out=tmp_path / "b", **toy))
    assert run.code == 0, run.err
    data = run.results("test_one_image")
    assert (
        data["results"]["toy_pairs"]["acc,none"] == "N/A"
        and data["sample_counts"]["toy_pairs"]["n_too_many_images"] == 6
    )
    strict, lenient = data["groups"]["toy"], data["groups"]["toy_lenient"]
    how = data["group_aggregation"]
    assert strict["acc,none"] == "N/A" and how["toy"]["rules"]["acc"]["missing"] == ["toy_pairs"]
    assert lenient["acc,none"] == 0.0 and how["toy_lenient"]["rules"]["acc"] == {
        "rule": "mean",
        "used": ["toy_colors"],
        "missing": ["toy_pairs"],
    }
    assert how["toy_lenient"]["n_scored"] == 6


def test_group_rule_from_a_function_over_named_members(tmp_path, toy_dir, toy_tasks, harness) -> None:
    folder = tmp_path / "groups"
    folder.mkdir()
    (folder / "rules.py").write_text(
        textwrap.dedent('''
        def best(scores):
            """The best member's score (a benchmark's own rule)."""
            return max(s.value for s in scores)
    ''')
    )
    (folder / "best.yaml").write_text(
        textwrap.dedent("""
        group: toy_best
        task: [toy_colors, toy_pairs]
        aggregate_metric_list:
          - metric: acc
            aggregation: !function rules.best
    """)
    )
    (folder / "pairs_only.yaml").write_text(
        textwrap.dedent("""
        group: toy_pairs_only
        task: [toy_colors, toy_pairs]
        aggregate_metric_list:
          - metric: acc
            aggregation: strict_mean
            members: [toy_pairs]
    """)
    )
    toy = {"include_path": toy_tasks, "data_dir": toy_dir, "out": tmp_path / "out"}
    run = harness(
        *run_args("toy_best,toy_pairs_only", "constant", model_args="answer=no", **toy), "--include_path", folder
    )
    assert run.code == 0, run.err
    groups, how = run.results("constant")["groups"], run.results("constant")["group_aggregation"]
    assert groups["toy_best"]["acc,none"] == pytest.approx(5 / 6)  # max(0, 5/6)
    assert how["toy_best"]["rules"]["acc"]["rule"] == "!function rules.best"
    assert groups["toy_pairs_only"]["acc,none"] == pytest.approx(5 / 6)
    assert how["toy_pairs_only"]["rules"]["acc"]["used"] == ["toy_pairs"]


def test_group_rules_on_member_scores() -> None:
    scores = [MemberScore("a", 0.5, 0.1, 10), MemberScore("b", 1.0, 0.2, 30)]
    assert strict_mean(scores) == pytest.approx((0.75, math.sqrt(0.01 + 0.04) / 2))
    assert math.isnan(strict_mean([*scores, MemberScore("c", math.nan, math.nan, 0)])[0])
    config = GroupConfig(
        "g",
        ["a", "b", "c"],
        Path("g.yaml"),
        aggregate_metric_list=[
            {"metric": "acc", "aggregation": "weighted_mean"},
            {"metric": "f1", "aggregation": "strict_mean"},
        ],
    )
    results = {
        "a": {"acc,none": 0.5, "acc_stderr,none": 0.1, "f1,none": 0.2},
        "b": {"acc,none": 1.0, "acc_stderr,none": "N/A", "f1,none": "N/A"},
    }
    counts = {"a": {"n_scored": 10}, "b": {"n_scored": 30}}
    entries, how, _ = group_entries({"g": ["a", "b", "c"]}, {"g": config}, results, counts)
    entry = entries["g"]
    assert entry["acc,none"] == pytest.approx((0.5 * 10 + 1.0 * 30) / 40)
    assert how["g"]["rules"]["acc"] == {"rule": "weighted_mean", "used": ["a", "b"], "missing": ["c"]}
    assert entry["f1,none"] == "N/A" and how["g"]["rules"]["f1"]["missing"] == ["b", "c"]
    assert set(entry) == {"alias", "acc,none", "acc_stderr,none", "f1,none", "f1_stderr,none"}


def test_unknown_group_aggregation_and_members_are_config_errors(tmp_path: Path) -> None:
    bad = tmp_path / "g.yaml"
    bad.write_text("group: g\ntask: [a]\naggregate_metric_list:\n  - metric: acc\n    aggregation: median\n")
    with pytest.raises(TaskConfigError, match=r"g.yaml:3: unknown group aggregation 'median' \(known: mean, "):
        TaskIndex([bad], include_defaults=False)
    bad.write_text("group: g\ntask: [a]\naggregate_metric_list:\n  - metric: acc\n    members: [b]\n")
    with pytest.raises(TaskConfigError, match="`members` names b, which the group's `task:` list lacks"):
        TaskIndex([bad], include_defaults=False)


def _decoded(images) -> list[bytes]:
    return [im.convert("RGB").tobytes() for im in images]


@pytest.mark.slow  # a tiny LLaVA runs on both storages through the harness command
def test_shared_image_storage_is_read_like_embedded_images(
    tmp_path, toy_dir, toy_shared_dir, toy_tasks, tiny_llava, harness
) -> None:
    shared = toy_shared_dir / "toy"
    manifest = contract.read_manifest(shared)
    # 18 images shown (6 in colors, 12 in pairs), 11 distinct: a pair's first square is colors' square of the
    # same row, and pairs 0 shows one square twice.
    assert manifest["contract"]["image_storage"] == "shared" and manifest["image_table"]["images"] == 11
    rows = datasets.load_dataset(str(shared), "pairs", split="test")
    assert "images" not in rows.column_names
    embedded = datasets.load_dataset(str(toy_dir / "toy"), "pairs", split="test")
    for shared_row, embedded_row in zip(rows, embedded, strict=True):
        assert _decoded(contract.load_images(shared, shared_row)) == _decoded(
            contract.load_images(toy_dir / "toy", embedded_row)
        )
    table = datasets.load_dataset(str(shared), contract.IMAGE_TABLE_CONFIG, split="test")
    assert table["sha256"] == sorted(set(table["sha256"]))  # each image once, in sha256 order
    first = Image.open(io.BytesIO(contract.image_table(str(shared)).data(table[0]["sha256"])))
    assert first.size == (table[0]["width"], table[0]["height"])

    answers = {}
    for name, data_dir in (("embedded", toy_dir), ("shared", toy_shared_dir)):
        out = tmp_path / name
        hf = hf_run("toy_colors,toy_pairs", data_dir, checkpoint=tiny_llava)
        run = harness(*hf, "--batch_size", "3", "--include_path", toy_tasks, "--output_path", out, "--log_samples")
        assert run.code == 0, run.err
        folder = checkpoint_folder(tiny_llava)
        answers[name] = [
            (s["sample_id"], s["response"], s["image_sha256"])
            for task in ("toy_colors", "toy_pairs")
            for s in run.samples(folder, task)
        ]
    assert answers["embedded"] == answers["shared"] and len(answers["shared"]) == 12
