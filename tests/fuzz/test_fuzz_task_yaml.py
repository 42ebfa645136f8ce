"""Fuzz: task and group YAML (issue 30). Whatever a task folder holds (integers past Python's 4,300-digit limit
included, issue 41), indexing it, selecting from it and building its tasks end in a `TaskConfigError`/`UserError` of
one line naming a file of the folder, or in tasks that work; never a traceback."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from harness.config.task_index import TaskIndex
from harness.errors import UserError
from harness.running.task.task import Task

from .conftest import JSON, LONG_INTEGERS, bounded, budget, counted

TASK_KEYS = [
    "task",
    "dataset_path",
    "dataset_name",
    "doc_to_text",
    "doc_to_visual",
    "doc_to_target",
    "metric_list",
    "generation_kwargs",
    "metadata",
    "include",
    "tag",
    "process_results",
    "test_split",
    "task_alias",
    "dataset_kwargs",
    "refusals",
    "judge",
    "truncation",
    "system_prompt",
    "output_type",
    "num_fewshot",
    "doc_to_messages",
    "random_answer",
    "unknown_key",
    "doc_to_image",
]
GROUP_KEYS = ["group", "task", "aggregate_metric_list", "metadata", "group_alias"]
GOOD_TASK = {
    "task": "t1",
    "dataset_path": "toy",
    "dataset_name": "colors",
    "doc_to_text": "prompt",
    "doc_to_visual": "images",
    "doc_to_target": "answer",
    "metric_list": [{"metric": "exact_match"}],
}
GOOD_GROUP = {"group": "g", "task": ["t1"], "aggregate_metric_list": [{"metric": "exact_match", "aggregation": "mean"}]}
METRIC = st.fixed_dictionaries(
    {"metric": st.one_of(st.sampled_from(["exact_match", "acc"]), JSON)},
    optional={
        "aggregation": st.one_of(st.sampled_from(["mean", "sum", "nope"]), JSON),
        "higher_is_better": JSON,
        "members": JSON,
    },
)
VALUE = st.one_of(JSON, st.lists(METRIC, max_size=3), st.sampled_from(["_base.yaml", "t1", ["t1", "t1"], "!function"]))


def _document(keys: list[str], base: dict) -> st.SearchStrategy[dict]:
    return st.builds(
        lambda extra, drop: {**{k: v for k, v in base.items() if k not in drop}, **extra},
        st.dictionaries(st.sampled_from(keys), VALUE, max_size=4),
        st.sets(st.sampled_from(list(base))),
    )


def _dump(document: dict) -> str:
    return yaml.safe_dump(document, allow_unicode=True)


SPECIALS = [
    "? [1, 2]\n: 3\n",
    "task: !function utils.x\n",
    "include: [5, null]\n",
    "a: &x [*x]\n",
    "a: *nowhere\n",
    "task: t1\n  bad indent: 1\n",
    "\t- tab\n",
    "{" * 3000,
    "[" * 3000,
    "- " * 2000 + "x\n",
    "\xff\xfe",
    "task: t1\ndataset_path: toy\ndoc_to_text: prompt\nprocess_results: !function utils.process_results\n",
    "!!python/object/apply:os.system ['true']\n",
    "task: t1\ndataset_path: [toy]\ndoc_to_text: prompt\n",
]
TEXT = st.one_of(
    _document(TASK_KEYS, GOOD_TASK).map(_dump),
    _document(GROUP_KEYS, GOOD_GROUP).map(_dump),
    st.sampled_from(SPECIALS),
    st.text(max_size=80),
    st.builds(
        lambda text, at, junk: text[:at] + junk + text[at:],
        _document(TASK_KEYS, GOOD_TASK).map(_dump),
        st.integers(0, 200),
        st.text(alphabet=":-[]{}!&*?|>'\"#%@`\n ", max_size=6),
    ),
    # A key of a task or group (or one nested under generation_kwargs / metadata) holding a long integer
    st.builds(
        lambda text, key, digits: text + key.format(digits),
        _document(TASK_KEYS, GOOD_TASK).map(_dump),
        st.sampled_from(
            [f"{k}: {{}}\n" for k in TASK_KEYS + GROUP_KEYS]
            + ["generation_kwargs:\n  max_gen_toks: {}\n", "metadata:\n  version: {}\n", "num_fewshot: 0x{}\n"]
        ),
        LONG_INTEGERS,
    ),
)


@budget(fuzz=1500, ci=40)
@given(files=st.lists(TEXT, min_size=1, max_size=3), raw=st.booleans())
@example(files=[f"include: {'a' * 300}\n"], raw=False)  # make fuzz found it: a name the system refuses, a traceback
def test_any_task_folder_is_indexed_and_its_tasks_built_or_refused_in_one_line(files: list[str], raw: bool) -> None:
    counted()
    with tempfile.TemporaryDirectory() as folder, bounded(20, "task folder"):
        root = Path(folder)
        for number, text in enumerate(files):
            name = "_base.yaml" if number == 0 and len(files) > 1 else f"f{number}.yaml"
            (root / name).write_bytes(
                text.encode("utf-8", "surrogateescape") if raw else text.encode("utf-8", "replace")
            )
        try:
            index = TaskIndex([root], include_defaults=False)
            for name in sorted(index.all_names()):
                index.select([name])
            for config in index.tasks.values():
                Task(config)
        except UserError as err:
            _assert_one_line_naming_a_file(err, root)
            return
        try:
            index.select(["*"])
        except UserError as err:
            if index.all_names():
                _assert_one_line_naming_a_file(err, root)
            else:  # nothing was indexed: `*` selects nothing, said as for any name
                assert str(err) == "unknown task '*' (see `harness ls`)", err


def _assert_one_line_naming_a_file(err: UserError, root: Path) -> None:
    message = str(err)
    assert "\n" not in message.strip(), message
    # `ROOT/f0.yaml:3: ...`, `ROOT/f0.yaml:3:7: ...`, or a message about a name that quotes the file it is in
    assert re.search(re.escape(str(root)) + r"/[^ :]+\.yaml\b", message), message
