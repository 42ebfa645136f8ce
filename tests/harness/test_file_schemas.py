"""One schema per file format (issue 43 item 3, issue 62 item 2): the build manifest, the results file, the journal and
the sample log are each declared once, as the type their writer builds and their reader checks (the harness's files
validated by pydantic, `harness.schema`). What a real build and run write
is all declared (no key the declaration lacks, every value of its declared type), and the readers refuse what the
declaration does not allow, naming the field."""

from __future__ import annotations

import json
import typing
from pathlib import Path

import pytest

from builders.core import contract
from harness import schema
from harness.outputs.results.results_file import ResultsFile, RunConfig, results_file_problem
from harness.running.journal.journal_file import JournalHeader, SampleRecord, header_problem, record_problem
from harness.running.journal.sample_log import SampleLogLine, read_sample_log, sample_log_problem

TASK = "mmneedle_m1_n2_k1_pos"


def keys(shape: object) -> set[str]:
    return set(typing.get_type_hints(shape))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    from harness.run.cli import main

    out = tmp_path_factory.mktemp("schemas")
    argv = ["--tasks", TASK, "--model", "random", "--data_dir", str(data_dir), "--limit", "3"]
    assert main([*argv, "--output_path", str(out), "--log_samples", "--no_progress"]) == 0
    return out / "random"


def test_a_build_writes_its_manifest_as_declared(data_dir: Path) -> None:
    manifest = json.loads((data_dir / "mmneedle" / contract.MANIFEST_NAME).read_text())
    assert contract.manifest_problem(manifest) is None
    assert set(manifest) <= keys(contract.BuildManifest)
    for entry in manifest["configs"].values():  # the files entry, beside the benchmark's own fields
        assert all(set(f) == keys(contract.ManifestFile) for f in entry["files"])


def test_a_manifest_is_refused_where_the_declaration_says_so(data_dir: Path) -> None:
    manifest = json.loads((data_dir / "mmneedle" / contract.MANIFEST_NAME).read_text())
    config = next(iter(manifest["configs"]))
    manifest["contract"]["image_storage"] = "inline"
    assert (
        contract.manifest_problem(manifest) == "contract.image_storage: expected one of embedded, shared, got 'inline'"
    )
    manifest["contract"]["image_storage"] = "embedded"
    manifest["configs"][config]["rows"] = -1
    assert contract.manifest_problem(manifest) == f"configs.{config}.rows: expected a count, got -1"
    manifest["configs"][config]["rows"] = 2
    manifest["format"] = "mmlongeval-build/2"
    assert contract.manifest_problem(manifest) == "format: expected one of mmlongeval-build/1, got 'mmlongeval-build/2'"


def test_a_run_writes_its_results_file_as_declared(run_dir: Path) -> None:
    (path,) = run_dir.glob("results_*.json")
    results = json.loads(path.read_text())
    assert results_file_problem(results) is None and schema.problem(results, ResultsFile) is None  # every key, too
    assert set(results) <= keys(ResultsFile) and set(results["config"]) <= keys(RunConfig)


def test_a_results_file_is_refused_where_the_declaration_says_so(run_dir: Path) -> None:
    (path,) = run_dir.glob("results_*.json")
    results = json.loads(path.read_text())
    group = dict(results, group_aggregation={"g": {"n_scored": 1, "rules": {"acc": {"rule": "mean", "used": "a"}}}})
    assert results_file_problem(group) == "`group_aggregation.g.rules.acc.used` must be a list, got a string"
    samples = dict(results, **{"n-samples": {TASK: {"original": "all"}}})
    assert results_file_problem(samples) == f"`n-samples.{TASK}.original` must be an integer, got a string"
    del results["results"]  # a key an older file lacks is left to the reader
    assert results_file_problem(results) is None


def test_a_run_writes_its_journal_and_sample_log_as_declared(run_dir: Path) -> None:
    header, *records = [json.loads(line) for line in (run_dir / f"journal_{TASK}.jsonl").read_text().splitlines()]
    assert header_problem(header) is None and set(header) == keys(JournalHeader)
    assert records and all(record_problem(r, TASK) is None and set(r) <= keys(SampleRecord) for r in records)
    (log,) = run_dir.glob(f"samples_{TASK}_*.jsonl")
    lines = read_sample_log(log)
    metrics = set(lines[0]["metrics"])
    assert len(lines) == 3 and all(set(line) <= keys(SampleLogLine) | metrics for line in lines)


def test_a_journal_line_or_log_line_is_refused_where_the_declaration_says_so(run_dir: Path) -> None:
    header, record, *_ = [json.loads(line) for line in (run_dir / f"journal_{TASK}.jsonl").read_text().splitlines()]
    assert record_problem({**record, "status": "done"}, TASK) == (
        "status is a str, not one of ok, empty, over_length, too_many_images, invalid_input, refused, error"
    )
    assert record_problem({**record, "image_sizes": [[1, "2"]]}, TASK) == "image_sizes[0][1] is a str, not an integer"
    assert record_problem({k: v for k, v in record.items() if k != "sample_id"}, TASK) == "no sample_id"
    assert header_problem({**header, "parts": []}) == "a header whose parts is a list, not an object"
    (log,) = run_dir.glob(f"samples_{TASK}_*.jsonl")
    line = json.loads(log.read_text().splitlines()[0])
    assert sample_log_problem({**line, "status": "fine"}) == (
        "status: expected one of ok, empty, over_length, too_many_images, invalid_input, refused, error, got 'fine'"
    )
