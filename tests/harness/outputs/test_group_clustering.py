"""A group's `<metric>_stderr_clustered` (`harness.outputs.results.groups.group_entries`) counts an item its members share
once: its members' per-row influences through the group's rule (built in, or a `!function`'s, by its numerical
gradient), clustered on the rows' keys, subgroups included."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from harness.config.task_config import GroupConfig
from harness.config.task_index import TaskIndex
from harness.outputs.results.groups import group_entries
from harness.uncertainty.influence import Linearized, linearize_mean

ITEMS = np.repeat(np.random.default_rng(4).random(15) < 0.5, 4).astype(float)  # 15 items, 4 rows each


def _member(name: str, values: np.ndarray, item_prefix: str) -> Linearized:
    keys = [[f"{item_prefix}{i // 4}"] for i in range(len(values))]
    return linearize_mean(values, [f"{name}/{i}" for i in range(len(values))], keys)


def _results(members: dict[str, Linearized]) -> dict[str, dict[str, object]]:
    return {
        name: {
            "score,none": lin.estimate,
            "score_stderr,none": lin.error().stderr,
            "score_stderr_clustered,none": lin.error().stderr_clustered,
        }
        for name, lin in members.items()
    }


def _influences(members: dict[str, Linearized]) -> dict[str, Callable[[str], Linearized | None]]:
    return {name: (lambda metric, lin=lin: lin if metric == "score" else None) for name, lin in members.items()}


def _group(name: str, tasks: list[str], rule: object = "strict_mean") -> GroupConfig:
    return GroupConfig(
        name, tasks, Path(f"{name}.yaml"), aggregate_metric_list=[{"metric": "score", "aggregation": rule}]
    )


def test_members_asking_the_same_items_are_counted_once() -> None:
    members = {"at_8k": _member("at_8k", ITEMS, "item"), "at_16k": _member("at_16k", ITEMS, "item")}
    counts = {name: {"n_scored": 60} for name in members}
    entries, _, errors = group_entries(
        {"g": list(members)}, {"g": _group("g", list(members))}, _results(members), counts, _influences(members)
    )
    member = members["at_8k"].error()
    group = entries["g"]
    assert group["score,none"] == pytest.approx(ITEMS.mean())
    assert group["score_stderr_clustered,none"] == pytest.approx(member.stderr_clustered)
    # the rule's own stderr takes the members for independent: sqrt(2) times too sure
    assert group["score_stderr,none"] == pytest.approx(member.stderr / math.sqrt(2))
    assert errors["g"]["score"].n_clusters == 15 and errors["g"]["score"].n == 120
    assert errors["g"]["score"].method == "delta method"


def test_a_nested_group_and_a_function_rule_carry_the_members_covariance(tmp_path: Path) -> None:
    (tmp_path / "rules.py").write_text("def first_twice(scores):\n    return 2 * scores[0].value\n")
    (tmp_path / "g.yaml").write_text(
        textwrap.dedent(
            """\
            group: outer
            task: [inner, c]
            aggregate_metric_list:
              - metric: score
                aggregation: !function rules.first_twice
            """
        )
    )
    rule = TaskIndex([tmp_path], include_defaults=False).groups["outer"].aggregate_metric_list[0]["aggregation"]
    members = {
        "a": _member("a", ITEMS, "item"),
        "b": _member("b", 1 - ITEMS, "item"),
        "c": _member("c", ITEMS, "other"),
    }
    counts = {name: {"n_scored": 60} for name in members}
    configs = {"inner": _group("inner", ["a", "b"]), "outer": _group("outer", ["inner", "c"], rule)}
    entries, _, errors = group_entries(
        {"inner": ["a", "b"], "outer": ["inner", "c"]}, configs, _results(members), counts, _influences(members)
    )
    # a and 1 - a on the same items: their mean is 0.5 on every item, with no error at all
    assert entries["inner"]["score,none"] == pytest.approx(0.5)
    assert entries["inner"]["score_stderr_clustered,none"] == pytest.approx(0.0, abs=1e-9)  # up to the quotient
    # the rule moves with its first member only, twice as fast: c's rows carry no influence
    assert entries["outer"]["score,none"] == pytest.approx(1.0)
    assert entries["outer"]["score_stderr_clustered,none"] == pytest.approx(0.0, abs=1e-9)
    assert errors["outer"]["score"].n == 120  # a's and b's rows (c's, at weight 0, are not there)


def test_a_missing_member_leaves_a_strict_group_na_and_a_lenient_one_without_it() -> None:
    members = {"a": _member("a", ITEMS, "item")}
    counts = {"a": {"n_scored": 60}}
    configs = {"strict": _group("strict", ["a", "gone"]), "lenient": _group("lenient", ["a", "gone"], "mean")}
    entries, _, _ = group_entries(
        {"strict": ["a", "gone"], "lenient": ["a", "gone"]}, configs, _results(members), counts, _influences(members)
    )
    assert entries["strict"]["score_stderr_clustered,none"] == "N/A"
    assert entries["lenient"]["score_stderr_clustered,none"] == pytest.approx(members["a"].error().stderr_clustered)
