"""`hf`'s `processor=image_only`: a Qwen2.5-VL checkpoint (`scripts/make_tiny_qwen.py`) run with Qwen's processor
class and its image processor on the PIL backend, without the video processor that needs torchvision."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.support.hf_runs import hf_run
from tests.support.paths import PROJECT

pytestmark = pytest.mark.slow  # a tiny Qwen2.5-VL is written and generates

TASK = "mmneedle_m1_n2_k1_pos"


@pytest.fixture(scope="module")
def tiny_qwen(tmp_path_factory: pytest.TempPathFactory) -> Path:
    spec = importlib.util.spec_from_file_location("make_tiny_qwen", PROJECT / "scripts" / "make_tiny_qwen.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_tiny_qwen(tmp_path_factory.mktemp("tiny-qwen"), context=8192)


def qwen_image_tokens(width: int, height: int) -> int:
    """Qwen2-VL's smart resize at its default pixel limits, then 28 x 28 px per token (14-px patches, 2x2 merge)."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

    h, w = smart_resize(height, width, factor=28, min_pixels=56 * 56, max_pixels=28 * 28 * 1280)
    return (h // 28) * (w // 28)


def test_qwen_runs_without_a_video_processor_and_counts_as_it_sends(tiny_qwen: Path, data_dir: Path) -> None:
    from harness.config.task_index import TaskIndex
    from harness.models.backends.hf.model import HFModel
    from harness.running.task.task import Task

    task = Task(TaskIndex().tasks[TASK])
    task.load(data_dir, 2)
    settings = task.generation_settings({"max_gen_toks": 4}, 0)
    requests = [task.build_request(i, task.doc(i), settings) for i in range(2)]
    model = HFModel.from_args({"pretrained": str(tiny_qwen), "threads": "1", "processor": "image_only"})
    assert type(model.processor).__name__ == "Qwen2_5_VLProcessorImageOnly"
    assert type(model.processor.image_processor).__name__ == "Qwen2VLImageProcessorPil"
    assert model.count.counts_images  # each image counted from its size, as the processor expands it
    assert model.scale_first.rule is None  # Qwen's pixel bounds: its images reach its processor as decoded
    image_pad = model.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    for request in requests:
        pil = model._images(request)
        inputs = model.processor(text=[model._prompt(request)], images=pil, return_tensors="pt")
        ids = inputs["input_ids"][0].tolist()
        assert ids.count(image_pad) == sum(qwen_image_tokens(*image.size) for image in pil)
        assert model.prompt_tokens(request) == len(ids)  # the screen's count is what the run sends
    responses = model.generate(requests)
    model.close()
    assert all(r.ok and 0 < r.usage["completion_tokens"] <= 4 for r in responses), responses


def test_the_screen_counts_with_the_same_processor(tiny_qwen: Path, data_dir: Path, harness) -> None:
    run = harness(
        *hf_run(TASK, data_dir, f"pretrained={tiny_qwen}", "processor=image_only"), "--limit", "2", "--screen_only"
    )
    assert run.code == 0, run.err
    assert "Qwen2_5_VLProcessorImageOnly: the chat template's tokens, each image as the processor expands it" in run.out


def test_a_processor_of_another_layout_is_refused_by_name() -> None:
    from transformers import LlavaProcessor

    from harness.models.shared.hf_image_only import without_video

    with pytest.raises(ValueError, match="LlavaProcessor takes .* only a Qwen2-VL-style processor"):
        without_video(LlavaProcessor)


def test_an_unknown_processor_choice_is_a_clear_error() -> None:
    from harness.models.backends.hf.settings import HFSettings
    from harness.models.facts.args import settings_from_args

    with pytest.raises(ValueError, match="processor='video': expected auto, pil or image_only"):
        settings_from_args(HFSettings, {"pretrained": "x", "processor": "video"}, "hf")
