"""A request's processor settings applied when the processor is loaded, as the official wrappers applied them
(`harness.models.shared.processor_settings`; issue 51, item 1), with transformers' real processor classes."""

from __future__ import annotations

import pytest
from PIL import Image

from harness.models.shared.hf_counting import ProcessorCount
from harness.models.shared.processor_settings import SettledProcessors, grid_within, split_settings
from tests.support import family_processors
from tests.support.tiny_vlm_processors import ONEVISION_PINPOINTS, llava_onevision

TEXT = "User:<image><image>What?<end_of_utterance>\nAssistant:"
IMAGES = [Image.new("RGB", (60, 40), (200, 10, 10)), Image.new("RGB", (30, 50), (0, 100, 10))]


def image_tokens_and_crops(processor, **call) -> tuple[int, int]:
    out = processor(text=[TEXT], images=[IMAGES], return_tensors="pt", **call)
    return int((out["input_ids"] == processor.image_token_id).sum()), out["pixel_values"].shape[1]


def test_idefics2_reads_image_splitting_from_its_image_processor_so_a_call_time_setting_breaks_the_text() -> None:
    """Why the setting must be applied at load: given with the call, the pixels follow it and the text does not
    (640 image tokens for two images' 2 crops, where each crop is 64)."""
    processor = family_processors.idefics2()
    assert image_tokens_and_crops(processor, do_image_splitting=False) == (640, 2)


def test_a_setting_applied_at_load_makes_the_text_and_the_pixels_agree() -> None:
    count = ProcessorCount(family_processors.idefics2(), None, name="idefics2", settings_at_load=True)
    settled = count.settle({"do_image_splitting": False})
    assert settled.at_load == {"do_image_splitting": False} and settled.call == {}
    tokens, crops = image_tokens_and_crops(settled.processor, **settled.call)
    assert (tokens, crops) == (2 * 64, 2)
    # the processor as loaded is untouched: another task's requests still split their images
    assert image_tokens_and_crops(count.settle({}).processor) == (10 * 64, 10)
    assert count.processor.image_processor.do_image_splitting is True


def test_vllm_counting_keeps_the_settings_for_the_call() -> None:
    """vLLM's engine passes a request's settings with the processor call; its count does the same."""
    count = ProcessorCount(family_processors.idefics2(), None, name="idefics2")
    settled = count.settle({"do_image_splitting": False})
    assert settled.processor is count.processor and settled.call == {"do_image_splitting": False}


def test_settings_no_image_processor_holds_stay_for_the_call() -> None:
    processor = family_processors.internvl3()
    at_load, call = split_settings(processor, {"max_patches": 4, "crop_to_patches": True, "image_detail": "low"})
    assert at_load == {"max_patches": 4, "crop_to_patches": True} and call == {"image_detail": "low"}


def test_one_processor_per_distinct_setting_is_made_and_kept() -> None:
    settled = SettledProcessors(family_processors.idefics3())
    first = settled({"do_image_splitting": False, "do_resize": False}).processor
    assert settled({"do_resize": False, "do_image_splitting": False}).processor is first
    assert settled({"do_resize": False}).processor is not first
    assert settled({}).processor is settled.base and settled.made == 2
    # a setting that is a list (AnyRes pinpoints) keys its processor too
    onevision = SettledProcessors(llava_onevision())
    made = onevision({"image_grid_pinpoints": [[384, 384], [384, 768]]}).processor
    assert onevision({"image_grid_pinpoints": [[384, 384], [384, 768]]}).processor is made
    assert made.image_processor.image_grid_pinpoints == [[384, 384], [384, 768]]


def test_grid_within_keeps_the_pinpoints_the_official_onevision_wrapper_keeps() -> None:
    """vlm_model/llava_onevision.py:44-49: `[[w, h] for w, h in pinpoints if (w // 384) * (h // 384) <= 4]`."""
    kept = grid_within(llava_onevision(), 4).image_processor.image_grid_pinpoints
    assert kept == [[w, h] for w, h in ONEVISION_PINPOINTS if (w // 384) * (h // 384) <= 4]
    assert len(kept) == 8 and max((w // 384) * (h // 384) for w, h in kept) == 4
    with pytest.raises(ValueError, match="none of the processor's grid pinpoints"):
        grid_within(llava_onevision(), 0)


def test_a_request_is_counted_with_the_processor_its_settings_make() -> None:
    """The same row under two tasks' settings is two counts (the count kept per request notes its settings)."""
    from dataclasses import replace
    from types import SimpleNamespace

    from tests.support.model_requests import encode_image, make_request

    # The family is found by the checkpoint's config, as a loaded Idefics2 checkpoint's says
    config = SimpleNamespace(model_type="idefics2", architectures=["Idefics2ForConditionalGeneration"])
    count = ProcessorCount(family_processors.idefics2(), config, name="idefics2", settings_at_load=True)
    request = make_request("s", ["Look:", encode_image((1, 2, 3), (60, 40), "PNG"), "What?"])
    split = count.prompt_tokens(request)
    whole = count.prompt_tokens(replace(request, processor_kwargs=(("do_image_splitting", False),)))
    assert split - whole == 4 * (64 + 1)  # four crops of 64 tokens and a marker each fewer


def test_gemma3_s_pan_and_scan_crops_are_measured_where_its_size_count_misses_them() -> None:
    """Gemma 3's `_get_num_multimodal_tokens` counts an image as one under `do_pan_and_scan` ("no image cropping
    supported yet"), where its call adds each crop and a sentence around them: the count measures each image, as the
    processor's call makes it, and says it is an estimate."""
    from dataclasses import replace

    from tests.support.model_requests import encode_image, make_request

    sizes = [(1000, 700), (256, 256), (1920, 300)]
    parts = ["Look:", *(encode_image((1, 2, 3), size, "PNG") for size in sizes), "What?"]
    request = make_request("s", parts)
    count = ProcessorCount(family_processors.gemma3(), None, name="gemma3")
    panned = replace(request, processor_kwargs=(("do_pan_and_scan", True),))
    images = [Image.new("RGB", size) for size in sizes]
    sent = count.processor(text=[count.render(panned)], images=[images], do_pan_and_scan=True)["input_ids"][0]
    assert count.prompt_tokens(panned) == len(sent) > count.prompt_tokens(request) + 2 * 3 * 256
    assert not count.exact(panned) and count.exact(request)


@pytest.mark.parametrize(
    ("make", "settings"), [("internvl3", {"max_patches": 2}), ("idefics3", {"do_image_splitting": False})]
)
def test_a_request_s_settings_do_not_stay_for_later_counts(make: str, settings: dict[str, object]) -> None:
    """transformers writes the settings of a `_get_num_multimodal_tokens` call into its class's defaults, where every
    later count in the process took them (`hf_expansion.size_count` puts them back): a count with them is another."""
    from dataclasses import replace

    from tests.support.model_requests import encode_image, make_request

    count = ProcessorCount(getattr(family_processors, make)(), None, name=make)  # vLLM's: settings with the call
    request = make_request("s", ["Look:", encode_image((1, 2, 3), (1000, 700), "PNG"), "What?"])
    before = count.image_tokens(request)
    assert count.image_tokens(replace(request, processor_kwargs=tuple(settings.items()))) != before
    assert count.image_tokens(request) == before
    fresh = ProcessorCount(getattr(family_processors, make)(), None, name=make)
    assert fresh.image_tokens(request) == before
