"""scripts/architecture.py (`make docs`): docs/ARCHITECTURE.md is the harness's packages and their imports as the code
has them today (issue 75, item 5); a folder of the harness holds at most 15 modules (the families aside, one module a
family, as vLLM's models folder); and a run of a baseline reads no family and few modules (issue 75, item 3)."""

from __future__ import annotations

from pathlib import Path

from tests.support.paths import PROJECT
from tests.support.run_setups import modules_a_run_imports
from tests.support.toy_benchmark import build_toy, write_toy_tasks

MOST_MODULES = 15
ONE_MODULE_A_FAMILY = PROJECT / "harness" / "models" / "families"
MOST_IMPORTED = 123  # project modules a `--model random` run imports (162 before issue 75; 121: issue 99's check of a
# build's columns; 122: issue 98's small-sample errors; 123: issue 106's interval bounds, report.md's and the viewer's
# one rule, apart from estimates.py, at 398 of its 400 lines)


def test_the_architecture_page_is_what_make_docs_writes(script_module) -> None:
    page = (PROJECT / "docs" / "ARCHITECTURE.md").read_text()
    assert script_module("architecture").render() == page, "docs/ARCHITECTURE.md is stale: run `make docs`"


def test_a_stale_page_is_caught_and_rewritten(script_module, tmp_path: Path) -> None:
    script = script_module("architecture")
    stale = tmp_path / "ARCHITECTURE.md"
    stale.write_text(script.render().replace("`harness.run`", "`harness.gone`"))
    assert script.main(["--check", str(stale)]) == 1
    assert script.main([str(stale)]) == 0 and script.main(["--check", str(stale)]) == 0


def test_every_package_has_its_paragraph_and_the_run_stands_above_the_rest(script_module) -> None:
    script = script_module("architecture")
    graph, order = script.package_graph(), script.layered(script.package_graph())
    assert [p for p in graph if script.paragraph(PROJECT, p) == "(no docstring)"] == []
    assert order[-1] == ["harness.run"]  # the ways in import everything else, and nothing imports them back
    assert not any("harness.run" in graph[p] for p in graph if p != "harness.run")


def test_no_folder_of_the_harness_holds_more_than_fifteen_modules() -> None:
    folders = {path.parent for path in (PROJECT / "harness").rglob("*.py")} - {ONE_MODULE_A_FAMILY}
    crowded = {str(f.relative_to(PROJECT)): n for f in folders if (n := len(list(f.glob("*.py")))) > MOST_MODULES}
    assert crowded == {}


def test_a_baseline_run_imports_no_family_and_few_modules(tmp_path: Path) -> None:
    data, tasks = build_toy(tmp_path / "data").parent, write_toy_tasks(tmp_path / "toy_tasks")
    imported = modules_a_run_imports(
        *("--tasks", "toy", "--model", "random", "--data_dir", str(data), "--include_path", str(tasks)),
        *("--output_path", str(tmp_path / "out"), "--no_progress"),
    )
    assert [m for m in imported if m.startswith("harness.models.families")] == []
    assert len(imported) <= MOST_IMPORTED, imported
