"""A forward pass per family through the `hf` backend (issue 51): a tiny random model of each family that runs on
this CPU, with its real processor class and published template, is sent a request as a run sends it, and the image
tokens in the text must equal the image features the pixels make (`tests.support.forward_pass`). The families that
cannot run here are in one table with the reason, which docs/backends.md shows.

Phase 2 of issue 51 calls `forward_pass` for every input rule of every alias at every length; the calls below are
the families' defaults, the rules found broken (Idefics2 at 64K/128K) and the settings the official wrappers gave at
load (LLaVA-OneVision's pinpoints, Mantis's unsplit images).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness.api import Request
from harness.config.task_index import TaskIndex
from harness.inputs.input_policy import apply_policy
from harness.models.aliases import alias_policy, resolve, task_benchmarks
from harness.running.task import Task
from tests.support.forward_families import FAMILIES, RUNNING
from tests.support.forward_pass import forward_pass
from tests.support.model_requests import encode_image, make_request
from tests.support.paths import PROJECT

IMAGES = [encode_image((200, 10, 10), (300, 200), "PNG"), encode_image((0, 100, 10), (120, 500), "PNG")]
# The backend's count before sending differs from the input ids it sends where it says it is exact (issue 51,
# phase 2 mends the counts): Gemma 3's processor counts 256 tokens an image and sends the "\n\n" and <end_of_image>
# around them too; PaliGemma's adds the BOS and the newline after the text; LLaVA-OneVision's counts each image of a
# several-image prompt as AnyRes tiles, where the processor sends its base features only (730 an image).
COUNT_SHORT = {
    "gemma3": "Gemma3Processor._get_num_multimodal_tokens counts 256 an image, not the markers around them",
    "paligemma": "PaliGemmaProcessor adds a BOS and a newline the count does not see",
    "llava-onevision": "LlavaOnevisionProcessor._get_num_multimodal_tokens counts AnyRes tiles for a several-image "
    "prompt, which the processor sends as base features",
}


def two_image_request(name: str) -> Request:
    images = IMAGES[:1] if name == "paligemma" else IMAGES  # PaliGemma: one image, its images before the text
    return make_request("s", ["Look: ", *images, " What is shown?"])


@pytest.mark.parametrize("name", [family.name for family in RUNNING])
def test_each_family_s_image_tokens_are_its_image_features(name: str) -> None:
    result = forward_pass(name, two_image_request(name))
    assert result.error is None and result.answer is not None
    assert result.image_tokens == result.image_features > 0


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(f.name, marks=pytest.mark.xfail(strict=True, reason=COUNT_SHORT[f.name]))
        if f.name in COUNT_SHORT
        else f.name
        for f in RUNNING
    ],
)
def test_the_backend_counts_what_it_sends_where_it_says_its_count_is_exact(name: str) -> None:
    result = forward_pass(name, two_image_request(name))
    if result.exact:
        assert result.counted == result.prompt_tokens
    else:  # a family's estimate, labelled as one
        assert result.counted > 0


@pytest.fixture(scope="module")
def mmlb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from builders.mmlongbench.build import build_mmlongbench

    root = tmp_path_factory.mktemp("forward-mmlb")
    build_mmlongbench(source="fixture", out_dir=root, configs=["niah_vh_single_8k", "niah_vh_single_64k"])
    return root


def alias_request(alias: str, task_name: str, data: Path) -> tuple[Request, dict[str, str]]:
    """The first row of a task as the runner sends it to an alias: the alias's input policy applied; with the
    alias's `--model_args` for that task."""
    task = Task(TaskIndex().tasks[task_name])
    task.load(data, 1)
    doc_id, doc = next(task.iter_docs())
    request = task.build_request(doc_id, doc, task.generation_settings({}))
    _, args, _ = resolve(alias, {}, task_benchmarks([task_name]))
    return apply_policy(request, alias_policy(alias, task_name)), args


@pytest.mark.parametrize("length", ["8k", "64k"])
@pytest.mark.parametrize("alias", ["idefics2", "idefics2-chatty"])
def test_idefics2_reaches_generation_at_every_length_of_its_rules(alias: str, length: str, mmlb: Path) -> None:
    """Issue 51, item 1: at 64K/128K the run script turns image splitting off on VH; given with the processor call,
    the text held 5x the image tokens of the pixels and generate raised. Applied at load, the row reaches generation."""
    request, args = alias_request(alias, f"mmlongbench_niah_vh_single_{length}", mmlb)
    splits = length == "8k"
    assert dict(request.processor_kwargs) == ({} if splits else {"do_image_splitting": False})
    result = forward_pass("idefics2", request, prompt_style=args["prompt_style"])
    assert result.error is None and result.answer is not None
    crops = 5 if splits else 1
    assert result.image_tokens == result.image_features == crops * 64 * request.num_images


def test_mantis_s_checkpoint_setting_is_read_by_the_text_and_by_its_estimate() -> None:
    result = forward_pass("mantis-idefics2", two_image_request("mantis-idefics2"), prompt_style="idefics")
    assert result.image_tokens == result.image_features == 2 * 64
    assert not result.exact and abs(result.counted - result.prompt_tokens) <= 2  # the family's rule, unsplit


def test_onevision_pinpoints_kept_to_four_tiles_in_the_processor_and_the_model() -> None:
    """Issue 51, item 3: `max_grid_tiles=4` keeps the pinpoints the official wrapper keeps, and gives the model's
    config the same list; a single large image then makes the tokens of a 2x2 grid, and its features."""
    big = make_request("s", ["Look: ", encode_image((9, 9, 9), (1500, 1500), "PNG"), " What?"])
    whole, kept = forward_pass("llava-onevision", big), forward_pass("llava-onevision", big, max_grid_tiles="4")
    assert whole.image_tokens == whole.image_features and kept.image_tokens == kept.image_features
    assert kept.image_tokens < whole.image_tokens
    assert kept.counted == kept.prompt_tokens  # the screen counts with the kept pinpoints too


def test_onevision_pinpoints_kept_in_the_processor_alone_break_a_single_image() -> None:
    """Why the model's config gets the kept pinpoints too: the official wrapper set them on its processor only, and
    the model (its config's whole grid) then splits the image's tiles by another grid than the processor made."""
    big = make_request("s", ["Look: ", encode_image((9, 9, 9), (1500, 1500), "PNG"), " What?"])
    kept = [[h, w] for h, w in [[384 * r, 384 * c] for r in range(1, 7) for c in range(1, 7)] if h * w <= 4 * 384**2]
    with pytest.raises((RuntimeError, ValueError)):
        forward_pass("llava-onevision", replace(big, processor_kwargs=(("image_grid_pinpoints", kept),)))


def test_the_docs_show_the_families_table() -> None:
    """docs/backends.md lists every family with its classes and whether it runs here, and the reason where not."""
    text = (PROJECT / "docs" / "backends.md").read_text()
    for family in FAMILIES:
        row = next((line for line in text.splitlines() if line.startswith(f"| {family.name} |")), None)
        assert row is not None, f"docs/backends.md has no row for {family.name}"
        assert (family.reason or "runs here") in row
