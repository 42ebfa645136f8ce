"""Issue 106, item 14: a journal written before issue 99 recorded its data as the build manifest's content hash of the
config (`b0fdcd...`), and every one since as the hash of the files read (`files:46289b...`): each earlier journal was
refused as "a different run (differs in: task)", on the very build it was run on, and its samples lost. An earlier
journal resumes where the rows read now hash to its value by the builder's rule (the same rows, proved, not taken
from the manifest, whose statement a rewritten build keeps); otherwise the refusal names the data and says why."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness.running.journal.journal_file import journal_name
from tests.support.earlier_runs import written_before_issue_99
from tests.support.run_setups import run_args

TASK, CONFIG = "mmneedle_m1_n2_k1_pos", "m1_n2_k1"


def _earlier_run(harness, data: Path, out: Path) -> tuple[str, list[dict]]:
    """A run of `TASK` on the build `data` left in `out` as the harness before issue 99 left it (its results files
    gone: a run killed before its end); the data fingerprint it recorded, and its journal's records."""
    first = harness(*run_args(TASK, "random", data_dir=data, out=out), "--limit", "3")
    assert first.code == 0, first.err
    recorded = written_before_issue_99(out / "random", TASK, data / "mmneedle", CONFIG)
    for results in (out / "random").glob("results_*.json"):
        results.unlink()
    return recorded, _lines(out)[1:]


def _lines(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "random" / journal_name(TASK)).read_text().splitlines()]


def test_a_journal_from_before_the_files_hash_resumes_on_the_same_build(harness, data_dir: Path, tmp_path: Path):
    out = tmp_path / "out"
    recorded, records = _earlier_run(harness, data_dir, out)
    resumed = harness(*run_args(TASK, "random", data_dir=data_dir, out=out), "--limit", "3")
    assert resumed.code == 0, resumed.err
    assert f"harness: {TASK}: 3 samples resumed from the journal, 0 generated now" in resumed.err.splitlines()
    header, *now = _lines(out)
    dataset = resumed.results("random")["datasets"][TASK]
    assert header["parts"]["task"]["dataset"] == dataset["fingerprint"] != recorded  # named as this version names it
    assert (
        {r["fingerprint"] for r in now} == {header["fingerprint"]} == {resumed.results("random")["task_hashes"][TASK]}
    )
    same = ("sample_id", "response", "metrics", "input_sha256")
    assert sorted([r[k] for k in same] for r in now) == sorted([r[k] for k in same] for r in records)


def test_an_earlier_journal_of_a_rewritten_build_is_refused_saying_why(
    harness, data_dir: Path, tmp_path: Path, edit_table
):
    """The build's prompts rewritten and its file re-hashed in the manifest, whose content hash of the config is left
    as it was: the journal's value is still the manifest's, and the rows are not those it was run on."""
    data = tmp_path / "data"
    shutil.copytree(data_dir / "mmneedle", data / "mmneedle")
    out = tmp_path / "out"
    recorded, _ = _earlier_run(harness, data, out)
    edit_table(
        data / "mmneedle",
        CONFIG,
        lambda t: t.set_column(
            t.schema.get_field_index("prompt"), "prompt", [[p + " Say 1." for p in t.column("prompt").to_pylist()]]
        ),
    )
    manifest = json.loads((data / "mmneedle" / "build_manifest.json").read_text())
    assert manifest["configs"][CONFIG]["content_sha256"] == recorded  # what the version before trusted
    refused = harness(*run_args(TASK, "random", data_dir=data, out=out), "--limit", "3")
    assert refused.code == 2 and "Traceback" not in refused.err, refused.err
    (line,) = [line for line in refused.err.splitlines() if line.startswith("harness: error")]
    journal = out / "random" / journal_name(TASK)
    assert line.startswith(
        f"harness: error: {journal} holds samples of a different run (differs in: data); its data was recorded as "
        f"the build manifest's content hash {recorded[:12]}... (its form before issue 99), and the rows of "
        f"{data / 'mmneedle'} read now hash to "
    ), line
    assert line.endswith(
        "(float32 values at their shortest repr): they cannot be shown to be that data; refusing to mix them: use "
        "another --output_path, or delete the file to start this task again"
    ), line
