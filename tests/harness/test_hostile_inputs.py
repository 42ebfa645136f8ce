"""Issue 30, item 1: inputs of the wrong shape are one line naming the file (or the sample), never a traceback:
journal metrics of a shape their aggregation does not read, extreme values, task YAML with a non-name
`include` or key or a non-list `aggregate_metric_list`, results files `harness report` cannot read, and a
`base_url` whose port is not a port. Each of these ended in a traceback before the fix."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from harness.running.journal.journal_file import journal_name
from tests.support.run_setups import answering_red, run_args, toy_colors_yaml

TASK = "toy_shapes"


@pytest.fixture(scope="module")
def shape_tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A task over the toy data with one metric per built-in aggregation shape: a mean, a ratio, a breakdown."""
    folder = tmp_path_factory.mktemp("shape_tasks")
    (folder / "utils.py").write_text(
        textwrap.dedent("""
        def process_results(doc, results):
            ok = float(results[0].strip().lower() == doc["answer"])
            return {"acc": ok, "ratio": [ok, 1.0], "by_colour": [[doc["answer"], ok]]}
    """)
    )
    metric_list = """
        - metric: acc
        - metric: ratio
          aggregation: ratio_of_sums
        - metric: by_colour
          aggregation: mean_by_key
    """
    (folder / "toy_shapes.yaml").write_text(toy_colors_yaml(TASK, metric_list))
    return folder


def _run(harness, toy_dir: Path, tasks: Path, out: Path, *extra: str):
    return harness(*answering_red(TASK, tasks, toy_dir, out), *extra)


def _strict_json(path: Path) -> dict:
    def refuse(token: str) -> None:
        raise AssertionError(f"{path} holds {token}: not strict JSON")

    return json.loads(path.read_text(), parse_constant=refuse)


WRONG_SHAPES = {  # metric -> (value written into the journal's first record, what the warning says)
    "breakdown as a number": (
        "by_colour",
        5,
        "metrics.by_colour: expected a list of [key, number] pairs (aggregation mean_by_key), got a number",
    ),
    "mean as a list": ("acc", [1, 2], "metrics.acc: expected a number (aggregation mean), got a list"),
    "ratio as one number": (
        "ratio",
        [1],
        "metrics.ratio: expected a [numerator, denominator] pair of numbers (aggregation ratio_of_sums), got a list",
    ),
}


@pytest.mark.parametrize("case", sorted(WRONG_SHAPES))
def test_a_journal_metric_its_aggregation_cannot_read_is_skipped_and_run_again(
    tmp_path: Path, toy_dir: Path, shape_tasks: Path, harness, case: str
) -> None:
    first = _run(harness, toy_dir, shape_tasks, tmp_path)
    assert first.code == 0, first.err
    journal = tmp_path / "constant" / journal_name(TASK)
    header, *records = journal.read_text().splitlines()
    record = json.loads(records[0])
    metric, value, message = WRONG_SHAPES[case]
    record["metrics"][metric] = value
    journal.write_text("\n".join([header, json.dumps(record), *records[1:]]) + "\n")
    again = _run(harness, toy_dir, shape_tasks, tmp_path)
    assert again.code == 0 and "Traceback" not in again.err, again.err
    assert f"{journal}:2: skipped an unreadable journal line ({message}); its sample runs again" in again.err
    assert "5 samples resumed from the journal, 1 generated now" in again.err
    assert again.results("constant")["results"] == first.results("constant")["results"]


def test_extreme_journal_values_aggregate_without_overflow_into_strict_json(
    tmp_path: Path, toy_dir: Path, shape_tasks: Path, harness
) -> None:
    first = _run(harness, toy_dir, shape_tasks, tmp_path)
    assert first.code == 0, first.err
    journal = tmp_path / "constant" / journal_name(TASK)
    header, *records = journal.read_text().splitlines()
    parsed = [json.loads(r) for r in records]
    parsed[0]["metrics"]["acc"], parsed[1]["metrics"]["acc"] = -1e308, 1.0  # their difference squared overflows
    parsed[2]["metrics"]["by_colour"] = [["red", 1e308], ["red", -1e308]]
    journal.write_text("\n".join([header, *map(json.dumps, parsed)]) + "\n")
    again = _run(harness, toy_dir, shape_tasks, tmp_path)
    assert again.code == 0 and "Traceback" not in again.err, again.err
    results = _strict_json(sorted((tmp_path / "constant").glob("results_*.json"))[-1])
    assert results["results"][TASK]["acc_stderr,none"] == "inf"
    report = harness("report", tmp_path)
    assert report.code == 0 and "Traceback" not in report.err, report.err


def test_a_list_metric_in_a_shard_is_one_line_from_merge(
    tmp_path: Path, toy_dir: Path, shape_tasks: Path, harness
) -> None:
    for index in range(2):
        run = _run(harness, toy_dir, shape_tasks, tmp_path / f"shard{index}", "--shard", f"{index}/2")
        assert run.code == 0, run.err
    journal = tmp_path / "shard0" / "constant" / journal_name(TASK)
    header, first, *rest = journal.read_text().splitlines()
    record = json.loads(first)
    record["metrics"]["acc"] = [1, 2]
    journal.write_text("\n".join([header, json.dumps(record), *rest]) + "\n")
    # The shards ran a task folder of their own: merge builds its tasks only from one given to it (issue 49).
    merged = harness(
        "merge", tmp_path / "merged", tmp_path / "shard0", tmp_path / "shard1", "--include_path", shape_tasks
    )
    assert merged.code == 2 and "Traceback" not in merged.err, merged.err
    assert f"{journal}:2: skipped an unreadable journal line (metrics.acc: expected a number" in merged.err
    assert (
        merged.err.strip()
        .splitlines()[-1]
        .endswith("(samples missing per shard: {'0/2': 1}); finish those shards, then merge again")
    )


TASK_YAML = {
    "include a number": (
        "include: 5\ntask: t\ndataset_path: toy\n",
        "a.yaml:1: `include` must be a file name or a list of file names, got 5",
    ),
    "a complex key": (
        "? [1, 2]\n: 3\ntask: t\ndataset_path: toy\n",
        "a.yaml:1:3: a key must be a name, not a list ([1, 2])",
    ),
    "aggregate_metric_list a number": (
        "group: g\ntask: [t]\naggregate_metric_list: 5\n",
        "a.yaml:3: `aggregate_metric_list` must be a list of mappings (metric, aggregation, ...), got int",
    ),
}


@pytest.mark.parametrize("case", sorted(TASK_YAML))
def test_task_yaml_of_the_wrong_shape_is_one_line_naming_file_and_line(tmp_path: Path, harness, case: str) -> None:
    text, message = TASK_YAML[case]
    (tmp_path / "a.yaml").write_text(text)
    run = harness("ls", "--include_path", tmp_path)
    assert run.code == 2 and "Traceback" not in run.err
    assert run.err.strip().splitlines() == [f"harness: error: {tmp_path / message}"]


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory: pytest.TempPathFactory, toy_dir: Path, shape_tasks: Path) -> Path:
    from harness.run.cli import main

    out = tmp_path_factory.mktemp("results")
    assert (
        main(
            [
                "--tasks",
                TASK,
                "--include_path",
                str(shape_tasks),
                "--model",
                "constant",
                "--model_args",
                "answer=red",
                "--data_dir",
                str(toy_dir),
                "--output_path",
                str(out),
                "--no_progress",
            ]
        )
        == 0
    )
    return out


REPORT_DAMAGE = {  # (how the results file is changed, the end of the one-line error)
    "a non-UTF-8 byte": (
        lambda text: text.replace('"alias"', '"al\udcffias"', 1),
        "not a results file: not UTF-8 (invalid start byte at byte",
    ),
    "results a list": (
        lambda text: json.dumps({**json.loads(text), "results": []}),
        "not a results file the report can read: `results` must be an object, got a list",
    ),
    "a metric an object": (
        lambda text: json.dumps(_set(json.loads(text), ["results", TASK, "acc,none"], {"a": 1})),
        f"`results.{TASK}.acc,none` must be a number or a string, got an object",
    ),
    "a breakdown cell a list": (
        lambda text: json.dumps(_set(json.loads(text), ["breakdowns", TASK, "by_colour"], [1])),
        f"`breakdowns.{TASK}.by_colour` must be an object, got a list",
    ),
    "the date a string": (
        lambda text: json.dumps(_set(json.loads(text), ["date"], "yesterday")),
        "`date` must be a number, got a string",
    ),
    "argv a string": (
        lambda text: json.dumps(_set(json.loads(text), ["config", "argv"], "harness --tasks x")),
        "`config.argv` must be a list, got a string",
    ),
    "the source's images a string": (
        lambda text: json.dumps(_set(json.loads(text), ["datasets", TASK, "source"], {"num_images": "many"})),
        f"`datasets.{TASK}.source.num_images` must be an integer, got a string",
    ),
}


def _set(data: dict, path: list[str], value: object) -> dict:
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return data


@pytest.mark.parametrize("case", sorted(REPORT_DAMAGE))
def test_a_results_file_the_report_cannot_read_is_one_line_naming_it(
    tmp_path: Path, results_dir: Path, harness, case: str
) -> None:
    (original,) = (results_dir / "constant").glob("results_*.json")
    damage, message = REPORT_DAMAGE[case]
    damaged = tmp_path / "constant" / original.name
    damaged.parent.mkdir()
    damaged.write_bytes(damage(original.read_text()).encode("utf-8", "surrogateescape"))
    run = harness("report", tmp_path)
    assert run.code == 2 and "Traceback" not in run.err, run.err
    (line,) = run.err.strip().splitlines()
    assert line.startswith(f"harness: error: {damaged}: ") and message in line, line


@pytest.mark.parametrize("port", ["99999", "-1", "abc"])
def test_a_base_url_port_that_is_not_a_port_is_one_line(
    tmp_path: Path, toy_dir: Path, toy_tasks: Path, harness, port: str
) -> None:
    openai = f"model=m,base_url=http://127.0.0.1:{port}/v1"
    run = harness(*run_args("toy_colors", "openai", model_args=openai, include_path=toy_tasks, data_dir=toy_dir))
    assert run.code == 2 and "Traceback" not in run.err
    assert run.err.strip().splitlines()[-1] == (
        f"harness: error: model 'openai': openai backend: base_url 'http://127.0.0.1:{port}/v1' has no valid port "
        "(expected a number up to 65535 after the host)"
    )
