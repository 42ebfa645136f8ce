"""The request the `sglang` backend builds, checked against SGLang 0.5.23's own code: the batch `Engine.generate` is
called with, bound to `Engine.generate`'s signature and normalised by SGLang's `GenerateReqInput` as its tokenizer
manager normalises it (several images a prompt, a prompt without any); and each prompt, rendered by the checkpoint's
chat template, against the prompt SGLang's own chat path renders for the same conversation (its template content
format and its conversion of OpenAI parts), with its images in the same order."""

from __future__ import annotations

import base64
import json

import pytest

from harness.api import GenerationSettings
from tests.support.model_requests import encode_image, image_ref, make_request
from tests.support.paths import PROJECT
from tests.support.sglang_classes import run_with_classes

pytest.importorskip("sglang.srt.server_args", reason="SGLang's classes (make test installs them)")

# In a process of its own (tests/support/sglang_classes.py): the batch the backend builds for three requests (two
# images, none, one), bound to Engine.generate and normalised by GenerateReqInput.
NORMALISED = """
import inspect, json
from PIL import Image
from harness.api import GenerationSettings
from harness.models.backends.sglang_engine.requests import EngineItem, generate_batch, sampling_params
from sglang.srt.entrypoints.engine import Engine
from sglang.srt.managers.io_struct import GenerateReqInput

images = [Image.new("RGB", (4 + i, 4), (i, 0, 0)) for i in range(3)]
items = [EngineItem(text, (), sampling_params(GenerationSettings(max_gen_toks=8), {"top_k": 5}))
         for text in ("two <image> images <image>", "no image", "one <image>")]
batch = generate_batch(items, [images[:2], [], images[2:]])
inspect.signature(Engine.generate).bind(None, **batch)  # every keyword is one of Engine.generate's
request = GenerateReqInput(text=batch["prompt"], image_data=batch["image_data"], sampling_params=batch["sampling_params"])
request.normalize_batch_and_arguments()
# a first prompt without images given as None, not []: SGLang reads the batch by its first entry
misread = GenerateReqInput(text=batch["prompt"], image_data=[None, *batch["image_data"][1:]], sampling_params=batch["sampling_params"])
misread.normalize_batch_and_arguments()
print(json.dumps({
    "batch_size": request.batch_size,
    "images": [[image.size[0] for image in each] if each else each for each in request.image_data],
    "modalities": request.modalities,
    "sampling": request.sampling_params,
    "texts": request.text,
    "first_request": [image.size[0] for image in request[0].image_data],
    "misread": [len(each) if isinstance(each, list) else each for each in misread.image_data],
}))
"""


@pytest.mark.slow  # a process importing SGLang's engine module (about a minute here)
def test_the_generate_batch_is_what_sglangs_engine_takes_and_normalises():
    seen = run_with_classes(NORMALISED, cwd=PROJECT)
    assert isinstance(seen, dict)
    assert seen["batch_size"] == 3 and seen["texts"] == ["two <image> images <image>", "no image", "one <image>"]
    assert seen["images"] == [[4, 5], [], [6]]  # each prompt's own images, in order
    assert seen["modalities"] == ["multi-images", None, "image"]
    assert seen["first_request"] == [4, 5]
    assert seen["sampling"][0] == {
        "top_k": 5,
        "max_new_tokens": 8,
        "temperature": 0.0,
        "top_p": 1.0,
        "stop": [],
        "n": 1,
    }
    # why an empty list, never None: with None first, SGLang wraps each prompt's list as one image
    assert seen["misread"] == [1, 1, 1]


def test_a_prompt_is_what_sglangs_own_chat_path_renders_with_its_images_in_order(tiny_llava_336):
    """SGLang's OpenAI chat path (`serving_chat`) reads the template's content format, turns each OpenAI part into
    what the template takes (an image part into `{"type": "image"}`, its data into `image_data`, in order), and renders
    it with the checkpoint's template; the backend's prompt for the same conversation is that text, and its images go
    in the same order."""
    from sglang.srt.parser.jinja_template_utils import (
        detect_jinja_template_content_format,
        process_content_for_template_format,
    )
    from transformers import AutoProcessor

    from tests.support.fake_sglang import fake_model

    red, blue = encode_image((255, 0, 0), (40, 30), "PNG"), encode_image((0, 0, 255), (20, 20), "PNG")
    parts = ["Which colour comes first?", red, "and then", blue, "Answer in one word."]
    request = make_request("a", parts, settings=GenerationSettings(max_gen_toks=4))
    model = fake_model(pretrained=str(tiny_llava_336), context_length="4096")
    sent = model.render(request)

    processor = AutoProcessor.from_pretrained(tiny_llava_336)
    content = [
        {"type": "text", "text": part}
        if isinstance(part, str)
        else {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(part).decode()}}
        for part in parts
    ]
    image_data: list = []
    message = process_content_for_template_format(
        {"role": "user", "content": content},
        detect_jinja_template_content_format(processor.chat_template),
        image_data,
        [],
        [],
        [],
    )
    rendered = processor.apply_chat_template([message], tokenize=False, add_generation_prompt=True)
    assert sent.text == rendered and rendered.count(processor.image_token) == 2
    order = [base64.b64decode(image.url.split(",", 1)[1]) for image in image_data]
    assert [image.sha256 for image in sent.images] == [image_ref(data).sha256 for data in order]
    assert json.loads(json.dumps([i.size for i in sent.images])) == [[40, 30], [20, 20]]
