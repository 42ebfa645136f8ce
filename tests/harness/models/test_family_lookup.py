"""A family is imported when a lookup needs it (issue 75, item 3): `names.json` lists what each family declares, a
lookup imports only the families whose names match, and it finds what a scan of every family finds."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from harness.errors import UserError
from harness.models import families
from tests.support.deadline import within
from tests.support.run_setups import modules_a_run_imports
from tests.support.toy_benchmark import build_toy, write_toy_tasks


def test_names_json_is_what_make_docs_writes(script_module) -> None:
    assert script_module("family_names").render() == families.NAMES.read_text(), "run `make docs`"


def _scanned(kind: str, name: str) -> object:
    """What a scan of every family finds for `name`, as the lookups did before `names.json`."""
    variants = [v for f in families.families() for v in f.variants]
    if kind == "model_types":
        return next((v for v in variants if name in v.model_types), None)
    if kind == "architectures":
        return next((v for v in variants if name in v.architectures), None)
    return next((v for v in variants if any(f in name.lower() for f in v.fragments)), None)


@pytest.mark.parametrize("listed", [True, False])
def test_a_lookup_finds_what_a_scan_of_every_family_finds(listed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every name a family declares, looked up with `names.json` and with none (a family it does not list is read
    on every lookup): the same variant, alias and style as a scan of every family."""
    if not listed:
        monkeypatch.setattr(families, "_listed", dict)
    for declared in families.families():
        names = families.declared_names(declared)
        for model_type in names["model_types"]:
            assert families.family_of(model_type) is _scanned("model_types", model_type)
        for architecture in names["architectures"]:
            assert families.family_of(None, [architecture]) is _scanned("architectures", architecture)
        for fragment in names["fragments"]:
            assert families.family_of_api_name(f"x-{fragment}-1") is _scanned("fragments", f"x-{fragment}-1")
        for alias in names["aliases"]:
            assert families.alias_named(alias) is declared.aliases[alias]
        for style in declared.styles:
            assert families.style_named(style.name) is style
    assert families.alias_named("no-such-alias") is None and families.family_of("no_such_type") is None


def test_an_api_model_imports_its_own_family_only(tmp_path: Path) -> None:
    data, tasks = build_toy(tmp_path / "data").parent, write_toy_tasks(tmp_path / "toy_tasks")
    imported = modules_a_run_imports(
        *("--tasks", "toy", "--data_dir", str(data), "--include_path", str(tasks), "--screen_only", "--no_progress"),
        *("--model", "openai", "--model_args", "model=gpt-5"),
        env={"OPENAI_API_KEY": "sk-test"},
    )
    assert [m for m in imported if m.startswith("harness.models.families")] == [
        "harness.models.families",
        "harness.models.families.gpt",
    ]


@pytest.mark.parametrize("damage", ["fifo", "dev_zero", "not_json", "not_an_object"])
def test_a_damaged_names_json_is_one_line_naming_it(
    damage: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 87: `names.json` in an installed copy read as every file the harness owns: a FIFO (which hung a run), a
    link to /dev/zero (2.5 GB, then a MemoryError) and invalid JSON (a line naming no file) are one line naming it."""
    names = tmp_path / "names.json"
    if damage == "fifo":
        os.mkfifo(names)
    elif damage == "dev_zero":
        names.symlink_to("/dev/zero")
    else:
        names.write_text("{not json" if damage == "not_json" else "[1, 2]")
    monkeypatch.setattr(families, "NAMES", names)
    families._listed.cache_clear()
    try:
        with within(5, "reading a damaged names.json"), pytest.raises(UserError, match=re.escape(str(names))):
            families.family_of("qwen2_vl")
    finally:
        families._listed.cache_clear()
