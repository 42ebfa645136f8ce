"""A task's own `!function` hook that raises, or returns what its key does not take, is one line naming the task, the
hook and the row (issue 49, item 7: ten fuzzed task folders of seven kinds ended in tracebacks), for every kind of
hook a task declares; a hook that refuses one row the benchmarks' way (a ValueError) still costs that row alone, and
a scorer that fails on one answer that sample alone."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

TASK = "toy_bad"

# (the task key, the hook's body, the model, extra flags, what the one line says after the hook's name)
FAILURES = {
    "text-raises": ("doc_to_text", "raise TypeError('no prompt')", "constant", (), "raised TypeError on row '"),
    "text-int": ("doc_to_text", "return 5", "constant", (), "returned a value of type int, where doc_to_text returns"),
    "visual-int": ("doc_to_visual", "return 5", "constant", (), "returned a value of type int, where doc_to_visual"),
    "visual-item": ("doc_to_visual", "return [5]", "constant", (), "returned int as image 0, where an image is bytes"),
    "target-raises": ("doc_to_target", "return 1 / 0", "constant", ("--log_samples",), "raised ZeroDivisionError"),
    "target-dict": ("doc_to_target", "return {}", "constant", ("--log_samples",), "returned a value of type dict"),
    "results-list": ("process_results", "return [1]", "constant", (), "returned a value of type list, where"),
    "results-keys": ("process_results", "return {'wrong': 1.0}", "constant", (), "returned the metrics ['wrong'],"),
    "docs-raises": ("process_docs", "raise AttributeError('x')", "constant", (), "raised AttributeError on the task's"),
    "docs-list": ("process_docs", "return []", "constant", (), "returned list, where process_docs returns a datasets"),
    "docs-table-list": (
        "process_docs",
        "return []",
        "constant",
        (),
        "returned list, where a process_docs taking a pyarrow",
    ),
    "guess-raises": ("random_answer", "raise RuntimeError('no guess')", "random", (), "raised RuntimeError on row '"),
    "guess-int": ("random_answer", "return 3", "random", (), "returned a value of type int, where random_answer"),
}


# A `process_docs` annotated to take the rows as a pyarrow Table (issue 89 item 5) is told what it returns in its terms.
PARAMETERS = {"docs-table-list": "docs: pyarrow.Table"}


def bad_task(folder: Path, toy_tasks: Path, key: str, body: str, parameters: str | None = None) -> Path:
    """The toy tasks and `toy_bad`: toy_colors with `key` given to `bad.hook` (whose body is `body`)."""
    shutil.copytree(toy_tasks, folder)
    args = parameters or ("docs" if key == "process_docs" else "doc, *rest")
    first = "colors-0"  # the first row's id
    hook = f"import pyarrow\n\nfirst = {first!r}\n\n\ndef hook({args}, **keywords):\n    {body}\n"
    (folder / "bad.py").write_text(hook)
    (folder / "toy_bad.yaml").write_text(
        textwrap.dedent(f"""
            include: _toy.yaml
            task: {TASK}
            dataset_name: colors
            {key}: !function bad.hook
        """).lstrip()
    )
    return folder


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_a_hook_that_raises_or_returns_the_wrong_type_is_one_line(
    tmp_path: Path, toy_dir: Path, toy_tasks: Path, harness, case: str
) -> None:
    key, body, model, flags, said = FAILURES[case]
    tasks = bad_task(tmp_path / "tasks", toy_tasks, key, body, PARAMETERS.get(case))
    run = harness(
        "--tasks", TASK, "--include_path", tasks, "--model", model, "--data_dir", toy_dir,
        "--output_path", tmp_path / "out", *flags, *(("--model_args", "answer=red") if model == "constant" else ()),
    )  # fmt: skip
    assert run.code == 2 and "Traceback" not in run.err, run.err
    (line,) = [line for line in run.err.splitlines() if line.startswith("harness: error:")]
    assert f"{tasks / 'toy_bad.yaml'}:" in line and f"task '{TASK}': {key} (!function bad.hook) " in line, line
    assert said in line, line


def test_a_hook_refusing_one_row_or_failing_on_one_answer_costs_that_sample_alone(
    tmp_path: Path, toy_dir: Path, toy_tasks: Path, harness
) -> None:
    """The benchmarks' hooks refuse a malformed row with a ValueError (recorded `invalid_input`, with the hook's
    words), and a scorer that fails on one answer leaves that sample `error` (run again by a rerun): as before."""
    refuse = "if doc['id'] == first: raise ValueError('this row has no prompt')\n    return doc['prompt']"
    fail = "if doc['id'] == first: return 1 / 0\n    return {'acc': 1.0}"
    for key, body, status, error in (
        ("doc_to_text", refuse, "invalid_input", "this row has no prompt"),
        ("process_results", fail, "error", "scoring failed: ZeroDivisionError: division by zero"),
    ):
        tasks = bad_task(tmp_path / key, toy_tasks, key, body)
        out = tmp_path / f"out-{key}"
        run = harness(
            "--tasks", TASK, "--include_path", tasks, "--model", "constant", "--model_args", "answer=red",
            "--data_dir", toy_dir, "--output_path", out,
        )  # fmt: skip
        assert run.code == (1 if status == "error" else 0), run.err  # a failed sample is run again by a rerun
        (journal,) = out.rglob(f"journal_{TASK}.jsonl")
        records = {r["doc_id"]: r for r in map(json.loads, journal.read_text().splitlines()[1:])}
        assert records[0]["status"] == status and error in records[0]["error"], records[0]
        assert len(records) == 6 and all(r["status"] in ("ok", "empty") for d, r in records.items() if d), records
