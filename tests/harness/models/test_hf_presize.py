"""Images scaled to the processor's size before the processor (`harness.models.backends.hf.presize`), in the `hf` backend's
image threads: the processor's output, and so every answer, is the same as when it is given the decoded image. The
rule is that of transformers' PIL image processors (`processor=pil`; with torchvision installed, transformers picks
its torchvision ones, which are given their images untouched)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image


def _noise(width: int, height: int, seed: int) -> Image.Image:
    pixels = np.random.default_rng(seed).integers(0, 256, size=(height, width, 3), dtype=np.uint8)
    return Image.fromarray(pixels, "RGB")


def _same(a, b) -> bool:
    import torch

    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_images_scaled_first_give_the_processor_the_same_output(tiny_llava: Path) -> None:
    from transformers import AutoProcessor

    from harness.models.backends.hf.presize import ProcessorScale

    processor = AutoProcessor.from_pretrained(
        tiny_llava, backend="pil"
    )  # CLIP's: shortest edge 28, bicubic, then a 28 px crop
    scale = ProcessorScale(processor)
    images = [_noise(512, 512, 0), _noise(300, 200, 1), _noise(200, 301, 2), _noise(512, 512, 3), _noise(20, 10, 4)]
    scaled = [scale(image) for image in images]
    assert [image.size for image in scaled] == [(28, 28), (42, 28), (28, 42), (28, 28), (20, 10)]
    assert scaled[4] is images[4]  # never scaled up: that is left to the processor
    assert scale.proofs == 3  # once per input size
    text = [processor.image_token * 2, processor.image_token * 3]

    def output(batch: list[Image.Image]):
        return processor(text=text, images=[batch[:2], batch[2:]], padding=True, return_tensors="pt")

    assert _same(output(images), output(scaled))


def test_a_processor_argument_that_changes_its_scaling_stops_scaling_first(tiny_llava: Path) -> None:
    from transformers import AutoProcessor

    from harness.models.backends.hf.presize import ProcessorScale

    processor = AutoProcessor.from_pretrained(tiny_llava, backend="pil")
    scale = ProcessorScale(processor)
    image = _noise(512, 384, 0)
    bilinear = (("resample", int(Image.Resampling.BILINEAR)),)  # the processor's own resize is then not the rule's
    assert scale(image, bilinear) is image
    assert scale.rule is None and scale.proofs == 1
    assert scale(_noise(300, 300, 1)).size == (300, 300) and scale.proofs == 1  # nothing scaled, or proved, again


def test_processors_without_the_rule_are_left_alone(tiny_llava: Path) -> None:
    from transformers import AutoProcessor

    from harness.models.backends.hf.presize import ProcessorScale, scale_rule, target_size

    processor = AutoProcessor.from_pretrained(tiny_llava, backend="pil")
    assert scale_rule(processor.image_processor) == (28, None, int(Image.Resampling.BICUBIC))
    assert target_size((28, None, 3), 640, 480) == (37, 28) and target_size((None, (24, 32), 3), 640, 480) == (32, 24)
    processor.image_processor.do_resize = False
    assert ProcessorScale(processor).rule is None
    processor.image_processor.do_resize = True
    processor.image_processor.size = {"longest_edge": 40, "shortest_edge": 28}  # not a rule this module knows
    assert ProcessorScale(processor).rule is None


@pytest.mark.slow  # a tiny LLaVA generates twice
def test_scaling_first_and_image_threads_change_no_answer(data_dir: Path, tiny_llava: Path) -> None:
    from harness.config.task_index import TaskIndex
    from harness.models.backends.hf.model import HFModel
    from harness.run.process_exit import waits_on_something
    from harness.running.task.task import Task

    task = Task(TaskIndex().tasks["mmneedle_m10_n1_k2_pos"])
    task.load(data_dir, 3)
    settings = task.generation_settings({"max_gen_toks": 6}, 0)
    requests = [task.build_request(i, task.doc(i), settings) for i in range(3)]
    answers = {}
    for threads, scale_first in ((1, False), (3, True)):
        model = HFModel.from_args(
            {"pretrained": str(tiny_llava), "processor": "pil", "threads": "1", "image_threads": str(threads)}
        )
        if not scale_first:
            model.scale_first.rule = None
        answers[threads] = [(r.text, r.error, r.usage) for r in model.generate(requests)]
        proofs = model.scale_first.proofs
        assert waits_on_something() == (threads > 1)  # the image threads, alive while the model is
        model.close()
        # and gone once it is closed: the `harness` command then ends without the interpreter's teardown
        # (`harness.run.process_exit`), not the normal, slower exit that would wait for them.
        assert not waits_on_something()
    assert proofs == 1  # MMNeedle's images are all one size
    assert answers[1] == answers[3] and all(error is None for _, error, _ in answers[1])
