"""No command that reads a results folder runs code the folder names (issue 49, item 1): `harness view`, `harness
report` and `harness merge` take task code only from the installed task folders and the `--include_path` given on
their own command line, through one rule (`harness.outputs.results.trusted_tasks`). `harness merge` built the tasks of the
folder its shards' results recorded and imported their `!function` hooks.

The folder the shards' results record holds the toy tasks, whose `utils.py` leaves a mark when imported. Every
command that reads a results folder runs over it, and none may leave the mark; a command added later is refused by
`test_every_subcommand_is_either_run_over_the_folder_or_reads_no_results_folder` until it is added here."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.run import cli
from harness.run.cli import main
from tests.support.results_runs import planted_task_code, record_include_path
from tests.support.view_app import view_client

# The subcommands that read a results folder, each with its command line over `results` (the shards' --output_path
# folders under it); `merged` is an output folder of its own.
READ_RESULTS = {
    "view": None,  # served in-process (`_view`): its pages, its catalog and the tasks' data
    "report": lambda results, merged: ["report", str(results), "--no_figures", "--out", str(merged / "report")],
    "merge": lambda results, merged: ["merge", str(merged), str(results / "s0"), str(results / "s1")],
    "compare": lambda results, merged: [
        "compare",
        str(results / "whole"),
        str(results / "other"),
        "--out",
        str(merged),
    ],
    "power": lambda results, merged: ["power", str(results / "whole"), "--model", "constant"],
}
READ_NO_RESULTS = {"ls": "lists the installed tasks", "models": "lists the backends and aliases"}


@pytest.fixture
def planted(tmp_path: Path, toy_dir: Path, toy_tasks: Path) -> tuple[Path, Path, Path]:
    """(results, the task folder their results record, the mark its import leaves): two shards of toy_colors and a
    whole run (view and report leave shards out) run with --include_path (the toy tasks), whose results then record
    a copy whose `utils.py` leaves a mark when imported and declares its benchmark (a report hook). The hooks' own source is
    unchanged, so the copy is the same task."""
    results = tmp_path / "results"
    argv = ["--tasks", "toy_colors", "--include_path", str(toy_tasks), "--model", "constant"]
    argv += ["--model_args", "answer=red", "--data_dir", str(toy_dir), "--no_progress"]
    for index in (0, 1):
        assert main([*argv, "--output_path", str(results / f"s{index}"), "--shard", f"{index}/2"]) == 0
    assert main([*argv, "--output_path", str(results / "whole")]) == 0  # what view and report read
    other = [a if a != "answer=red" else "answer=blue" for a in argv]  # a second run, for compare
    assert main([*other, "--output_path", str(results / "other")]) == 0
    mark = tmp_path / "imported"
    theirs = planted_task_code(toy_tasks, tmp_path / "their_tasks", mark, "Toy")
    record_include_path(results, theirs)
    return results, theirs, mark


def _view(results: Path, include_paths: list[Path]) -> None:
    """Every page of `harness view` a run's task reaches: home, the runs page, the report, the samples and a sample."""
    import re

    client = view_client(results, **({"include_paths": include_paths} if include_paths else {}))
    home = client.get("/")
    models = sorted(set(re.findall(r"[?&]model=([^&\"]+)", home.text)))
    assert home.status_code == 200 and models, home.text
    for run in sorted(set(re.findall(r"/run\?run=([^&\"]+)", home.text))):
        assert client.get(f"/run?run={run}").status_code == 200
    for model in models:
        table = client.get(f"/samples?model={model}&task=toy_colors")
        assert table.status_code == 200 and "not among the installed tasks" in table.text
        sample_id = re.search(r"[?;]id=([^\"&]+)\"", table.text.split('id="samples"')[1])
        assert sample_id is not None
        assert client.get(f"/sample?model={model}&task=toy_colors&id={sample_id.group(1)}").status_code == 200
    client.get("/report/")


def test_no_command_that_reads_a_results_folder_imports_the_code_it_names(
    tmp_path: Path, planted: tuple[Path, Path, Path], capsys: pytest.CaptureFixture
) -> None:
    results, theirs, mark = planted
    merged = tmp_path / "merged"
    codes, said = {}, {}
    for name, argv in READ_RESULTS.items():
        if argv is not None:
            codes[name] = main(argv(results, merged))
            said[name] = capsys.readouterr().err
    imported = {"merge and report": mark.exists()}
    _view(results, [])
    said["view"] = capsys.readouterr().err
    imported["view"] = mark.exists()
    assert imported == {"merge and report": False, "view": False}, f"a command imported {theirs}/utils.py"
    # merge and compare cannot score tasks they may not build: they say so; power reads the journals alone
    assert codes == {"report": 0, "merge": 2, "compare": 2, "power": 0}
    for name, err in said.items():
        assert str(theirs) in err and "Traceback" not in err, (name, err)
    assert said["merge"].strip().count("\n") == 0, said["merge"]
    assert (
        "the shards ran task(s) or group(s) this checkout does not know: toy_colors; the shards' results record"
        in (said["merge"])
    )
    assert "give `--include_path PATH` to harness merge for a folder you trust" in said["merge"]
    assert f"harness report: not read: the task folders the results files record ({theirs})" in said["report"]
    assert f"harness view: not read: the task folders the results files record ({theirs})" in said["view"]


def test_merge_reads_the_task_folder_given_on_its_own_command_line(
    tmp_path: Path, planted: tuple[Path, Path, Path], capsys: pytest.CaptureFixture
) -> None:
    """Given `--include_path`, the folder is trusted: merge builds its tasks (its code runs) and writes the
    results of the whole run."""
    results, theirs, mark = planted
    merged = tmp_path / "merged"
    code = main(["merge", str(merged), str(results / "s0"), str(results / "s1"), "--include_path", str(theirs)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert mark.exists() and list(merged.rglob("results_*.json"))
    assert "not read" not in err


def test_every_subcommand_is_either_run_over_the_folder_or_reads_no_results_folder() -> None:
    """A new subcommand (`harness compare`, ...) joins `READ_RESULTS` above, and is then run over the folder."""
    assert sorted(cli.SUBCOMMANDS) == sorted([*READ_RESULTS, *READ_NO_RESULTS])
