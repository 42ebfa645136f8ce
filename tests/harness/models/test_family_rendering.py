"""Every family's prompt, rendered as the official wrapper rendered it (issue 42, build item 5), offline.

For each family (its published chat template and image-processor settings around a tiny tokenizer:
`tests/support/family_processors.py`), one MMLongBench, one MileBench and one MMNeedle request are built by the harness
(the task, the alias's input policy, `ProcessorCount.render` as `hf` and `vllm` send it) and by the official wrapper's
own message construction on the same row, images and processor (`tests/support/official_wrappers.py`); both give the
same prompt text, the same input ids, so the same image positions, the same BOS count and the same image tokens.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from harness.api import Request
from harness.config.task_index import TaskIndex
from harness.inputs.input_policy import apply_policy
from harness.inputs.round_trip import user_prompt
from harness.models.aliases import alias_policy, resolve, task_benchmarks
from harness.models.families import style_named
from harness.models.shared.hf_counting import ProcessorCount
from harness.running.task.task import Task
from tests.support import current_families, official_wrappers
from tests.support.family_processors import FAMILIES as PAPER_FAMILIES
from tests.support.family_processors import Family

# The papers' families against their official wrappers, then those the papers never ran against their model cards'
# (or `model.chat`'s) construction of the same row (`tests/support/current_families.py`).
FAMILIES = (*PAPER_FAMILIES, *current_families.FAMILIES)

TASKS = {
    "mmlongbench": "mmlongbench_niah_vh_single_8k",
    "milebench": "milebench_clevr_change",
    "mmneedle": "mmneedle_m10_n1_k2_pos",
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, data_dir: Path, fixture_builds) -> Path:
    """One data folder with the three benchmarks' fixtures (the session's builds: MMNeedle's synthetic one, the
    others' fixture releases)."""
    root = tmp_path_factory.mktemp("families")
    fixture_builds(into=root, mmlongbench=["niah_vh_single_8k"], milebench=["clevr_change"])
    (root / "mmneedle").symlink_to(data_dir / "mmneedle")
    return root


def first_request(built: Path, task_name: str) -> Request:
    task = Task(TaskIndex().tasks[task_name])
    task.load(built, 1)
    doc_id, doc = next(task.iter_docs())
    return task.build_request(doc_id, doc, task.generation_settings({}))


def wrapper(family: Family, benchmark: str):
    if family.reference is not None:
        return family.reference
    if family.name == "llava-1.5" and benchmark == "milebench":
        return official_wrappers.llava_llama_2  # MileBench's one published worker
    if family.name == "idefics3":
        return partial(official_wrappers.idefics, do_resize=False)  # the wrapper's processor setting
    return official_wrappers.WRAPPERS[family.name]


@pytest.mark.slow  # twenty families' processors on three benchmarks' rows
@pytest.mark.parametrize("benchmark", sorted(TASKS))
@pytest.mark.parametrize("family", FAMILIES, ids=[f.name for f in FAMILIES])
def test_the_harness_renders_each_request_as_the_official_wrapper(family: Family, benchmark: str, built: Path) -> None:
    task = TASKS[benchmark]
    _, args, _ = resolve(family.alias, {}, task_benchmarks([task]))
    request = apply_policy(first_request(built, task), alias_policy(family.alias, task))
    processor = family.make()
    count = ProcessorCount(processor, None, name=family.name, style=style_named(args.get("prompt_style", "default")))
    images = [ref.pil() for ref in request.images]
    ours = count.render(request)
    official_text, official_ids = wrapper(family, benchmark)(
        processor, user_prompt(request), images, request.assistant_prefix
    )
    tokenizer = count.tokenizer
    if count.style.bos == "template":  # the official text starts with the template's BOS, which it tokenizes alone
        official_text = official_text.removeprefix(tokenizer.bos_token)
    assert ours == official_text
    if family.expands_images:
        kwargs = dict(request.processor_kwargs)
        ours_ids = list(processor(text=[ours], images=images, return_tensors="pt", **kwargs)["input_ids"][0].tolist())
    else:
        ours_ids = tokenizer(ours).input_ids
    assert ours_ids == official_ids
    bos = tokenizer.bos_token_id
    assert (
        ours_ids.count(bos)
        == official_ids.count(bos)
        == (1 if family.name not in NO_BOS else 0) + EXTRA_BOS.get(family.name, 0)
    )
    assert ours.count(family.image_marker) == len(images) > 0  # every image where the official text has it


# Qwen2's tokenizers have no BOS; Idefics3's wrapper renders the template's <|begin_of_text|> and its processor adds
# the tokenizer's: two, as the official run had. Qwen3-VL, InternVL3.5 and MiniCPM-V 4.5 are Qwen tokenizers; GLM's
# prompt starts with the template's [gMASK]<sop>; Kimi-VL's template writes none (what its own tokenizer adds is read
# from the checkpoint at run time: the stand-in adds none).
NO_BOS = {
    "qwen2-vl",
    "internvl3",
    "ovis2",
    *(f.name for f in current_families.FAMILIES if f.name != "gemma3n"),
}
EXTRA_BOS = {"idefics3": 1, "pixtral": 1}
