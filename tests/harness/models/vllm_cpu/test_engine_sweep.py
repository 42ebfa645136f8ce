"""The engine sweep (`make engine-sweep`, scripts/engine_sweep.py, issue 104) is not run here: its record
(docs/engine_sweep.jsonl) and the table docs/backends.md writes from it are held to the two registries it reads (the
installed transformers' image-text-to-text types, vLLM's multimodal architectures): a type added to either is a line of
the record, or this test names it; and CI's engine families (`ENGINE_FAMILIES`) run each way of running a prompt's
images that the sweep found (its record's `path`). And the sweep's own machinery: a type past its time bound is
stopped with every process under it and recorded so; a rerun skips the types the record holds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import psutil
import pytest

from tests.harness.models.vllm_cpu.test_vllm_cpu_engine import _cpu_build
from tests.support.engine_checkpoints import ENGINE_FAMILIES, family_type
from tests.support.paths import PROJECT

pytestmark = pytest.mark.skipif(
    not _cpu_build(), reason="vLLM's CPU build: `make test` runs this folder in .venv-vllm-cpu"
)


def test_the_record_holds_every_type_of_both_registries_and_the_page_its_table(script_module) -> None:
    sweep = script_module("engine_sweep")
    types, record = sweep.sweep_types(), sweep.read_record()
    assert [t for t in types if t not in record] == [], "types of both registries the sweep has not run"
    assert [t for t in record if t not in types] == [], "types the record holds that a registry no longer has"
    assert {t: line["architecture"] for t, line in record.items()} == types
    assert all(line["outcome"].strip() and "\n" not in line["outcome"] for line in record.values())
    page = (PROJECT / "docs" / "backends.md").read_text()
    assert "\n".join(sweep.table_lines()) in page, "docs/backends.md's sweep table is stale: run `make docs`"


def test_a_type_past_its_time_bound_is_stopped_with_every_process_under_it(script_module, tmp_path: Path) -> None:
    sweep = script_module("engine_sweep")
    work = sweep.WORK
    sweep.WORK = tmp_path / "work"
    try:
        before = {p.pid for p in psutil.Process().children(recursive=True)}
        line = sweep.sweep_one("llava", "LlavaForConditionalGeneration", tmp_path / "no-data", timeout=3)
        left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
    finally:
        sweep.WORK = work
    assert line["outcome"].endswith("does not finish: stopped after 3 s"), line
    assert line["model_type"] == "llava" and line["seconds"] < 60
    assert left == []


def test_a_rerun_skips_the_types_the_record_holds(script_module, tmp_path: Path, capsys) -> None:
    sweep = script_module("engine_sweep")
    record = tmp_path / "engine_sweep.jsonl"
    shutil.copy(sweep.RECORD, record)
    before = record.read_text()
    assert sweep.main(["--record", str(record)]) == 0
    assert f"0 of {len(sweep.sweep_types())} types to run" in capsys.readouterr().out
    assert record.read_text() == before
    assert [json.loads(line)["model_type"] for line in before.splitlines()] == sorted(sweep.read_record(record))


def test_ci_s_engine_families_run_each_way_the_sweep_found_vllm_runs_images(script_module) -> None:
    """Each way vLLM's multimodal processing runs a prompt's images that the sweep found among the types that run end
    to end (`multimodal_path`: the positions and an image's run of tokens, the first two parts of the record's
    `path`) is run by one of CI's engine families
    (`ENGINE_FAMILIES`, run by test_vllm_cpu_engine.py): a sweep that finds another fails here until a family that
    runs it is added."""
    sweep = script_module("engine_sweep")
    record = sweep.read_record()
    found = {sweep.multimodal_path(line) for line in record.values() if line["outcome"] == sweep.RUNS}
    ran = {family: record[family_type(family)] for family in ENGINE_FAMILIES}
    assert all(line["outcome"] == sweep.RUNS for line in ran.values()), "a CI family the sweep does not run end to end"
    assert sorted(found - {sweep.multimodal_path(line) for line in ran.values()}) == []
