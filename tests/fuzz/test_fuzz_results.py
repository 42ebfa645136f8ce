"""Fuzz: results files read by `harness report` and shard outputs read by `harness merge` (issue 30). A results file
of any shape (or bytes, or integers past Python's 4,300-digit limit: issue 41) is rendered or refused in one line
naming it; shards whose journals or results files are damaged in any way merge, or are refused in one line; never a
traceback."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.errors import UserError
from harness.outputs.report.report_md import write_report
from harness.outputs.results.model_results import load_results
from harness.run.cli import main

from .conftest import JSON, bounded, budget, counted, damaged_store, deep, mutated, with_long_integers


@pytest.fixture(scope="module")
def runs(toy_build, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A toy run, an MMNeedle run (its report section draws figures) and the two shards of a toy run."""
    from builders.mmneedle import build_mmneedle

    data_dir, tasks = toy_build
    root = tmp_path_factory.mktemp("fuzz_runs")
    build_mmneedle(source="synthetic", out_dir=root / "data", configs=["m1_n2_k1"], limit=2, seed=0, num_proc=1)
    common = ["--model", "constant", "--model_args", "answer=red", "--no_progress"]
    assert (
        main(
            [
                "--tasks",
                "toy_colors,toy_pairs",
                "--include_path",
                str(tasks),
                "--data_dir",
                str(data_dir),
                "--output_path",
                str(root / "toy"),
                *common,
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "--tasks",
                "mmneedle_m1_n2_k1",
                "--data_dir",
                str(root / "data"),
                "--output_path",
                str(root / "needle"),
                *common,
            ]
        )
        == 0
    )
    for index in range(2):
        assert (
            main(
                [
                    "--tasks",
                    "toy_colors",
                    "--include_path",
                    str(tasks),
                    "--data_dir",
                    str(data_dir),
                    "--output_path",
                    str(root / f"shard{index}"),
                    "--shard",
                    f"{index}/2",
                    *common,
                ]
            )
            == 0
        )
    return root


def _results(folder: Path) -> Path:
    (path,) = folder.glob("*/results_*.json")
    return path


def _damaged(data: st.DataObject, good: dict) -> bytes:
    document = data.draw(st.one_of(mutated(good), JSON), label="results")
    return data.draw(
        st.one_of(
            st.just(json.dumps(document).encode()),
            st.binary(max_size=40),
            st.just(deep(5000).encode()),
            st.just(json.dumps(document).encode().replace(b'"', b'"\xff', 1)),
            with_long_integers(good).map(str.encode),
        ),
        label="bytes",
    )


@budget(fuzz=1500, ci=30)
@given(data=st.data())
def test_any_results_file_loads_or_is_refused_in_one_line(runs: Path, data: st.DataObject) -> None:
    counted()
    source = _results(runs / "toy")
    with tempfile.TemporaryDirectory() as folder, bounded(30, "a results file"):
        target = Path(folder) / "constant" / source.name
        target.parent.mkdir()
        target.write_bytes(_damaged(data, json.loads(source.read_text())))
        try:
            load_results(Path(folder))
        except UserError as err:
            assert str(err).startswith(str(target)), err


@budget(fuzz=120, ci=3)
@given(data=st.data(), which=st.sampled_from(["toy", "needle"]))
def test_any_results_file_renders_or_is_refused_in_one_line(runs: Path, data: st.DataObject, which: str) -> None:
    counted()
    source = _results(runs / which)
    with tempfile.TemporaryDirectory() as folder, bounded(120, "a report"):
        target = Path(folder) / "constant" / source.name
        target.parent.mkdir()
        target.write_bytes(_damaged(data, json.loads(source.read_text())))
        try:
            write_report(Path(folder), Path(folder) / "report")
        except UserError as err:
            assert str(err).startswith(str(target)), err


@budget(fuzz=200, ci=4)
@given(data=st.data(), part=st.sampled_from(["journal", "results"]))
def test_any_damaged_shard_merges_or_is_refused_in_one_line(
    runs: Path, toy_build, data: st.DataObject, part: str, capsys: pytest.CaptureFixture[str]
) -> None:
    counted()
    with tempfile.TemporaryDirectory() as folder, bounded(120, "a merge"):
        root = Path(folder)
        for index in range(2):
            shutil.copytree(runs / f"shard{index}", root / f"shard{index}")
        if part == "results":
            path = _results(root / "shard0")
            path.write_bytes(_damaged(data, json.loads(path.read_text())))
        else:
            (path,) = (root / "shard0").glob("*/journal_*.jsonl")
            header, *records = path.read_text().splitlines()
            index = data.draw(st.integers(0, len(records)), label="line")
            lines = [header, *records]
            lines[index] = data.draw(
                st.one_of(
                    mutated(json.loads(lines[index])).map(json.dumps),
                    JSON.map(json.dumps),
                    st.text(max_size=20),
                    with_long_integers(json.loads(lines[index])),
                ),
                label="record",
            )
            path.write_text("\n".join(lines) + "\n")
        # The shards ran the toy tasks (--include_path): merge builds them only from a folder given to it (issue 49).
        shards = [str(root / "shard0"), str(root / "shard1")]
        code = main(["merge", str(root / "merged"), *shards, "--include_path", str(toy_build[1])])
    err = capsys.readouterr().err
    assert code in (0, 1, 2) and "Traceback" not in err, err


@budget(fuzz=200, ci=6)
@given(
    data=st.data(), kind=st.sampled_from(["store", "store", "store link", "journal link", "store fifo", "journal fifo"])
)
def test_a_merge_over_shards_whose_stores_are_damaged_or_linked_out_is_bounded_or_one_line(
    runs: Path, toy_build, data: st.DataObject, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 77, item 2: a shard's prompt store damaged any way (bombed, missing or `../` chunks, bytes), or its store
    or journal a link to a file outside the shard or a FIFO: the merge ends, within its bound, in a merged store
    holding only texts that check (nothing of the file outside), or in one line naming the shard's file."""
    import os

    from harness.running.journal.prompt_store import PromptTexts

    counted()
    with tempfile.TemporaryDirectory() as folder, bounded(60, "a merge over a damaged store"):
        root = Path(folder)
        for index in range(2):
            shutil.copytree(runs / f"shard{index}", root / f"shard{index}")
        (journal,) = (root / "shard0").glob("*/journal_*.jsonl")
        store = journal.with_name(journal.name.replace("journal_", "prompts_", 1))
        target = store if kind.startswith("store") else journal
        outside = root / "outside.jsonl"
        planted = json.dumps({"chunk": "0" * 64, "zlib": "eJwrzs9NjU9MSQEADkgDaw=="})
        outside.write_text(target.read_text() + planted + "\n")
        if kind == "store":
            store.write_bytes(data.draw(damaged_store(store.read_text().splitlines()), label="store"))
        elif kind.endswith("link"):
            target.unlink()
            target.symlink_to(outside)
        else:
            target.unlink()
            os.mkfifo(target)
        shards = [str(root / "shard0"), str(root / "shard1")]
        code = main(["merge", str(root / "merged"), *shards, "--include_path", str(toy_build[1])])
        err = capsys.readouterr().err
        assert code in (0, 1, 2) and "Traceback" not in err, err
        if kind.endswith("link"):
            assert code != 0 and str(target) in err.strip().splitlines()[-1], err
        for merged in (root / "merged").rglob("prompts_*.jsonl"):
            found = PromptTexts.at(merged)
            assert planted not in merged.read_text() and all(found.text(digest) for digest in found.texts)
            assert set(found.chunks) == {name for names in found.texts.values() for name in names}
