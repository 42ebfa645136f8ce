"""LoCoVQA's paper models as its paper ran them (issue 51 item 5): Table 1's single-image models on the composed
setting only (declared, said to a run of their interleaved tasks), the ↓sample models' composites rescaled by their
processors, and the report's model names derived from the one declaration."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders.locovqa import build_locovqa
from harness.models.aliases import ALIASES, left_out, task_benchmarks
from tasks.locovqa import report
from tasks.locovqa.paper_models import TABLE_1

SINGLE_IMAGE = {"Moondream2-1.6B", "LLaVA-1.5-7B", "LLaVA-1.6-7B", "PaliGemma-3B"}  # Table 1, Section 4
DOWNSAMPLES = {"Moondream2-1.6B", "LLaVA-1.5-7B", "LLaVA-1.6-7B", "Mantis-Bakllava-7B", "Mantis-Idefics2-8B"}


def test_each_model_runs_the_settings_its_paper_ran() -> None:
    """Single-image models: the composed tasks only (the interleaved ones `not_run`, the paper's N/A); multi-image
    models: both."""
    assert {row.model.name for row in TABLE_1 if row.single_image} == SINGLE_IMAGE
    assert {row.model.name for row in TABLE_1 if row.downsamples} == DOWNSAMPLES
    for row in TABLE_1:
        interleaved = row.model.not_run_why("locovqa_okvqa_int_16")
        assert row.model.not_run_why("locovqa_okvqa_cmp_16") is None
        assert (interleaved is not None) == row.single_image, row.model.name
        if interleaved:
            assert "composed (cmp) setting only" in interleaved


def test_a_run_of_a_single_image_alias_on_interleaved_tasks_is_told_it_departs() -> None:
    tasks = ["locovqa_mmstar_int_4", "locovqa_mmstar_cmp_4", "locovqa_needle_int_9"]
    found = task_benchmarks(tasks)
    (line,) = left_out("llava-1.5-7b", [(task, found[0]) for task in tasks])
    assert "locovqa_mmstar_int_4, locovqa_needle_int_9" in line and "cmp_4" not in line
    assert "LoCoVQA's paper did not run for LLaVA-1.5-7B" in line and "departing from the paper there" in line
    assert left_out("mantis-idefics2", [(task, found[0]) for task in tasks]) == []  # a multi-image model: both


def test_harness_models_says_which_settings_the_paper_ran(harness) -> None:
    listed = harness("models", "--benchmark", "LoCoVQA")
    assert listed.code == 0, listed.err
    single = 'LoCoVQA "LLaVA-1.5-7B" (llava-hf/llava-1.5-7b-hf): as the paper; the paper did not run locovqa_*_int_*'
    assert single in listed.out and "composed (cmp) setting only" in listed.out
    multi = next(line for line in listed.out.splitlines() if 'LoCoVQA "Mantis-Idefics2-8B"' in line)
    assert multi.endswith(": as the paper")  # both settings


@pytest.mark.slow
def test_the_departure_is_said_and_the_run_goes_on(harness, tmp_path: Path) -> None:
    """Warned, not refused: the processor takes several images, and such a run is an experiment of its own."""
    build_locovqa(["synthetic"], tmp_path, ["mmstar_int_1", "mmstar_cmp_1"], limit=2, cell_size=16)
    tasks = "locovqa_mmstar_int_1,locovqa_mmstar_cmp_1"
    run = harness("--tasks", tasks, "--model", "llava-1.5-7b", "--data_dir", tmp_path, "--screen_only")
    assert run.code == 0, run.err
    (line,) = [line for line in run.err.splitlines() if "departing from the paper" in line]
    assert line.startswith("harness: llava-1.5-7b runs locovqa_mmstar_int_1, which LoCoVQA's paper did not run")
    assert "locovqa_mmstar_cmp_1" in run.out  # both screened: the run goes on
    composed = harness(
        "--tasks", "locovqa_mmstar_cmp_1", "--model", "llava-1.5-7b", "--data_dir", tmp_path, "--screen_only"
    )
    assert composed.code == 0 and "departing" not in composed.err


def test_the_downsampling_aliases_processors_rescale_the_composite() -> None:
    """Table 1's ↓sample: the image tokens stop growing with the grid, as each alias's processor rescales the
    composite (a 6x6 grid of 336-px cells is 2,016 px a side): LLaVA-1.5 one 336-px view, LLaVA-1.6 its best AnyRes
    grid (at most 2,928 tokens), Mantis-Idefics2 at most 980 px a side, unsplit, 64 tokens."""
    from PIL import Image

    from tests.support import family_processors, tiny_vlm_processors

    aliased = {row.model.alias for row in TABLE_1 if row.downsamples and row.model.alias}
    assert aliased == {"llava-1.5-7b", "llava-1.6-mistral-7b", "mantis-idefics2"}
    sides = (336, 1008, 2016, 4032)
    llava = family_processors.llava_1_5()
    assert [llava._get_num_multimodal_tokens(image_sizes=[(s, s)]).num_image_tokens[0] for s in sides] == [576] * 4
    next_ = tiny_vlm_processors.llava_next()  # the checkpoint's five pinpoints
    counts = [next_._get_num_multimodal_tokens(image_sizes=[(s, s)]).num_image_tokens[0] for s in sides]
    assert counts[1] == counts[2] == counts[3] == 2928 > counts[0]
    mantis = family_processors.idefics2()
    mantis.image_processor.do_image_splitting = False  # TIGER-Lab/Mantis-8B-Idefics2's preprocessor_config
    image_token = mantis.tokenizer.convert_tokens_to_ids("<image>")
    for side in (2016, 4032):
        out = mantis(text=["<image>"], images=[[Image.new("RGB", (side, side))]], return_tensors="pt")
        assert int((out["input_ids"] == image_token).sum()) == 64 and max(out["pixel_values"].shape[-2:]) == 980
    assert ALIASES["mantis-idefics2"].args["pretrained"] == "TIGER-Lab/Mantis-8B-Idefics2"


def test_the_reports_model_names_come_from_the_declaration() -> None:
    """Tables 2-3's names (`paper_r2.csv`'s) are the declaration's results names; each fragment knows one name."""
    import csv

    with open(Path(report.__file__).with_name("paper_r2.csv"), encoding="utf-8") as handle:
        printed = {row["model"] for row in csv.DictReader(handle)}
    assert set(report.PAPER_MODELS) == printed == {row.results_name for row in TABLE_1}
    fragments = [key for keys in report.PAPER_MODELS.values() for key in keys]
    assert len(fragments) == len(set(fragments))  # no fragment knows two names
    assert report.PAPER_MODELS["Mantis"] == ("mantisbakllava", "mantis8bidefics2", "mantisidefics2")
    assert report.NOT_RUN["LLaVA-1.5"] == {"int": TABLE_1[1].model.not_run[0].why} and report.NOT_RUN["Mantis"] == {}
