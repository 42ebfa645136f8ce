"""The toy model family, a whole family module: a made-up vision API, "ToyVision", that counts 100 tokens an image,
and the prompt format its official wrapper sent to an `hf` checkpoint, a bundled template.
docs/ADDING_A_MODEL_FAMILY.md shows this file, and `test_adding_a_model_family.py` adds it to a copy of the project as
`harness/models/families/toy.py`, with `toy_chat.jinja` beside it and one line in `harness/models/families/__init__.py`."""

from __future__ import annotations

from harness.models.facts.alias import Alias, hf
from harness.models.facts.family import ImageTokens, ModelFamily, fixed, template
from harness.models.facts.prompt_style import PromptStyle

FAMILY = ModelFamily(
    "ToyVision",
    variants=(
        ImageTokens(
            "ToyVision",
            fixed(100),  # (width, height, processor settings) -> the tokens of one image
            "100 tokens per image",  # printed beside every estimate made with it
            model_types=("toyvision",),  # a checkpoint's config.json model_type (`architectures=`: its classes)
            fragments=("toyvision",),  # an API model's name holds it (there is no config to read)
        ),
    ),
    # How its official wrapper built the chat: one string, each image as <image> in place, no prefill, with the
    # conversation it rendered (toy_chat.jinja, beside this module).
    styles=(
        PromptStyle(
            "toy_chat",
            content="string",
            prefill=False,
            chat_template="toy_chat",
            template_text=template(__file__, "toy_chat"),
        ),
    ),
    aliases={
        "toyvision": Alias("openai", {"model": "toyvision-1"}, "ToyVision 1 through an OpenAI-compatible server", 8192),
        "toy-llava": hf("toy/llava-toy", "a LLaVA checkpoint with the toy format", 4096, prompt_style="toy_chat"),
    },
)
