"""Issue 41, items 7 and 8: an integer past Python's 4,300-digit `int(str)` limit, wherever the harness reads one (a
journal's metric or doc_id, a results file `harness report` or `harness merge` reads, a task YAML, a build manifest,
`--metadata`, `--seed`), is one line naming the file or flag and the field; `--seed` outside NumPy's range, or not
ASCII digits, is one line giving the range. Each of these was a `ValueError` traceback before."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from builders.core import contract
from harness.running.journal.journal_file import journal_name
from tests.support.run_setups import answering_red

BIG = "9" * 5000  # past the limit of 4,300 digits
LIMIT = f"an integer of 5,000 digits (at most {sys.get_int_max_str_digits():,} can be read)"


def _run(harness, toy_dir: Path, toy_tasks: Path, *extra: object):
    return harness(*answering_red("toy_colors", toy_tasks, toy_dir), *extra)


def _one_error(run, code: int = 2) -> str:
    assert run.code == code and "Traceback" not in run.err, run.err
    (line,) = run.err.strip().splitlines()
    return line


def test_the_reader_names_the_field_of_an_integer_too_long_to_read() -> None:
    with pytest.raises(contract.TooManyDigits, match=re.escape(f"configs.m1.files[1].rows: {LIMIT}")):
        contract.loads_json('{"configs": {"m1": {"files": [{}, {"rows": ' + BIG + "}]}}}")
    with pytest.raises(contract.TooManyDigits, match=r"^\[0\]\['a b'\]: an integer"):
        contract.loads_json('[{"a b": -' + BIG + "}]")
    assert contract.loads_json('{"a": [1, 2.5, -' + "9" * 4000 + "]}")["a"][2] == -int("9" * 4000)


@pytest.mark.parametrize(
    ("field", "pattern", "long"),
    [("metric", '"acc": 0.0', '"acc": ' + BIG), ("doc_id", '"doc_id": 0,', '"doc_id": ' + BIG + ",")],
)
def test_a_journal_line_holding_one_is_skipped_and_its_sample_run_again(
    tmp_path: Path, toy_dir: Path, toy_tasks: Path, harness, field: str, pattern: str, long: str
) -> None:
    first = _run(harness, toy_dir, toy_tasks, "--output_path", tmp_path)
    assert first.code == 0, first.err
    journal = tmp_path / "constant" / journal_name("toy_colors")
    header, record, *rest = journal.read_text().splitlines()
    assert pattern in record
    journal.write_text("\n".join([header, record.replace(pattern, long), *rest]) + "\n")
    again = _run(harness, toy_dir, toy_tasks, "--output_path", tmp_path)
    assert again.code == 0 and "Traceback" not in again.err, again.err
    where = "metrics.acc" if field == "metric" else "doc_id"
    assert f"{journal}:2: skipped an unreadable journal line ({where}: {LIMIT}); its sample runs again" in again.err
    assert again.results("constant")["results"] == first.results("constant")["results"]


def test_a_journal_metric_too_large_for_a_float_is_skipped_not_a_failed_aggregation(
    tmp_path: Path, toy_dir: Path, toy_tasks: Path, harness
) -> None:
    first = _run(harness, toy_dir, toy_tasks, "--output_path", tmp_path)
    journal = tmp_path / "constant" / journal_name("toy_colors")
    header, record, *rest = journal.read_text().splitlines()
    journal.write_text("\n".join([header, record.replace('"acc": 0.0', '"acc": ' + "9" * 400), *rest]) + "\n")
    again = _run(harness, toy_dir, toy_tasks, "--output_path", tmp_path)
    assert again.code == 0 and "metrics.acc is an integer too large for a float" in again.err, again.err
    assert again.results("constant")["results"] == first.results("constant")["results"]


def _results_with_a_long_number(out: Path) -> Path:
    (results,) = (out / "constant").glob("results_*.json")
    text = results.read_text()
    results.write_text(re.sub(r'"acc,none": [0-9.]+', '"acc,none": ' + BIG, text, count=1))
    return results


def test_report_names_the_results_file_and_field(tmp_path: Path, toy_dir: Path, toy_tasks: Path, harness) -> None:
    assert _run(harness, toy_dir, toy_tasks, "--output_path", tmp_path).code == 0
    results = _results_with_a_long_number(tmp_path)
    line = _one_error(harness("report", tmp_path, "--no_figures"))
    assert (
        line
        == f"harness: error: {results}: not a results file the report can read: results.toy_colors.acc,none: {LIMIT}"
    )


def test_report_names_a_metric_past_a_floats_range_and_shows_an_unreadable_date_as_unknown(
    tmp_path: Path, toy_dir: Path, toy_tasks: Path, harness
) -> None:
    """10**400 reads as an int but no renderer can format it (OverflowError); a date of 10**17 s is no calendar's."""
    assert _run(harness, toy_dir, toy_tasks, "--output_path", tmp_path).code == 0
    (results,) = (tmp_path / "constant").glob("results_*.json")
    good = results.read_text()
    results.write_text(re.sub(r'"acc,none": [0-9.]+', '"acc,none": 1' + "0" * 400, good, count=1))
    line = _one_error(harness("report", tmp_path, "--no_figures"))
    assert line.endswith(
        "`results.toy_colors.acc,none` must be a number or a string, got an integer past a float's range"
    )
    results.write_text(re.sub(r'"date": [0-9.]+', '"date": 100000000000000000', good, count=1))
    run = harness("report", tmp_path, "--no_figures")
    assert run.code == 0 and "Traceback" not in run.err, run.err


@pytest.mark.parametrize("where", ["journal", "results"])
def test_merge_names_the_shard_file_and_field(
    tmp_path: Path, toy_dir: Path, toy_tasks: Path, harness, where: str
) -> None:
    for index in range(2):
        shard = _run(harness, toy_dir, toy_tasks, "--output_path", tmp_path / f"s{index}", "--shard", f"{index}/2")
        assert shard.code == 0, shard.err
    if where == "results":
        results = _results_with_a_long_number(tmp_path / "s1")
        line = _one_error(harness("merge", tmp_path / "merged", tmp_path / "s0", tmp_path / "s1"))
        assert line.startswith(f"harness: error: {results}: ") and f"results.toy_colors.acc,none: {LIMIT}" in line
        return
    journal = tmp_path / "s0" / "constant" / journal_name("toy_colors")
    header, record, *rest = journal.read_text().splitlines()
    journal.write_text("\n".join([header, re.sub(r'"acc": [0-9.]+', '"acc": ' + BIG, record), *rest]) + "\n")
    merged = harness("merge", tmp_path / "merged", tmp_path / "s0", tmp_path / "s1", "--include_path", toy_tasks)
    assert merged.code == 2 and "Traceback" not in merged.err, merged.err
    assert f"{journal}:2: skipped an unreadable journal line (metrics.acc: {LIMIT})" in merged.err


@pytest.mark.parametrize(
    ("line", "written"),
    [("num_fewshot: {n}", "num_fewshot: "), ("generation_kwargs:\n  max_gen_toks: {n}", "  max_gen_toks: ")],
)
def test_a_task_yaml_names_the_file_line_and_column(
    tmp_path: Path, toy_dir: Path, toy_tasks: Path, harness, line: str, written: str
) -> None:
    tasks = tmp_path / "tasks"
    shutil.copytree(toy_tasks, tasks)
    yaml_file = tasks / "toy_colors.yaml"
    text = yaml_file.read_text().rstrip("\n") + "\n" + line.format(n=BIG) + "\n"
    yaml_file.write_text(text)
    number = text.splitlines().index(written + BIG) + 1
    error = _one_error(_run(harness, toy_dir, tasks))
    assert error == f"harness: error: {yaml_file}:{number}:{len(written) + 1}: {LIMIT}"


def test_a_task_yaml_integer_in_hexadecimal_too_long_to_print_is_refused(tmp_path: Path) -> None:
    from harness.config.yaml_loader import load_yaml_file
    from harness.errors import TaskConfigError

    path = tmp_path / "t.yaml"
    path.write_text("max_gen_toks: 0x" + "f" * 5000 + "\n")
    with pytest.raises(TaskConfigError, match=re.escape(f"{path}:1:15: an integer of about 6,021 digits")):
        load_yaml_file(path)


def test_a_build_manifest_names_its_field(tmp_path: Path, toy_dir: Path, toy_tasks: Path, harness) -> None:
    data = tmp_path / "data"
    shutil.copytree(toy_dir, data)
    manifest = data / "toy" / contract.MANIFEST_NAME
    fields = json.loads(manifest.read_text())
    fields["configs"]["colors"]["rows"] = 123456789123  # a stand-in, then the long number in its place
    manifest.write_text(json.dumps(fields).replace("123456789123", BIG))
    line = _one_error(_run(harness, data, toy_tasks))
    assert f"unreadable build manifest {manifest}: configs.colors.rows: {LIMIT}" in line


def test_metadata_names_the_flag_and_field(toy_dir: Path, toy_tasks: Path, harness) -> None:
    line = _one_error(_run(harness, toy_dir, toy_tasks, "--metadata", '{"subset": {"n": ' + BIG + "}}"))
    assert line == f"harness: error: --metadata: subset.n: {LIMIT}"


@pytest.mark.parametrize("seed", ["-1", "4294967296", "²", BIG, "1,2," + BIG, "0x10", "1.5"])
def test_a_seed_outside_numpys_range_is_one_line_giving_the_range(
    toy_dir: Path, toy_tasks: Path, harness, seed: str
) -> None:
    line = _one_error(_run(harness, toy_dir, toy_tasks, "--seed", seed))
    assert line.startswith("harness: error: --seed: each seed must be an integer from 0 to 4294967295 (or None), got ")
    assert len(line) < 200


@pytest.mark.parametrize("seed", ["0", "4294967295", "7,None,3", "1,2,3,4"])
def test_a_seed_in_range_runs(toy_dir: Path, toy_tasks: Path, harness, seed: str) -> None:
    run = _run(harness, toy_dir, toy_tasks, "--seed", seed)
    assert run.code == 0, run.err


@pytest.mark.parametrize("shard", [BIG + "/2", "1/" + BIG, "²/2"])
def test_a_shard_of_long_or_unicode_numbers_is_one_line(toy_dir: Path, toy_tasks: Path, harness, shard: str) -> None:
    line = _one_error(_run(harness, toy_dir, toy_tasks, "--shard", shard))
    assert line.startswith("harness: error: --shard expects 'i/n' with 0 <= i < n (e.g. 0/4), got ") and len(line) < 200
