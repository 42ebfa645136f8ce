"""scripts/docs_tables.py (`make docs`): docs/backends.md's tables are the registries' (issue 62, item 6)."""

from __future__ import annotations

from pathlib import Path

from tests.support.paths import PROJECT


def test_the_backends_page_is_what_make_docs_writes(script_module) -> None:
    """Every paper model's row (alias and how it runs, or its reason), every alias no paper ran (checkpoint or served
    model, family, thinking or price) and every forward-pass row, as the registries give them today."""
    page = (PROJECT / "docs" / "backends.md").read_text()
    assert script_module("docs_tables").render(page) == page, "docs/backends.md is stale: run `make docs`"


def test_a_benchmark_without_a_table_gets_a_section_and_a_stale_page_is_caught(script_module, tmp_path: Path) -> None:
    script = script_module("docs_tables")
    page = (PROJECT / "docs" / "backends.md").read_text()
    start = page.index("<!-- make docs: paper_models MMNeedle -->")
    end = page.index("<!-- end make docs -->", start) + len("<!-- end make docs -->")
    stale = tmp_path / "backends.md"
    stale.write_text(page[:start] + page[end:])
    assert script.main(["--check", str(stale)]) == 1
    assert script.main([str(stale)]) == 0
    rebuilt = stale.read_text()
    assert "### MMNeedle (13 models)" in rebuilt
    assert rebuilt.index("### MMNeedle") < rebuilt.index("## A checkpoint without an alias")
    assert script.main(["--check", str(stale)]) == 0
